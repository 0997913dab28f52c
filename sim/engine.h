// Engine: one simulated vLLM deployment on one node: its data-parallel ranks (parallel.dp,
// one of them without DP), each an InstanceCore (sim/instance/instance_core.h: scheduler,
// KV cache manager, step-time model, CPU tier), driven by a workload through the event queue.
//
// Lifecycle: Create() (plan the KV cache, build the ranks and the workload; bad input comes
// back as a Status) → optional SetTrace() → Run() (until the workload is drained or
// run.max_sim_seconds) → Summary()/metrics(). An Engine runs once.
//
// Event handling (kinds and their order at equal ticks are in sim/event.h):
//   kArrival   the request goes to a rank (vLLM's DP load balancer, sim/instance/
//              dp_balancer.h) and joins its WAITING (or is rejected: prompt ≥ max_model_len,
//              or more blocks than a rank's whole cache); the next open-loop arrival is
//              pulled lazily.
//   kSchedule  when the rank has no step in flight: a decision, priced by the rank's cost
//              model → kStepEnd at now + time.
//   kStepEnd   every scheduled request whose known tokens are all computed emits tokens:
//              1 + accepted drafts (each draft accepted with spec.acceptance_rate, stopping
//              at the first rejection; rejected drafts are rolled back). Accepted tokens are
//              appended to the KV manager (so decode blocks get hashed and cached). Finished
//              requests free their blocks, the workload may add follow-ups, and the next
//              step is scheduled at the same tick.
// DP ranks of a dense model step independently. Those of an MoE model step in lock-step, as
// vLLM's DPEngineCoreProc does (the experts' collectives span the ranks): every rank decides
// at the same tick, a rank with nothing to run runs a one-token dummy batch, each rank's
// experts see every rank's tokens, and the step ends when the slowest rank's does. Then the
// events carry no rank.
// The engine is single-threaded and deterministic: all randomness comes from the scenario
// seed (workload and acceptance streams are forked from it).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/cost_model.h"
#include "core/kv_cache_manager.h"
#include "sim/event_queue.h"
#include "sim/instance/dp_balancer.h"
#include "sim/instance/engine_instance.h"
#include "sim/instance/instance_core.h"
#include "sim/instance/offload_driver.h"
#include "sim/instance/step_clock.h"
#include "sim/metrics.h"
#include "sim/scenario_config.h"
#include "sim/scheduler/scheduler.h"
#include "sim/trace_export.h"
#include "sim/workload/i_workload.h"

namespace kvsim {

// What the engine holds for requests, now and at most during the run: requests that have
// entered (waiting or running), requests announced but not arrived (the next open-loop
// arrival, follow-ups in their think time), and the bytes of their specs. None of it grows
// with the workload's size, only with what is in flight (tests bound it).
struct RequestFootprint {
  int64_t live_max = 0;
  int64_t pending = 0, pending_max = 0;
  int64_t spec_bytes = 0, spec_bytes_max = 0;
};

class Engine {
 public:
  static Result<std::unique_ptr<Engine>> Create(const Scenario& scenario);
  ~Engine();

  // Records a Chrome trace while running (not owned; must outlive Run()).
  void SetTrace(TraceRecorder* trace) { trace_ = trace; }
  // Writes one step-log record per executed step (docs/step-log.md) with its simulated start
  // and end (not owned; must outlive Run()).
  // With DP ranks each record names its rank ("dp 1"); kv() and offload() are rank 0's.
  void SetStepLog(const StepRecordSink* sink);
  void Run();

  RunSummary Summary() const;
  const Metrics& metrics() const { return metrics_; }
  // One rank's plan (every rank has the same).
  const KvCachePlan& plan() const { return core0().plan(); }
  int num_ranks() const { return static_cast<int>(ranks_.size()); }
  // Rank 0's KV cache manager (the viewer reads the pool from a step-log sink).
  const KvCacheManager& kv() const { return core0().inst().kv(); }
  // Rank 0's CPU tier driver, or null without `cache.offload`.
  const OffloadDriver* offload() const { return core0().offload(); }
  const Scenario& scenario() const { return sc_; }
  const std::string& workload_description() const { return workload_desc_; }
  const std::string& workload_note() const { return workload_note_; }
  Tick now() const { return now_; }
  const RequestFootprint& footprint() const { return footprint_; }

 private:
  // A request in the engine. The scheduler sees it as its SimRequest base, so the engine
  // gets from a scheduled request to its spec without a lookup.
  struct Live : SimRequest {
    RequestSpec spec;
    Tick last_emit = -1;
    int rank = 0;
  };
  static Live& LiveOf(SimRequest& r) { return static_cast<Live&>(r); }

  // One DP rank: its instance and the observer through which it reports to the engine.
  struct Rank final : InstanceObserver {
    Rank(Engine* e, int index, InstanceConfig config)
        : engine(e), rank(index), core(std::move(config)) {}
    void Preempted(SimRequest& r, Tick now) override { engine->OnPreempted(r, now); }
    void ConnectorAdmitted(const ConnectorAdmission& a, Tick now) override {
      engine->OnConnectorAdmitted(a, now);
    }
    void StepLaunched(const StepPlan& step, Tick start, Tick end) override {
      engine->OnStepLaunched(step, start, end);
    }
    void Tokens(SimRequest& r, int64_t n, std::vector<TokenId>& tokens, Tick seen) override {
      engine->OnTokens(r, n, tokens, seen);
    }
    void StepEnded(Tick start, Tick now, const EngineInstance&, int64_t drafts,
                   int64_t accepted) override {
      engine->OnStepEnded(start, now, drafts, accepted);
    }
    Engine* engine;
    int rank;
    InstanceCore core;
    bool schedule_pending = false;
    bool in_pool_step = false;  // lock-step: launched in the pool's step in flight
  };

  Engine(const Scenario& sc, std::vector<InstanceConfig> ranks,
         std::unique_ptr<IWorkload> workload);
  InstanceCore& core(int rank) { return ranks_[static_cast<size_t>(rank)]->core; }
  const InstanceCore& core0() const { return ranks_.front()->core; }
  void PullOpenLoop();
  void OnArrival(RequestId id);
  int PickRank(Tick now);
  void OnSchedule(int rank);
  void OnStepEnd(int rank);
  // Lock-step ranks: a decision on every rank, and the end of the pool's step.
  void OnPoolSchedule();
  void OnPoolStepEnd();
  // Prices and starts the decided (or, async, the next decided) steps of `launch`, every
  // other rank running a dummy batch; one kStepEnd at the slowest rank's end.
  void LaunchPool(const std::vector<std::pair<int, bool>>& launch);
  void EndRankStep(Rank& r);
  void RejectHead(SimRequest* head);
  void Finish(Live& l);
  void Reject(Live& l);
  // Footprint bookkeeping: a spec is announced when its arrival event is queued and released
  // when its request is over.
  void Announce(RequestSpec&& spec);
  void Release(const RequestSpec& spec);
  // Tells the workload a request is over (finished, or rejected with 0 outputs) and queues
  // the follow-up arrivals it returns.
  void EndForWorkload(const RequestSpec& spec, int64_t output_tokens);
  void RequestSchedule(int rank);

  // What the ranks report: the request records, metrics and trace.
  void OnPreempted(SimRequest& r, Tick now);
  void OnConnectorAdmitted(const ConnectorAdmission& a, Tick now);
  void OnStepLaunched(const StepPlan& step, Tick start, Tick end);
  void OnTokens(SimRequest& r, int64_t n, std::vector<TokenId>& tokens, Tick seen);
  void OnStepEnded(Tick start, Tick now, int64_t drafts, int64_t accepted);

  static constexpr uint64_t kPool = ~uint64_t{0};  // lock-step events' payload

  Scenario sc_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  bool lock_step_ = false;
  bool pool_in_flight_ = false;
  bool pool_schedule_pending_ = false;
  std::optional<DpLoadBalancer> balancer_;  // more than one rank
  EventQueue queue_;
  std::unique_ptr<IWorkload> workload_;
  std::string workload_desc_, workload_note_;
  Metrics metrics_;
  TraceRecorder* trace_ = nullptr;

  // Only the requests in flight: entered (waiting or running) and announced (arrival queued).
  std::unordered_map<RequestId, std::unique_ptr<Live>> live_;
  std::unordered_map<RequestId, RequestSpec> arriving_;  // specs of pushed arrival events
  RequestFootprint footprint_;
  std::vector<TokenId> prompt_buf_;  // the prompt being handed to the KV manager
  bool open_loop_done_ = false;
  RequestId open_loop_id_{-1};  // the announced open-loop request (its arrival pulls the next)
  Tick now_ = 0;
  Tick stop_at_ = -1;
  int64_t vocab_ = 0;
  std::vector<RequestSpec> follow_buf_;
  std::vector<SimRequest*> finished_buf_;
};

}  // namespace kvsim
