// ServingLoop: the one event loop of every simulated deployment. It owns the clock, the event
// queue, the workload (open-loop arrivals pulled one at a time, follow-ups queued as requests
// end) and pools of InstanceCores (sim/instance/instance_core.h), and it runs each instance's
// step cycle: schedule → step end → continue (async) → schedule.
//
// A deployment says what a request does between instances; the loop does the rest:
//   a colocated engine (sim/engine.h)   one pool: one instance, or N data-parallel ranks
//                                       behind vLLM's DP load balancer;
//   a P/D cluster (sim/cluster/)        a prefill pool and a decode pool, a router in front
//                                       of each, and a transfer network between them (an
//                                       external clock the loop advances with its own).
// A pool's instances step independently, or in lock-step (DP ranks of an MoE model, as vLLM's
// DPEngineCoreProc: every rank decides at the same tick, a rank with nothing to run runs a
// one-token dummy batch, each rank's experts see every rank's tokens, and the step ends when
// the slowest rank's does).
//
// Events (sim/event.h): kArrival carries a request id; kSchedule and kStepEnd carry an
// instance, or a lock-step pool; kKvReady and kWireStart carry a request id and belong to the
// deployment. Everything is deterministic for a scenario and seed.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/event.h"
#include "sim/event_queue.h"
#include "sim/instance/dp_balancer.h"
#include "sim/instance/instance_core.h"
#include "sim/metrics.h"
#include "sim/workload/i_workload.h"

namespace kvsim {

// A request on an instance, as that instance's scheduler sees it (its SimRequest base) plus
// what the loop and its deployment keep beside it: the spec (owned by the loop while the
// request is in flight), where it runs and when its last token was seen. A P/D request has
// one on its prefill instance and one on its decode instance.
struct LiveRequest : SimRequest {
  const RequestSpec* spec = nullptr;
  int instance = 0;
  Tick last_emit = -1;
};
inline LiveRequest& LiveOf(SimRequest& r) { return static_cast<LiveRequest&>(r); }

// What the loop holds for requests, now and at most during the run: requests that have
// entered (waiting, running or between instances), requests announced but not arrived (the
// next open-loop arrival, follow-ups in their think time), and the bytes of their specs. None
// of it grows with the workload's size, only with what is in flight (tests bound it).
struct RequestFootprint {
  int64_t live_max = 0;
  int64_t pending = 0, pending_max = 0;
  int64_t spec_bytes = 0, spec_bytes_max = 0;
};

// A clock beside the event queue (a P/D cluster's flow network): the loop advances it with
// its own and lets it fire before the events of the same tick.
class ExternalClock {
 public:
  virtual ~ExternalClock() = default;
  virtual std::optional<Tick> NextCompletion() const = 0;
  virtual void AdvanceTo(Tick now) = 0;
  // Everything that completes at the current tick.
  virtual void Fire() = 0;
};

// What a deployment decides; the loop calls it with the instance's global index.
class Deployment {
 public:
  virtual ~Deployment() = default;
  // Request `id` (its spec: loop.spec(id)) reaches the deployment: admit it to an instance
  // (LoopAdd) or end it as rejected (ServingLoop::End).
  virtual void Arrived(RequestId id) = 0;
  // Observer calls of instance `i` (InstanceObserver's meaning). The loop has pushed the
  // output token ids before Emitted.
  virtual void Preempted(int i, SimRequest& r, Tick now) = 0;
  virtual void ConnectorAdmitted(int i, const ConnectorAdmission& a, Tick now) = 0;
  virtual void StepLaunched(int i, const StepPlan& step, Tick start, Tick end) = 0;
  virtual void Emitted(int i, LiveRequest& r, Tick seen) = 0;
  virtual void StepEnded(int i, Tick start, Tick now, const EngineInstance& inst, int64_t drafts,
                         int64_t accepted) = 0;
  // Instance i's step ended (InstanceCore::EndStep): `finished` are the requests that finished
  // in it. Before the instance continues or decides again.
  virtual void StepOutputs(int i, const std::vector<SimRequest*>& finished) = 0;
  // Instance i's scheduler dropped the head of its queue: it can never run.
  virtual void Dropped(int i, SimRequest* head) = 0;
  // A deployment's own request event (kKvReady, kWireStart) fired.
  virtual void RequestEvent(EventKind kind, RequestId id) = 0;
};

// The loop's stop time for a run limited to `max_sim_seconds` of simulated time (0 or less:
// none, -1).
inline Tick StopTick(double max_sim_seconds) {
  return max_sim_seconds > 0 ? static_cast<Tick>(max_sim_seconds * kTicksPerSecond) : -1;
}

class ServingLoop {
 public:
  ServingLoop(std::unique_ptr<IWorkload> workload, Tick stop_at);
  ~ServingLoop();
  ServingLoop(const ServingLoop&) = delete;
  ServingLoop& operator=(const ServingLoop&) = delete;

  // Adds a pool of instances, one per config; their global indices follow the pools' order.
  // `tag(k)` names member k in step-log records (empty: none). A lock-step pool steps as one
  // (see above); a pool of more than one instance routes with vLLM's DP load balancer
  // (published counts every `publish_interval`, 0 = its own assignments only). Returns the
  // pool's index.
  int AddPool(std::vector<InstanceConfig> configs, std::vector<std::string> tags, bool lock_step,
              Tick publish_interval);
  void SetDeployment(Deployment* d) { deployment_ = d; }
  void SetExternalClock(ExternalClock* c) { external_ = c; }
  void SetStepLog(const StepRecordSink* sink);

  // Runs until the workload is drained or the stop time.
  void Run();

  // For the deployment.
  Tick now() const { return now_; }
  IWorkload& workload() { return *workload_; }
  const RequestSpec& spec(RequestId id) const { return specs_.at(id); }
  // The prompt of `spec`, built into a buffer valid until the next call (specs keep
  // recipes; ids exist only while a router or a KV manager reads them).
  const std::vector<TokenId>& PromptOf(const RequestSpec& spec);
  // Request `id` is over (finished with `output_tokens`, or rejected with 0): the workload
  // hears it and may queue follow-ups, and the spec is dropped.
  void End(RequestId id, int64_t output_tokens);
  // A deployment's request event at `t`.
  void PushRequestEvent(Tick t, EventKind kind, RequestId id);
  // Instance i should decide (now, or when its step in flight ends).
  void RequestSchedule(int i);
  // The member of pool p that vLLM's DP load balancer gives the next request (0 for a pool
  // of one), as a global index.
  int PickInstance(int pool);

  int num_instances() const { return static_cast<int>(members_.size()); }
  int num_pools() const { return static_cast<int>(pools_.size()); }
  int pool_first(int pool) const { return pools_[static_cast<size_t>(pool)].first; }
  int pool_size(int pool) const { return pools_[static_cast<size_t>(pool)].count; }
  InstanceCore& core(int i) { return members_[static_cast<size_t>(i)]->core; }
  const InstanceCore& core(int i) const { return members_[static_cast<size_t>(i)]->core; }
  const RequestFootprint& footprint() const { return footprint_; }
  // Request `r` joins instance i (EngineInstance::Admit in its role; counted in its
  // usage().requests). The loop samples each instance's KV usage at its step ends
  // (InstanceUsage, sim/metrics.h).
  void Admit(int i, LiveRequest* r, const std::vector<TokenId>& prompt);
  const InstanceUsage& usage(int i) const { return members_[static_cast<size_t>(i)]->usage; }
  const std::string& tag(int i) const { return tags_[static_cast<size_t>(i)]; }
  // Whether a prompt of `n` tokens can ever run on pool p's instances (every member has the
  // same plan): at least one token, shorter than max_model_len, and no more blocks than the
  // whole cache. A request that cannot is rejected at arrival, in every deployment.
  bool PromptFits(int pool, int64_t n) const;
  // Instance i's share of the run, its KV usage mean over `span` ticks.
  InstanceSummary Summarize(int i, Tick span) const;

 private:
  // One instance of a pool and the observer through which it reports.
  struct Member final : InstanceObserver {
    Member(ServingLoop* l, int index, int pool_index, InstanceConfig config)
        : loop(l), id(index), pool(pool_index), core(std::move(config)) {}
    void Preempted(SimRequest& r, Tick now) override { loop->deployment_->Preempted(id, r, now); }
    void ConnectorAdmitted(const ConnectorAdmission& a, Tick now) override {
      loop->deployment_->ConnectorAdmitted(id, a, now);
    }
    void StepLaunched(const StepPlan& step, Tick start, Tick end) override {
      loop->deployment_->StepLaunched(id, step, start, end);
    }
    void Tokens(SimRequest& r, int64_t n, std::vector<TokenId>& tokens, Tick seen) override;
    void StepEnded(Tick start, Tick now, const EngineInstance& inst, int64_t drafts,
                   int64_t accepted) override {
      usage.Sample(now, inst.kv().usage());
      loop->deployment_->StepEnded(id, start, now, inst, drafts, accepted);
    }
    ServingLoop* loop;
    int id;
    int pool;
    InstanceCore core;
    InstanceUsage usage;
    bool schedule_pending = false;
    bool in_pool_step = false;  // lock-step: launched in the pool's step in flight
  };
  struct Pool {
    int first = 0, count = 0;
    bool lock_step = false;
    bool in_flight = false, schedule_pending = false;
    std::optional<DpLoadBalancer> balancer;
  };

  // Event payloads of kSchedule/kStepEnd: an instance's index, or a lock-step pool's with
  // the top bit set.
  static constexpr uint64_t kPoolBit = uint64_t{1} << 63;
  void PullOpenLoop();
  void Announce(RequestSpec&& spec, Tick at);
  void OnArrival(RequestId id);
  void OnSchedule(int i);
  void OnStepEnd(int i);
  void EndMemberStep(Member& m);
  void OnPoolSchedule(int p);
  void OnPoolStepEnd(int p);
  // Prices and starts the decided (or, async, the next decided) steps of `launch`, every
  // other member running a dummy batch; one kStepEnd at the slowest member's end.
  void LaunchPool(int p, const std::vector<std::pair<int, bool>>& launch);

  std::unique_ptr<IWorkload> workload_;
  Deployment* deployment_ = nullptr;
  ExternalClock* external_ = nullptr;
  std::vector<std::unique_ptr<Member>> members_;
  std::vector<Pool> pools_;
  std::vector<std::string> tags_;  // step-log tag of each member
  EventQueue queue_;
  // Specs of the requests announced and in flight. Node-based: LiveRequest::spec points into
  // it across rehashes.
  std::unordered_map<RequestId, RequestSpec> specs_;
  RequestFootprint footprint_;
  bool open_loop_done_ = false;
  std::optional<RequestId> open_loop_next_;  // the announced open-loop request
  Tick now_ = 0;
  Tick stop_at_ = -1;
  int64_t vocab_ = 0;
  std::vector<TokenId> prompt_buf_;
  std::vector<RequestSpec> follow_buf_;
  std::vector<SimRequest*> finished_buf_;
};

}  // namespace kvsim
