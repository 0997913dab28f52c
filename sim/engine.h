// Engine: one simulated vLLM deployment on one node: its data-parallel ranks (parallel.dp,
// one of them without DP), each an InstanceCore (sim/instance/instance_core.h: scheduler,
// KV cache manager, step-time model, CPU tier), driven by a workload through the event queue.
//
// Lifecycle: Create() (plan the KV cache, build the ranks and the workload; bad input comes
// back as a Status) → optional SetTrace() → Run() (until the workload is drained or
// run.max_sim_seconds) → Summary()/metrics(). An Engine runs once.
//
// The event loop, the workload and the instances' step cycle are the ServingLoop's
// (sim/pool/serving_loop.h): the engine is its deployment of one colocated pool. What the
// engine adds: a request that arrives goes to a rank (vLLM's DP load balancer) and joins its
// WAITING, or is rejected (prompt ≥ max_model_len, or more blocks than a rank's whole
// cache); the ranks' steps fill the request records and the metrics.
// DP ranks of a dense model step independently; those of an MoE model in lock-step (the
// loop's lock-step pool, as vLLM's DPEngineCoreProc).
// The engine is single-threaded and deterministic: all randomness comes from the scenario
// seed (workload and acceptance streams are forked from it).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/kv_cache_manager.h"
#include "sim/instance/instance_core.h"
#include "sim/instance/offload_driver.h"
#include "sim/instance/step_log_io.h"
#include "sim/metrics.h"
#include "sim/pool/serving_loop.h"
#include "sim/scenario_config.h"
#include "sim/trace_export.h"

namespace kvsim {

class Engine final : Deployment {
 public:
  static Result<std::unique_ptr<Engine>> Create(const Scenario& scenario);
  ~Engine() override;

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
  int num_ranks() const { return loop_->num_instances(); }
  // Rank 0's KV cache manager (the viewer reads the pool from a step-log sink).
  const KvCacheManager& kv() const { return core0().inst().kv(); }
  // Rank 0's CPU tier driver, or null without `cache.offload`.
  const OffloadDriver* offload() const { return core0().offload(); }
  const Scenario& scenario() const { return sc_; }
  const std::string& workload_description() const { return workload_desc_; }
  const std::string& workload_note() const { return workload_note_; }
  Tick now() const { return loop_->now(); }
  const RequestFootprint& footprint() const { return loop_->footprint(); }

 private:
  Engine(const Scenario& sc, std::unique_ptr<IWorkload> workload);
  // The DP ranks (one without DP), as one pool of the loop.
  void AddRanks(std::vector<InstanceConfig> ranks);
  const InstanceCore& core0() const { return loop_->core(0); }
  void Reject(RequestId id);
  void Finish(LiveRequest& l);

  // Deployment: what the loop reports (sim/pool/serving_loop.h).
  void Arrived(RequestId id) override;
  void Preempted(int i, SimRequest& r, Tick now) override;
  void ConnectorAdmitted(int i, const ConnectorAdmission& a, Tick now) override;
  void StepLaunched(int i, const StepPlan& step, Tick start, Tick end) override;
  void Emitted(int i, LiveRequest& r, Tick seen) override;
  void StepEnded(int i, Tick start, Tick now, const EngineInstance& inst, int64_t drafts,
                 int64_t accepted) override;
  void StepOutputs(int i, const std::vector<SimRequest*>& finished) override;
  void Dropped(int i, SimRequest* head) override;
  void RequestEvent(EventKind kind, RequestId id) override;

  Scenario sc_;
  std::unique_ptr<ServingLoop> loop_;
  bool moe_ = false;  // an MoE model: its DP ranks step in lock-step
  std::string workload_desc_, workload_note_;
  Metrics metrics_;
  TraceRecorder* trace_ = nullptr;
  // The requests that entered and are not over (waiting or running on a rank).
  std::unordered_map<RequestId, std::unique_ptr<LiveRequest>> live_;
};

}  // namespace kvsim
