// ClusterSim: a prefill/decode (P/D) disaggregated cluster on one simulated clock.
//
// Request flow (vLLM's NIXL P/D, reference §7.4):
//   arrival → prefill router → a prefill instance runs the prompt (its own scheduler, prefix
//   cache and step-time model; max_tokens = 1, as vLLM's P/D proxy sends it) → when the last
//   prompt chunk's step ends the KV is ready; the prefill instance keeps the blocks until the
//   decoder has read them → decode router → the decode instance reserves blocks for the whole
//   prompt (its own prefix cache may already hold a prefix: only the rest is transferred)
//   → save-side re-layout on the prefill GPU (if any) → descriptor posting → the bytes cross
//   the topology as a flow sharing links max-min fairly with the other transfers → path
//   latency → receive-side re-layout on the decode GPU (if any) → the request joins the
//   decoder's running batch with every prompt token but the last computed (vLLM replays the
//   last prompt token for logits), so its first decode step emits the first token.
//
// TTFT = queue (arrival → first prefill step) + prefill (→ KV ready on P) + transfer (→ KV
// usable on D: waiting for decode blocks, re-layouts, posting, wire, latency) + first decode
// (→ first token on D). The four parts add up exactly (tested).
//
// Each instance is an InstanceCore (sim/instance/instance_core.h) in its role (prefill or
// decode): the scheduler (sim/scheduler) over its own KvCacheManager (core) with the pool's
// plan, priced by the pool's CostModel. The ServingLoop (sim/pool/serving_loop.h) runs the
// clock, the workload and the instances' step cycles over two pools; ClusterSim is its
// deployment (what a request does between the pools: routers, records) and its external
// clock, through PdTransfers (sim/cluster/pd_transfers.h: each transfer's price and its flow
// on the network). Everything is deterministic for a scenario + seed.
// Deviations from vLLM, on purpose: decode-side blocks are reserved outside the scheduler's
// token budget (vLLM admits WAITING_FOR_REMOTE_KVS requests through the waiting queue) and
// cached at reservation, not after the load; save-side re-layout does not contend with the
// prefill GPU's steps.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "sim/cluster/cluster_setup.h"
#include "sim/cluster/pd_transfers.h"
#include "sim/cluster/router.h"
#include "sim/event.h"
#include "sim/instance/instance_core.h"
#include "sim/instance/step_log_io.h"
#include "sim/metrics.h"
#include "sim/pool/serving_loop.h"
#include "sim/scheduler/scheduler.h"
#include "sim/scenario_config.h"
#include "sim/trace_export.h"
#include "sim/workload/i_workload.h"

namespace kvsim {

// A P/D request's record: the one every deployment keeps (RequestRecord: arrival, its first
// prefill step as first_scheduled, the prefill instance's hit as cached_tokens, first token,
// finish) plus its way between the pools.
struct PdRecord : RequestRecord {
  int prefill_instance = -1;
  int decode_instance = -1;
  Tick prefill_end = -1;    // KV complete on the prefill instance
  Tick reserved = -1;       // decode blocks reserved
  Tick wire_start = -1;     // bytes start to move (after save re-layout and posting)
  Tick wire_end = -1;       // last byte delivered
  Tick kv_ready = -1;       // after latency and receive re-layout: usable on decode
  int64_t decode_hit_tokens = 0;
  int64_t transfer_tokens = 0;
  int64_t descriptors = 0;
  int64_t bytes = 0;
  int64_t save_relayout_bytes = 0;
  int64_t receive_relayout_bytes = 0;
  int transfers = 0;  // how many times this request's KV moved (must be 1)
};

struct PoolSummary {
  std::string role;
  std::vector<double> kv_usage_mean;  // per instance, time-weighted over the makespan
  std::vector<double> kv_usage_max;
  std::vector<int64_t> requests;      // per instance
  int64_t lookups = 0, query_tokens = 0, hit_tokens = 0;
  double hit_rate = 0;  // hit_tokens / query_tokens over every lookup of the pool
  int64_t steps = 0;
  int64_t preemptions = 0;
  // Speculative decoding (decode pool): drafts verified, drafts accepted, their ratio.
  int64_t spec_drafts = 0, spec_accepted = 0;
  double spec_acceptance = 0;
  // The CPU offloading tier (cache.offload), when the pool has one: prompt tokens its lookups
  // found in the tier at first admission, and the bytes copied each way (over all TP ranks).
  bool has_cpu_tier = false;
  int64_t cpu_hit_tokens = 0;
  int64_t cpu_bytes_loaded = 0, cpu_bytes_stored = 0;
};

struct LinkSummary {
  std::string name;  // "a->b"
  double capacity_gbytes_per_s = 0;
  double bytes = 0;
  double utilisation = 0;  // bytes / (capacity × makespan)
};

struct ClusterSummary {
  int64_t arrived = 0, finished = 0, rejected = 0, unfinished = 0;
  double makespan_s = 0;
  // Over finished requests, in milliseconds.
  Percentiles ttft, queue, prefill, transfer, first_decode, tpot, e2e;
  // Inter-token latency: one value per decode step that emitted tokens for a request, the
  // time since its previous emission (the Engine's ITL; log-bucketed percentiles).
  Percentiles itl;
  Percentiles wire;  // wire_end − wire_start
  int64_t transferred_requests = 0;
  int64_t bytes = 0, descriptors = 0, save_relayout_bytes = 0, receive_relayout_bytes = 0;
  int64_t decode_hit_tokens = 0;  // prompt tokens the decoders already held
  double output_throughput = 0;   // tokens / s
  PoolSummary prefill_pool, decode_pool;
  std::vector<LinkSummary> links;  // every directed link that carried bytes, busiest first
};

class ClusterSim final : Deployment, ExternalClock {
 public:
  // Builds the setup, the instances, routers and the workload. Bad input → Status.
  static Result<std::unique_ptr<ClusterSim>> Create(const Scenario& sc);
  // Same, with requests given directly instead of the scenario's workload (tests).
  static Result<std::unique_ptr<ClusterSim>> Create(const Scenario& sc,
                                                    std::unique_ptr<IWorkload> workload);
  ~ClusterSim() override;

  // Records a Chrome/Perfetto trace of the run into `trace` (not owned; null = none): each
  // instance is a process with its steps and KV/queue counters, "network" counts transfers
  // on the wire, and "requests" shows each request's queue, prefill, transfer (with the
  // wait for decode blocks and the wire time nested inside), first decode and decode.
  void SetTrace(TraceRecorder* trace);
  // Writes one step-log record per executed step of every instance (docs/step-log.md), each
  // tagged with its instance ("prefill 0", "decode 1"); request ids are the cluster's. Not
  // owned; must outlive Run().
  void SetStepLog(const StepRecordSink* sink);
  void Run();
  ClusterSummary Summary() const;
  const std::vector<PdRecord>& records() const { return records_; }
  const ClusterSetup& setup() const { return setup_; }
  const std::string& workload_description() const { return workload_desc_; }
  Tick now() const { return loop_->now(); }
  // Checks every instance's KV manager invariants and that no transfer is lost.
  void CheckInvariants() const;

 private:
  class Instance;

  ClusterSim(const Scenario& sc, std::unique_ptr<IWorkload> workload);
  // Builds the setup, the pools' instances and the routers from the scenario.
  Status Init();

  // Deployment: what the loop reports (sim/pool/serving_loop.h).
  void Arrived(RequestId id) override;
  void Preempted(int, SimRequest&, Tick) override {}
  void ConnectorAdmitted(int i, const ConnectorAdmission& a, Tick now) override;
  void StepLaunched(int i, const StepPlan& step, Tick start, Tick end) override;
  void Emitted(int i, LiveRequest& r, Tick seen) override;
  void StepEnded(int i, Tick start, Tick now, const EngineInstance& inst, int64_t drafts,
                 int64_t accepted) override;
  void StepOutputs(int i, const std::vector<SimRequest*>& finished) override;
  void Dropped(int i, SimRequest* head) override;
  void RequestEvent(EventKind kind, RequestId id) override;
  // ExternalClock: the flow network's deliveries.
  std::optional<Tick> NextCompletion() const override;
  void AdvanceTo(Tick now) override;
  void Fire() override;

  void OnPrefillDone(InstanceId p, RequestId id);
  void TryReserve(InstanceId d);
  void OnWireStart(RequestId id);
  void OnWireEnd(RequestId id);
  void OnKvReady(RequestId id);
  void OnFinished(InstanceId d, RequestId id, int64_t outputs);
  void Reject(RequestId id);
  // records_ is indexed by request id; GrowRecords makes room for `id`.
  PdRecord& record_of(RequestId id) { return records_[static_cast<size_t>(id.value())]; }
  void GrowRecords(RequestId id) {
    const auto i = static_cast<size_t>(id.value());
    if (i >= records_.size()) records_.resize(i + 1);
  }
  Instance& instance(InstanceId i) { return *inst_[static_cast<size_t>(i.value())]; }
  // A decode instance's global id from its index in the decode pool.
  InstanceId DecodeInstance(int local) const { return InstanceId{num_prefill_ + local}; }
  void TraceRequests();
  void TraceNetwork();
  std::vector<InstanceLoad> Loads(bool prefill) const;
  // The instance of the prefill or decode pool `router` picks for `prompt`, given only what
  // the router reads (its loads, the prompt's block hashes).
  int Route(Router& router, const std::vector<TokenId>& prompt, bool prefill) const;

  Scenario sc_;
  ClusterSetup setup_;
  std::string workload_desc_;
  std::unique_ptr<ServingLoop> loop_;
  // Beside each of the loop's instances (same index: prefill instances, then decode ones).
  std::vector<std::unique_ptr<Instance>> inst_;
  int num_prefill_ = 0;
  std::unique_ptr<Router> prefill_router_;
  std::unique_ptr<Router> decode_router_;
  std::unique_ptr<PdTransfers> transfers_;  // the KV between the pools, and the network
  std::vector<PdRecord> records_;  // by request id (ids are dense from 0)
  LogHistogram itl_;  // decode emissions, as Metrics::Emission records them
  int64_t hash_block_ = 16;
  TraceRecorder* trace_ = nullptr;
};

// What the cluster keeps beside one instance of a pool (the instance itself, an InstanceCore,
// is the ServingLoop's): the requests it holds and its counters.
class ClusterSim::Instance {
 public:
  Instance(InstanceCore& c, int pool_index) : core(c), index(pool_index) {}

  bool prefill() const { return core.inst().role() == InstanceRole::kPrefill; }
  const SchedulerState& state() const { return core.inst().state(); }
  LiveRequest& live_of(RequestId id) { return *live.at(id); }

  InstanceCore& core;
  const int index;
  Tick step_start = 0;
  std::map<RequestId, std::unique_ptr<LiveRequest>> live;
  int64_t inbound_tokens = 0;  // decode: prompt tokens admitted whose KV is not usable yet
  int64_t cpu_hit_tokens = 0;  // first admissions' CPU-tier hits
  int64_t step_tokens = 0, step_admitted = 0, step_preempted = 0, step_chunks = 0;  // trace
};

nlohmann::json ClusterSummaryToJson(const ClusterSummary& s);
std::string FormatClusterSummary(const ClusterSummary& s);
// requests.csv of a run: one row per arrived request (docs/columns.md).
std::string ClusterRequestsCsv(const ClusterSim& sim);

}  // namespace kvsim
