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
// Each instance is an EngineInstance (sim/instance/engine_instance.h) in its role (prefill
// or decode): the scheduler (sim/scheduler) over its own KvCacheManager (core) with the
// pool's plan, priced by the pool's CostModel. ClusterSim owns the instances, the flow
// network, the routers and the workload; everything is deterministic for a scenario + seed.
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
#include "sim/cluster/flow_network.h"
#include "sim/cluster/router.h"
#include "sim/event.h"
#include "sim/event_queue.h"
#include "sim/instance/step_clock.h"
#include "sim/metrics.h"
#include "sim/scheduler/scheduler.h"
#include "sim/scenario_config.h"
#include "sim/trace_export.h"
#include "sim/workload/i_workload.h"

namespace kvsim {

struct PdRecord {
  RequestId id;
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  int prefill_instance = -1;
  int decode_instance = -1;
  Tick arrival = 0;
  Tick prefill_start = -1;  // first prefill step scheduled
  Tick prefill_end = -1;    // KV complete on the prefill instance
  Tick reserved = -1;       // decode blocks reserved
  Tick wire_start = -1;     // bytes start to move (after save re-layout and posting)
  Tick wire_end = -1;       // last byte delivered
  Tick kv_ready = -1;       // after latency and receive re-layout: usable on decode
  Tick first_token = -1;
  Tick finish = -1;
  int64_t prefill_hit_tokens = 0;
  int64_t decode_hit_tokens = 0;
  int64_t transfer_tokens = 0;
  int64_t descriptors = 0;
  int64_t bytes = 0;
  int64_t save_relayout_bytes = 0;
  int64_t receive_relayout_bytes = 0;
  int transfers = 0;  // how many times this request's KV moved (must be 1)
  bool rejected = false;
  bool arrived = false;
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

class ClusterSim {
 public:
  // Builds the setup, the instances, routers and the workload. Bad input → Status.
  static Result<std::unique_ptr<ClusterSim>> Create(const Scenario& sc);
  // Same, with requests given directly instead of the scenario's workload (tests).
  static Result<std::unique_ptr<ClusterSim>> Create(const Scenario& sc,
                                                    std::unique_ptr<IWorkload> workload);
  ~ClusterSim();

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
  Tick now() const { return now_; }
  // Checks every instance's KV manager invariants and that no transfer is lost.
  void CheckInvariants() const;

 private:
  class Instance;
  struct Transfer;

  ClusterSim(const Scenario& sc, ClusterSetup setup, std::unique_ptr<IWorkload> workload);
  Status Init();
  // Typed event payloads. An Event (sim/event.h) carries one integer; these are the only
  // code that writes or reads it, and no bit of it has a second meaning (an open-loop
  // arrival is known by its id: open_loop_next_).
  struct InstanceEvent {  // kSchedule, kStepEnd
    InstanceId instance;  // global index: prefill instances, then decode instances
  };
  struct RequestEvent {  // kArrival, kWireStart, kKvReady
    RequestId id;
  };
  void Push(Tick t, EventKind kind, InstanceEvent e);
  void Push(Tick t, EventKind kind, RequestEvent e);
  static InstanceEvent InstanceOf(const Event& e);
  static RequestEvent RequestOf(const Event& e);
  void PullOpenLoop();
  void OnArrival(RequestId id);
  void OnSchedule(InstanceId inst);  // a decision on instance `inst`; a non-empty one starts a step
  void OnStepEnd(InstanceId inst);
  // Instance i's observer calls (InstanceCore): a step started, a request produced tokens.
  void OnStepLaunched(Instance& in, const StepPlan& step, Tick start);
  void OnTokens(Instance& in, SimRequest& r, int64_t n, std::vector<TokenId>& tokens, Tick seen);
  void OnPrefillDone(InstanceId p, RequestId id);
  void TryReserve(InstanceId d);
  void OnWireStart(RequestId id);
  void OnWireEnd(int64_t flow);
  void OnKvReady(RequestId id);
  void OnFinished(InstanceId d, RequestId id, int64_t outputs);
  void Reject(RequestId id);
  // Tells the workload request `id` is over (finished, or rejected with 0 outputs), drops its
  // spec and queues the follow-up arrivals the workload returns.
  void EndForWorkload(RequestId id, int64_t output_tokens);
  // records_ is indexed by request id; GrowRecords makes room for `id`.
  PdRecord& record_of(RequestId id) { return records_[static_cast<size_t>(id.value())]; }
  void GrowRecords(RequestId id) {
    const auto i = static_cast<size_t>(id.value());
    if (i >= records_.size()) records_.resize(i + 1);
  }
  void RequestSchedule(InstanceId inst);
  Instance& instance(InstanceId i) { return *inst_[static_cast<size_t>(i.value())]; }
  // A decode instance's global id from its index in the decode pool, and back.
  InstanceId DecodeInstance(int local) const { return InstanceId{num_prefill_ + local}; }
  int DecodeLocal(InstanceId d) const { return d.value() - num_prefill_; }
  void TraceRequests();
  void TraceNetwork();
  std::vector<InstanceLoad> Loads(bool prefill) const;
  // The prompt of `spec`, built into prompt_buf_ (valid until the next call): specs keep
  // recipes, and ids exist only while a router or a KV manager reads them.
  const std::vector<TokenId>& PromptOf(const RequestSpec& spec);
  std::vector<BlockHash> RouteHashes(const std::vector<TokenId>& prompt) const;

  Scenario sc_;
  ClusterSetup setup_;
  std::unique_ptr<IWorkload> workload_;
  std::string workload_desc_;
  std::vector<std::unique_ptr<Instance>> inst_;  // prefill instances, then decode instances
  int num_prefill_ = 0;
  std::unique_ptr<Router> prefill_router_;
  std::unique_ptr<Router> decode_router_;
  FlowNetwork net_;
  EventQueue queue_;
  std::map<RequestId, RequestSpec> specs_;   // live requests' specs (prompts)
  std::map<RequestId, Transfer> transfers_;  // by request id
  std::map<int64_t, RequestId> flow_to_request_;
  std::vector<PdRecord> records_;  // by request id (ids are dense from 0)
  LogHistogram itl_;  // decode emissions, as Metrics::Emission records them
  bool open_loop_done_ = false;
  // The open-loop arrival in the queue, if any. Open-loop requests enter one at a time, in
  // send order: when this one enters, the next is pulled.
  std::optional<RequestId> open_loop_next_;
  Tick now_ = 0;
  Tick stop_at_ = -1;
  Tick first_arrival_ = -1;  // the earliest send time (spec.arrival) of an arrived request
  Tick last_finish_ = 0;
  int64_t hash_block_ = 16;
  double flow_cap_ = 0;  // bytes per ns; 0 = none
  std::vector<TokenId> prompt_buf_;  // PromptOf
  std::vector<RequestSpec> follow_buf_;
  TraceRecorder* trace_ = nullptr;
};

nlohmann::json ClusterSummaryToJson(const ClusterSummary& s);
std::string FormatClusterSummary(const ClusterSummary& s);
// requests.csv of a run: one row per arrived request (docs/columns.md).
std::string ClusterRequestsCsv(const ClusterSim& sim);

}  // namespace kvsim
