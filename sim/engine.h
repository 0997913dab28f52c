// Engine: one simulated vLLM instance = scheduler + KV cache manager + step-time model,
// driven by a workload through the event queue.
//
// Lifecycle: Create() (plan the KV cache, build the manager, cost model and workload; bad
// input comes back as a Status) → optional SetTrace() → Run() (until the workload is drained
// or run.max_sim_seconds) → Summary()/metrics(). An Engine runs once.
//
// Event handling (kinds and their order at equal ticks are in sim/event.h):
//   kArrival   the request joins WAITING (or is rejected: prompt ≥ max_model_len, or more
//              blocks than the whole cache); the next open-loop arrival is pulled lazily.
//   kSchedule  when no step is in flight: Schedule() (a pure step over the queues and the
//              KV allocator) → the cost model prices the batch → kStepEnd at now + time.
//   kStepEnd   every scheduled request whose known tokens are all computed emits tokens:
//              1 + accepted drafts (each draft accepted with spec.acceptance_rate, stopping
//              at the first rejection; rejected drafts are rolled back). Accepted tokens are
//              appended to the KV manager (so decode blocks get hashed and cached). Finished
//              requests free their blocks, the workload may add follow-ups, and the next
//              step is scheduled at the same tick.
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
#include "sim/instance/engine_instance.h"
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
  void SetStepLog(const StepRecordSink* sink) { step_log_ = sink; }
  void Run();

  RunSummary Summary() const;
  const Metrics& metrics() const { return metrics_; }
  const KvCachePlan& plan() const { return plan_; }
  // The instance's KV cache manager (the viewer reads the pool from a step-log sink).
  const KvCacheManager& kv() const { return inst_.kv(); }
  // The CPU tier's driver, or null without `cache.offload`.
  const OffloadDriver* offload() const { return offload_.get(); }
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
  };
  static Live& LiveOf(SimRequest& r) { return static_cast<Live&>(r); }

  Engine(const Scenario& sc, KvCachePlan plan, const KvCacheManagerConfig& kv_config,
         const SchedulerParams& params, std::unique_ptr<IWorkload> workload);
  void PullOpenLoop();
  void OnArrival(RequestId id);
  void OnSchedule();
  void DecideInto(StepPlan& plan, StepRecord& record);  // a decision; counts preemptions
  void Launch();  // prices step_ and starts it; async: decides next_ at once
  void OnStepEnd();
  void Finish(Live& l);
  void Reject(Live& l);
  // Footprint bookkeeping: a spec is announced when its arrival event is queued and released
  // when its request is over.
  void Announce(RequestSpec&& spec);
  void Release(const RequestSpec& spec);
  // Tells the workload a request is over (finished, or rejected with 0 outputs) and queues
  // the follow-up arrivals it returns.
  void EndForWorkload(const RequestSpec& spec, int64_t output_tokens);
  void RequestSchedule();
  void RecordDecision(const StepPlan& plan, StepRecord& record);  // the step log's fields

  Scenario sc_;
  KvCachePlan plan_;
  EngineInstance inst_;  // the KV cache manager, the scheduler's queues and params
  CostModel cost_;
  EventQueue queue_;
  std::unique_ptr<IWorkload> workload_;
  std::string workload_desc_, workload_note_;
  Metrics metrics_;
  TraceRecorder* trace_ = nullptr;
  const StepRecordSink* step_log_ = nullptr;
  StepRecord step_record_;  // the step in flight, completed at its end
  StepRecord next_record_;  // async: the decided step that runs after it
  StepPlan next_;           // async: decided before step_'s outputs are applied
  bool next_decided_ = false;
  bool async_ = false;
  int64_t step_index_ = 0;  // executed steps so far

  // Only the requests in flight: entered (waiting or running) and announced (arrival queued).
  std::unordered_map<RequestId, std::unique_ptr<Live>> live_;
  std::unordered_map<RequestId, RequestSpec> arriving_;  // specs of pushed arrival events
  RequestFootprint footprint_;
  std::vector<TokenId> prompt_buf_;  // the prompt being handed to the KV manager
  bool open_loop_done_ = false;
  bool step_in_flight_ = false;
  bool schedule_pending_ = false;
  StepPlan step_;
  Tick step_start_ = 0;
  // Async: where the running step's GPU part started, and whether the step being launched
  // was decided while the previous one ran (its CPU part overlapped that GPU part).
  Tick prev_gpu_start_ = 0;
  // CPU tier: the end of the copies the decision of step_ (next_) flushed; its GPU part
  // waits for them.
  Tick step_flush_until_ = 0;
  Tick next_flush_until_ = 0;
  RequestId open_loop_id_{-1};  // the announced open-loop request (its arrival pulls the next)
  bool back_to_back_ = false;
  Tick now_ = 0;
  Tick stop_at_ = -1;
  std::vector<RequestSpec> follow_buf_;
  std::vector<SimRequest*> finished_buf_;
  // The CPU offloading tier (cache.offload), or null; copies take the host link's time.
  std::unique_ptr<OffloadDriver> offload_;
  OffloadStepRecord last_offload_;  // what the last decision started (for the step log)
  // Requests finished since the last decision, copied (the live ones are gone by then): the
  // tier's store pass visits them in the latest profile.
  std::vector<SimRequest> finished_since_decision_;
  std::vector<SimRequest*> finished_ptrs_;
  int64_t offload_block_bytes_ = 0;  // one offloaded block over all TP ranks
  void OffloadDecision(const StepPlan& plan);  // the tier's side of a decision
};

}  // namespace kvsim
