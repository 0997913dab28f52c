// InstanceCore: one vLLM instance's whole step cycle, written once for every driver.
//
// vLLM's EngineCore owns its step: schedule (with the KV connector's side of the decision),
// execute, update from the output. InstanceCore does the same for a simulated instance, on a
// clock it does not own:
//   Schedule(now)   a decision (watermark, the CPU tier's protocol, preemptions), priced by
//                   the instance's step-time model; a non-empty one starts a step and says
//                   when it ends. Async scheduling: the next step is decided at once, while
//                   this one runs (vLLM's AsyncScheduler), and launched back to back.
//   EndStep(now)    the step's outputs: drafts verified, tokens applied, the step record
//                   completed, the CPU tier told of finished requests, their blocks freed
//                   (a prefill instance holds them until a decoder has read them).
//   Continue(now)   async: launches the step decided while this one ran.
// The driver (a colocated engine, a P/D cluster, a DP pool) owns the event queue, the
// requests' specs and records, and hears about the step through an InstanceObserver.
//
// On a unit clock (InstanceConfig::unit_clock, `kvsim schedule`'s step clock,
// sim/instance/step_clock.h) the same step runs with one decision per tick and no step-time
// model: UnitStep(k) is decision k with its outputs (async: decision k, then step k - 1's
// outputs), every decision a step with a record, empty ones included; UnitIdle drains the
// step in flight and makes vLLM's flush decision before the clock jumps over an idle gap.
//
// An instance never sees the scenario: it is built from an InstanceConfig, which one builder
// (sim/instance_builder.h) makes from a scenario for every driver.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/cost_model.h"
#include "core/hardware_profile.h"
#include "core/model_spec.h"
#include "core/page_planner.h"
#include "sim/event.h"
#include "sim/instance/engine_instance.h"
#include "sim/instance/offload_driver.h"
#include "sim/instance/step_log_io.h"
#include "sim/workload/rng.h"

namespace kvsim {

// Everything one instance is made of: its KV plan and manager config, the scheduler's params,
// the step-time model's inputs, drafting, and the CPU tier.
struct InstanceConfig {
  InstanceRole role = InstanceRole::kColocated;
  KvCachePlan plan;
  KvCacheManagerConfig kv;
  SchedulerParams params;
  ModelSpec model;
  HardwareSpec hardware;
  int64_t watermark_blocks = 0;  // [latest] int(watermark · num_gpu_blocks); 0 = off
  // Speculative decoding: drafts per decode step, each accepted with acceptance_rate, drawn
  // from accept_rng (every instance its own stream).
  int64_t num_speculative_tokens = 0;
  double acceptance_rate = 0;
  Rng accept_rng{0};
  // The CPU offloading tier (nullopt = none), its host link, and one offloaded block's bytes
  // over all TP ranks (for the bytes moved).
  std::optional<OffloadConnectorConfig> offload;
  CopyLinkModel offload_link;
  int64_t offload_block_bytes = 0;
  // The step clock (UnitStep/UnitIdle): one decision per tick, no cost model, records numbered
  // by their tick; the CPU tier's copies are reported per `xfer_timing` instead of the link.
  bool unit_clock = false;
  XferTiming xfer_timing = XferTiming::kInstant;
};

// What an instance tells its driver as a step goes. Every call has the simulated time.
class InstanceObserver {
 public:
  virtual ~InstanceObserver() = default;
  // A decision preempted `r` (r.num_preemptions already counts it).
  virtual void Preempted(SimRequest& r, Tick now) = 0;
  // The CPU tier's lookup admitted a request (a.gpu_hit_tokens, a.external_hit_tokens).
  virtual void ConnectorAdmitted(const ConnectorAdmission& a, Tick now) = 0;
  // A step starts at `start` (its decision's time) and ends at `end`.
  virtual void StepLaunched(const StepPlan& step, Tick start, Tick end) = 0;
  // `r` produced `n` tokens in the step that ends now: push their ids into `tokens`; the user
  // sees them at `seen` (after the output processor). On a unit clock, `seen` is the tick of
  // the step that sampled them (their ids are 1000000 + it).
  virtual void Tokens(SimRequest& r, int64_t n, std::vector<TokenId>& tokens, Tick seen) = 0;
  // The step that started at `start` ended now; the pool is measured after its tokens were
  // applied, before finished requests free their blocks.
  virtual void StepEnded(Tick start, Tick now, const EngineInstance& inst, int64_t drafts,
                         int64_t accepted) = 0;
};

class InstanceCore {
 public:
  explicit InstanceCore(InstanceConfig config);
  InstanceCore(const InstanceCore&) = delete;
  InstanceCore& operator=(const InstanceCore&) = delete;

  // Writes one step-log record per executed step (not owned; null = none). Records carry
  // `instance_tag` when it is not empty (a P/D or DP instance: "prefill 0").
  void SetStepLog(const StepRecordSink* sink, std::string instance_tag = {});

  struct ScheduleResult {
    enum class Kind {
      kNothing,    // no step: idle, or nothing can run until the driver changes something
      kStarted,    // a step runs until `at`
      kDecided,    // (Decide) a non-empty step is decided; Launch starts it
      kRetryAt,    // nothing to compute; the CPU tier's next copy ends at `at`: decide again then
      kRejected,   // nothing runs and the head of the queue never will: `rejected` was dropped
    };
    Kind kind = Kind::kNothing;
    Tick at = 0;
    SimRequest* rejected = nullptr;
  };
  // A decision at `now` when no step is in flight (else kNothing); a non-empty one starts.
  ScheduleResult Schedule(Tick now, InstanceObserver& obs);

  // The same in two halves, for ranks that step together (DP ranks of an MoE model): Decide
  // says kDecided for a non-empty decision, which Launch then prices and starts, once every
  // rank's batch is known (set_peer_tokens). Returns the step's end.
  ScheduleResult Decide(Tick now, InstanceObserver& obs);
  Tick Launch(Tick now, InstanceObserver& obs);
  // The tokens the other ranks run in the step launched next (Launch or Continue): their
  // tokens reach this rank's experts (CostModel::AddPeerTokens). Cleared by the launch.
  void set_peer_tokens(int64_t tokens) { peer_tokens_ = tokens; }
  // Ranks in lock-step: the step in flight ends when the slowest rank's does.
  void ExtendStep(Tick end) { step_record_.t_end_ns = end; }
  // The tokens of the decided step (after Decide) and of the next one (async: decided while
  // the step in flight runs; -1 when there is none).
  int64_t decided_tokens() const { return step_.num_scheduled_tokens; }
  int64_t next_tokens() const { return next_decided_ ? next_.num_scheduled_tokens : -1; }
  // A rank with nothing to run while its peers step runs a dummy batch (vLLM's
  // execute_dummy_batch: one token) so the experts' collectives line up: its duration.
  Tick DummyStepNanos(int64_t peer_tokens);

  // Ends the step in flight at `now`; the requests that finished in it are appended to
  // `finished` (their blocks freed, or held on a prefill instance).
  void EndStep(Tick now, InstanceObserver& obs, std::vector<SimRequest*>& finished);
  // After EndStep and the driver's handling of the finished requests: async scheduling
  // launches the step decided while the last one ran. Returns its end, or nullopt (the driver
  // schedules a decision).
  std::optional<Tick> Continue(Tick now, InstanceObserver& obs);

  // ---- The unit clock (config.unit_clock) ----
  // Decision `k` (the driver has added the requests that arrived by k), a step even when
  // empty, whose record is numbered k. Sync: its outputs are applied at once. Async: the
  // outputs of the step in flight (k - 1) are applied after it (vLLM's batch queue), and this
  // one is in flight. Records reach the step log when their outputs are applied, after the
  // finished requests freed their blocks and the tier took the copies that output reports.
  // Returns false when nothing can change any more without an arrival: the decision scheduled
  // and preempted nothing, no token was in flight, and the tier has nothing pending (the head
  // of WAITING, if any, can never be admitted). The records need a step log (SetStepLog).
  bool UnitStep(Tick k, InstanceObserver& obs, std::vector<SimRequest*>& finished);
  // Nothing is unfinished and the clock is about to jump from tick `k` (or stop). Async: the
  // step in flight (empty: it held the final tokens' slots) has its outputs applied. Then, when
  // requests finished since the last decision or copies are in flight, vLLM's engine makes one
  // more decision (no record): latest plans the finished requests' last stores, and with
  // nothing unfinished the tier flushes every copy (docs/step-log.md, "A finished request's
  // last stores, empty steps and idle gaps").
  void UnitIdle(Tick k, InstanceObserver& obs, std::vector<SimRequest*>& finished);

  bool step_in_flight() const { return step_in_flight_; }
  bool idle() const { return inst_.idle(); }
  EngineInstance& inst() { return inst_; }
  const EngineInstance& inst() const { return inst_; }
  const KvCachePlan& plan() const { return config_.plan; }
  CostModel& cost() { return cost_; }
  const CostModel& cost() const { return cost_; }
  InstanceRole role() const { return config_.role; }
  // The CPU tier's driver, or null without one.
  const OffloadDriver* offload() const { return offload_.get(); }
  OffloadDriver* mutable_offload() { return offload_.get(); }
  int64_t offload_block_bytes() const { return config_.offload_block_bytes; }
  bool async() const { return async_; }

  // Statistics: steps launched, preemptions decided.
  int64_t steps() const { return steps_; }
  int64_t preemptions() const { return preemptions_; }

 private:
  void DecideInto(StepPlan& plan, StepRecord& record, Tick now, InstanceObserver& obs);
  void OffloadDecision(const StepPlan& plan, Tick now, InstanceObserver& obs);
  void RecordDecision(const StepPlan& plan, StepRecord& record, Tick now);
  void WriteRecord(StepRecord& record);

  InstanceConfig config_;
  EngineInstance inst_;
  CostModel cost_;
  std::unique_ptr<OffloadDriver> offload_;
  bool async_ = false;

  StepPlan step_;           // the step in flight
  StepPlan next_;           // async: decided before step_'s outputs are applied
  bool next_decided_ = false;
  bool step_in_flight_ = false;
  Tick step_start_ = 0;
  // Async: where the running step's GPU part started, and whether the step being launched
  // was decided while the previous one ran (its CPU part overlapped that GPU part).
  Tick prev_gpu_start_ = 0;
  bool back_to_back_ = false;
  // CPU tier: the end of the copies the decision of step_ (next_) flushed; its GPU part
  // waits for them.
  Tick step_flush_until_ = 0;
  Tick next_flush_until_ = 0;
  OffloadStepRecord last_offload_;  // what the last decision started (for the step log)
  // Requests finished since the last decision, copied (the driver's are gone by then): the
  // tier's store pass visits them in the latest profile.
  std::vector<SimRequest> finished_since_decision_;
  std::vector<SimRequest*> finished_ptrs_;

  const StepRecordSink* step_log_ = nullptr;
  std::string instance_tag_;
  StepRecord step_record_;  // the step in flight, completed at its end
  StepRecord next_record_;  // async: the decided step that runs after it
  int64_t step_index_ = 0;  // decisions recorded so far

  int64_t steps_ = 0, preemptions_ = 0;
  int64_t peer_tokens_ = 0;
};

}  // namespace kvsim
