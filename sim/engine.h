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

class Engine : private InstanceObserver {
 public:
  static Result<std::unique_ptr<Engine>> Create(const Scenario& scenario);
  ~Engine() override;

  // Records a Chrome trace while running (not owned; must outlive Run()).
  void SetTrace(TraceRecorder* trace) { trace_ = trace; }
  // Writes one step-log record per executed step (docs/step-log.md) with its simulated start
  // and end (not owned; must outlive Run()).
  void SetStepLog(const StepRecordSink* sink) { core_.SetStepLog(sink); }
  void Run();

  RunSummary Summary() const;
  const Metrics& metrics() const { return metrics_; }
  const KvCachePlan& plan() const { return core_.plan(); }
  // The instance's KV cache manager (the viewer reads the pool from a step-log sink).
  const KvCacheManager& kv() const { return core_.inst().kv(); }
  // The CPU tier's driver, or null without `cache.offload`.
  const OffloadDriver* offload() const { return core_.offload(); }
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

  Engine(const Scenario& sc, InstanceConfig config, std::unique_ptr<IWorkload> workload);
  void PullOpenLoop();
  void OnArrival(RequestId id);
  void OnSchedule();
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

  // InstanceObserver: the request records, metrics and trace of the one instance.
  void Preempted(SimRequest& r, Tick now) override;
  void ConnectorAdmitted(const ConnectorAdmission& a, Tick now) override;
  void StepLaunched(const StepPlan& step, Tick start, Tick end) override;
  void Tokens(SimRequest& r, int64_t n, std::vector<TokenId>& tokens, Tick seen) override;
  void StepEnded(Tick start, Tick now, const EngineInstance& inst, int64_t drafts,
                 int64_t accepted) override;

  Scenario sc_;
  InstanceCore core_;
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
  bool schedule_pending_ = false;
  RequestId open_loop_id_{-1};  // the announced open-loop request (its arrival pulls the next)
  Tick now_ = 0;
  Tick stop_at_ = -1;
  int64_t vocab_ = 0;
  std::vector<RequestSpec> follow_buf_;
  std::vector<SimRequest*> finished_buf_;
};

}  // namespace kvsim
