// OffloadDriver: vLLM's CPU offloading tier as a stepping scheduler sees it — the connector
// (core/offload/offload_connector.h) behind the scheduler's IKvConnector seam, plus the worker
// side reduced to *when* each copy is reported finished. `kvsim schedule` uses it (step-log.md
// §8); it owns the connector and reads hashes from the instance's KV cache manager.
//
// Copy timing (`--xfer-timing`). A load planned by decision k starts in step k's execution; a
// store planned by decision k is deferred by the worker and starts in step k + 1's. A copy is
// reported finished in the output of the step that started it (kInstant) or of the step after
// (kNextStep). The scheduler learns of it when that output is applied (ApplyOutput):
//   - a finished load puts the request in finished_recving; the next decision promotes it;
//   - a finished store makes its blocks ready (visible to lookups).
// Flushes (jobs_to_flush): the worker waits for some copies before the step runs, and they are
// reported in the output of the step whose decision flushed them:
//   - a preempted request's in-flight stores;
//   - stores of a finished request whose GPU source block was handed to a request again;
//   - stores whose sliding-window or Mamba source block this decision handed to a request
//     (such blocks are watched from the store's creation: the window can free them while the
//     request still runs, kv-offload.md §9 "early reuse");
//   - every copy, when no tracked request is unfinished (checked before the step's stores are
//     planned). classic tracks a request from its first connector lookup, latest from arrival.
// Timed, a flush delays the step: its GPU part starts once the flushed copies have ended.
//
// Per decision the driver records what the step log's §8 fields need: the connector
// admissions (from the plan), the loads and stores started, the CPU blocks evicted.
#pragma once

#include <cstdint>
#include <memory>
#include <functional>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/kv_cache_manager.h"
#include "core/offload/offload_connector.h"
#include "sim/scheduler/i_kv_connector.h"
#include "sim/scheduler/scheduler.h"

namespace kvsim {

enum class XferTiming : uint8_t { kInstant, kNextStep };

// Timed copies (`kvsim run`): each job moves its blocks over the GPU's host link. A job of b
// offloaded blocks takes latency + kernels · launch + b · block_bytes / bandwidth, where
// block_bytes is one offloaded block on one TP rank (every layer, padding included) and
// kernels the KV tensors the worker copies one kernel each. Jobs of one direction run one
// after another in submission order; with `shared_link` loads and stores queue on one link.
struct CopyLinkModel {
  double bytes_per_ns = 55.0;  // per direction (PCIe Gen5 x16 ≈ 55 GB/s)
  int64_t latency_ns = 10'000;
  int64_t launch_ns = 5'000;   // per copy kernel
  int64_t kernels_per_job = 1;
  int64_t block_bytes = 0;     // one offloaded block, one rank
  bool shared_link = false;

  int64_t JobNanos(int64_t num_blocks) const;
};

// The §8 fields a decision produced. Requests are SimRequest ids; evicted blocks name the
// request that first stored them and the offloaded block's index in it ("rid#i").
struct OffloadStepRecord {
  struct Blocks {
    int64_t request = 0;
    std::vector<int64_t> block_indices;
  };
  struct Evicted {
    int64_t request = 0;
    int64_t block_index = 0;
  };
  std::vector<Blocks> loads;
  std::vector<Blocks> stores;
  std::vector<Evicted> evicted;
  int64_t store_failures = 0;  // stores that found no room (retried next step)
};

class OffloadDriver : public IKvConnector {
 public:
  // Step clock: copies are reported per `timing`.
  OffloadDriver(const OffloadConnectorConfig& config, const KvCacheManager* kv, XferTiming timing);
  // Timed (`kvsim run`): BeginDecision/ApplyOutput take nanoseconds and copies take the link's
  // time; a copy is visible to the first decision at or after its end.
  OffloadDriver(const OffloadConnectorConfig& config, const KvCacheManager* kv,
                const CopyLinkModel& link);

  // ---- IKvConnector (called by Schedule) ----
  ExternalHit MatchedTokens(const SimRequest& r, int64_t gpu_hit_tokens) override;
  void AfterAlloc(const SimRequest& r, int64_t gpu_hit_tokens, int64_t ext_tokens) override;
  bool LoadFinished(const SimRequest& r) override;

  // ---- The driver's protocol ----
  // A request arrived (latest tracks it from now on).
  void RequestAdded(const SimRequest& r);
  // Before decision `step`: the step that loads and stores planned now belong to (timed: the
  // decision's time in ns; the stores the previous decision planned start now).
  void BeginDecision(int64_t step);
  // After the decision: plans the step's store jobs (build_connector_meta) for the scheduled
  // requests of `plan` and, in latest, the requests in `finished` (finished since the previous
  // decision); flushes preempted requests' stores and, when no tracked request is unfinished,
  // every job. Returns what the decision started.
  OffloadStepRecord EndDecision(const StepPlan& plan, std::span<SimRequest* const> finished);
  // The output of step `step` is applied: copies reported in it complete (timed: copies that
  // ended by time `step`).
  void ApplyOutput(int64_t step);
  // Timed: the earliest end of a copy in flight, or -1.
  int64_t NextCompletion() const;
  // A request finished (request_finished), called before its blocks are freed: its state is
  // dropped once its copies are done; its pending stores' GPU source blocks are remembered.
  void RequestFinished(const SimRequest& r);
  // Copies in flight, loads waiting for promotion: something will still change.
  bool busy() const { return !pending_.empty() || !finished_recving_.empty(); }
  // Copies not yet reported finished. A request whose load was reported but not yet promoted is
  // not one: the scheduler promotes it when the waiting loop reaches it, so a decision that
  // changed nothing will not reach it the next time either.
  bool copies_in_flight() const { return !pending_.empty(); }
  // Timed: the end of the latest copy the last decision flushed (its step's GPU part waits
  // for it), or 0.
  int64_t flush_until() const { return flush_until_; }
  // Copies the last ApplyOutput completed (a deferred lookup may succeed now).
  int64_t completed_last_output() const { return completed_last_output_; }

  const OffloadConnector& connector() const { return connector_; }
  // Totals (offloaded blocks) of the copies planned so far.
  int64_t blocks_loaded() const { return blocks_loaded_; }
  int64_t blocks_stored() const { return blocks_stored_; }
  int64_t num_cpu_blocks_used() const { return connector_.tier().num_resident(); }
  int64_t num_cpu_blocks_ready() const { return connector_.tier().num_ready(); }

 private:
  struct PendingJob {
    OffloadJobId id = -1;
    int64_t request = 0;
    bool is_load = false;
    int64_t output_step = 0;  // reported finished in the output of this step (timed: ns)
    std::vector<int64_t> block_indices;  // stores: the offloaded blocks copied
    std::vector<int32_t> groups;         // stores: the KV group of each (parallel)
    bool submitted = true;    // timed: a store waits for the next step to start
  };
  // Timed: puts job `j` on its link from `now`.
  void Submit(PendingJob& j, int64_t now, int64_t num_blocks);
  void Flush(OffloadJobId id);
  OffloadRequestView View(const SimRequest& r) const;

  OffloadConnector connector_;
  const KvCacheManager* kv_;
  XferTiming timing_;
  bool timed_ = false;
  CopyLinkModel link_;
  int64_t h2d_free_ = 0, d2h_free_ = 0;  // timed: when each direction's queue drains
  int64_t blocks_loaded_ = 0, blocks_stored_ = 0;
  int64_t step_ = 0;
  int64_t flush_until_ = 0;  // timed: see flush_until()
  int64_t completed_last_output_ = 0;
  std::vector<PendingJob> pending_;                 // in submission order
  std::unordered_set<int64_t> finished_recving_;    // requests whose loads are all done
  std::unordered_set<int64_t> unfinished_tracked_;  // tracked by the connector, not finished
  // GPU blocks read by a finished request's pending stores → those stores.
  std::vector<std::pair<BlockId, OffloadJobId>> source_blocks_;
  // Sliding-window/Mamba GPU blocks read by pending stores, watched from the store's creation.
  // A job is flushed when a decision hands one of them to a request: every block of a request
  // admitted (or allocated for a load) in it, the blocks a running request gained in it.
  std::vector<std::pair<BlockId, OffloadJobId>> window_source_blocks_;
  bool has_window_groups_ = false;
  // Window groups only: each tracked request's block-table lengths after the last decision
  // (what a running request gained since), and the tables of requests finished since the last
  // decision (latest plans their last stores after their blocks are freed).
  std::unordered_map<int64_t, std::vector<size_t>> table_len_;
  std::unordered_map<int64_t, std::vector<std::vector<BlockId>>> finished_tables_;
  std::vector<RequestHandle> allocated_for_load_;  // this decision's AfterAlloc with a load
  // Watches the window-group source blocks of `job` read from `tables` (one per group).
  void WatchWindowBlocks(const StoreJob& job,
                         const std::function<std::span<const BlockId>(int group)>& tables);
  OffloadStepRecord record_;
};

}  // namespace kvsim
