// OffloadConnector: the scheduler-side half of vLLM's OffloadingConnector with the CPU tier
// (OffloadingConnectorScheduler + CPUOffloadingManager; kv-offload.md §2–§9). It owns the
// CpuOffloadTier and, per request, the offload keys, the store cursor (next_stored_block_idx)
// and the request's in-flight transfer jobs. It knows nothing of the scheduler's queues or of
// GPU blocks beyond their count: a driver (replay, `kvsim schedule`, the engine) calls it at the
// points vLLM's Scheduler calls the connector and applies what it returns.
//
// Call protocol, in vLLM's order:
//   schedule(k), waiting request with num_computed_tokens == 0 (new or preempted):
//     g = GPU prefix hit (KvCacheManager::GetComputedBlocks)
//     r = Lookup(req, g)                     get_num_new_matched_tokens; touches every time
//     r.deferred → skip the request this step (skipped-waiting queue), try again next step
//     allocate_slots for g + r.tokens (delay_cache_blocks when r.tokens > 0)
//     OnAllocated(req, g, r.tokens)          update_state_after_alloc → the load job, if any
//       (a load makes the request WAITING_FOR_REMOTE_KVS; it is not scheduled this step)
//   end of schedule(k):
//     BuildStoreJobs(candidates in StoreVisitOrder)   build_connector_meta → _build_store_jobs
//     The worker submits those stores at the start of step k+1 (never delaying step k).
//   a model output that reports a finished copy:
//     CompleteJob(id)                         update_connector_output (complete_store/_load)
//   a request finishes:   RequestFinished(id)   with the step's outputs; its in-flight stores
//                         still complete later
//   a running request is preempted: vLLM flushes its in-flight stores before the step runs
//                         (InFlightJobs tells which); on resume it is looked up again.
//   a loaded request is promoted: its computed tokens become ComputedTokensAfterLoad(...).
//
// Requests are described by OffloadRequestView, a plain struct (no dependency on sim/).
// Hybrid models: each KV-cache group has its own keys; full-attention groups are scanned as a
// prefix, sliding-window/Mamba groups from the end for `window` consecutive hits, the whole hit
// then capped at num_tokens − 1 (kv-offload.md §9).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/block_hash.h"
#include "core/offload/cpu_offload_tier.h"
#include "core/status.h"
#include "core/vllm_semantics.h"

namespace kvsim {

using OffloadRequestId = int64_t;  // the driver's own request id
using OffloadJobId = int64_t;

// One KV-cache group as the offloading connector sees it.
struct OffloadGroupConfig {
  int64_t gpu_block_size = 16;
  // 0: full attention. Otherwise the window in offloaded blocks: cdiv(sliding_window, obs) for
  // sliding-window groups, 1 for Mamba groups (get_sliding_window_size_in_blocks).
  int64_t window_blocks = 0;
};

struct OffloadConnectorConfig {
  std::vector<OffloadGroupConfig> groups{OffloadGroupConfig{}};
  // f: offloaded block = f GPU blocks of each group (obs_g = f · gpu_block_size_g).
  int64_t block_size_factor = 1;
  int64_t hash_block_size = 16;  // granularity of OffloadRequestView::block_hashes
  bool enable_prefix_caching = true;  // tracks blocks being loaded (deferral)
  VllmSemantics semantics = VllmSemantics::kClassic;  // latest: stores prompt blocks only
  CpuTierConfig tier;

  int64_t offloaded_block_size(int group = 0) const {
    return groups[static_cast<size_t>(group)].gpu_block_size * block_size_factor;
  }
  Status Validate() const;
};

// What the connector needs of a request. `block_hashes` are the request's prefix-cache hashes
// at hash_block_size of its known tokens (prompt + sampled), as KvCacheManager::block_hashes.
struct OffloadRequestView {
  OffloadRequestId id = 0;
  int64_t num_tokens = 0;           // known tokens (async: see BuildStoreJobs)
  int64_t num_prompt_tokens = 0;
  int64_t num_computed_tokens = 0;  // before this step's chunk (store jobs only)
  std::span<const BlockHash> block_hashes;
};

// Result of a lookup: `deferred` = try again next step; else `tokens` = e, the CPU hit beyond g
// (0, or ≥ one offloaded block, with g + e a multiple of the offloaded block size).
struct CpuHit {
  bool deferred = false;
  int64_t tokens = 0;
};

// One load job (update_state_after_alloc): per group, GPU blocks [first_gpu_block,
// first_gpu_block + num_gpu_blocks) of the request's block table are filled from offloaded blocks
// [first_cpu_block, end_cpu_block), skipping the first `skip_gpu_blocks` GPU-sized sub-blocks of
// the first one (a partly needed first CPU block is read from the middle).
struct LoadGroupPlan {
  int64_t first_gpu_block = 0;
  int64_t num_gpu_blocks = 0;
  int64_t first_cpu_block = 0;
  int64_t end_cpu_block = 0;
  int64_t skip_gpu_blocks = 0;
};
struct LoadJob {
  OffloadJobId id = -1;
  OffloadRequestId request = 0;
  std::vector<LoadGroupPlan> groups;
  std::vector<OffloadKey> keys;        // the source blocks, group by group
  std::vector<int64_t> block_indices;  // offloaded-block index of each key in the request
  std::vector<int32_t> cpu_slots;      // parallel to keys
};

// Where an evicted CPU block came from: offloaded block `block_index` of `request`, the request
// whose store put it in the tier (the step log names it "rid#i").
struct StoreOrigin {
  OffloadRequestId request = 0;
  int64_t block_index = 0;
};
struct EvictedOffloadBlock {
  OffloadKey key;
  int32_t slot = -1;
  StoreOrigin origin;
};

struct StoreJob {
  OffloadJobId id = -1;
  OffloadRequestId request = 0;
  std::vector<OffloadKey> keys;         // blocks stored (already-resident ones left out)
  std::vector<int64_t> block_indices;   // offloaded-block index of each key in the request
  std::vector<int32_t> cpu_slots;       // parallel to keys
  std::vector<EvictedOffloadBlock> evicted;
};

// A request considered by BuildStoreJobs.
struct StoreCandidate {
  enum class Kind : uint8_t { kRunning, kNew, kResumed, kFinished };
  OffloadRequestView req;
  int64_t num_scheduled_tokens = 0;  // this step's chunk (0 for finished requests)
  Kind kind = Kind::kRunning;
  // Optional: true when GPU block `gpu_block_index` of `group` is the null block (outside a
  // sliding window, Mamba padding); such offloaded blocks are not stored. Empty = none are.
  std::function<bool(int group, int64_t gpu_block_index)> is_null_block;
};

// The order in which _build_store_jobs visits a step's requests. `scheduled` is the step's
// scheduler order (running requests first, then those taken from the waiting queue in admission
// order, then — latest only — the requests finished in this step, kind kFinished).
//   classic (yield_req_data): new requests, then running ones, then resumed ones; finished are
//           not visited;
//   latest:  scheduler order, then the finished ones.
std::vector<const StoreCandidate*> StoreVisitOrder(VllmSemantics semantics,
                                                   std::span<const StoreCandidate> scheduled);

// A store that could not get room in the tier this step (logged by vLLM as "cannot store
// blocks"); the request's cursor did not move, so the same blocks are tried again next step.
struct StoreFailure {
  OffloadRequestId request = 0;
  int64_t num_blocks = 0;
};

class OffloadConnector {
 public:
  // `config` must pass Validate() (checked).
  explicit OffloadConnector(const OffloadConnectorConfig& config);

  const OffloadConnectorConfig& config() const { return config_; }

  // get_num_new_matched_tokens(request, g), called by schedule() for a waiting request with no
  // computed tokens, after the GPU lookup found g tokens. Scans the CPU tier from offloaded
  // block g // obs, touches all of the request's keys whatever the result, and counts the
  // scanned keys for store_threshold. Deferred when a scanned key's store is still in flight or
  // (GPU prefix caching on) a hit block is being loaded for another request.
  CpuHit Lookup(const OffloadRequestView& req, int64_t gpu_hit_tokens);

  // update_state_after_alloc, called after allocate_slots succeeded for g + e tokens. With e > 0
  // it pins the source blocks, plans the load job and moves the store cursor past the hit
  // (cdiv(g + e, obs)); with e == 0 it does nothing. `first_pending_gpu_block`, per group, is the
  // first GPU block of the request that is neither a local hit nor null (default g / bs).
  std::optional<LoadJob> OnAllocated(const OffloadRequestView& req, int64_t gpu_hit_tokens,
                                     int64_t cpu_hit_tokens,
                                     std::span<const int64_t> first_pending_gpu_block = {});

  // _build_store_jobs, called at the end of every schedule() with the step's requests in
  // StoreVisitOrder. Per request: blocks [next_stored_block_idx, num_offloadable // obs) where
  // num_offloadable = min(num_computed + num_scheduled, num_tokens) (latest: also ≤ the prompt);
  // under async scheduling pass num_tokens without the tokens still in flight. One job per
  // request that stores something; a failed store keeps the cursor and is reported in
  // `failures`; a successful job touches all of the request's keys.
  std::vector<StoreJob> BuildStoreJobs(std::span<const StoreCandidate* const> in_order,
                                       std::vector<StoreFailure>* failures = nullptr);

  // update_connector_output: job `id` finished on every worker. A store makes its blocks ready
  // (visible to lookups from the next schedule()); a load unpins its source blocks.
  void CompleteJob(OffloadJobId id);

  // request_finished: called when the request finishes (with the step's outputs, before the
  // next schedule()). Its state is kept through the next BuildStoreJobs (latest visits the
  // requests finished in the step) and until its in-flight copies complete.
  void RequestFinished(OffloadRequestId id);

  // After a load covering every known token (g + e == num_tokens), vLLM recomputes the last
  // token: the request resumes at num_tokens − 1 (_update_waiting_for_remote_kv).
  static int64_t ComputedTokensAfterLoad(int64_t num_tokens, int64_t loaded_tokens) {
    return loaded_tokens >= num_tokens ? num_tokens - 1 : loaded_tokens;
  }

  // ---- Queries ----
  const CpuOffloadTier& tier() const { return tier_; }
  CpuOffloadTier& mutable_tier() { return tier_; }
  bool has_request(OffloadRequestId id) const { return reqs_.count(id) != 0; }
  int64_t next_stored_block_idx(OffloadRequestId id, int group = 0) const;
  // In-flight jobs of a request (what vLLM flushes when the request is preempted).
  std::vector<OffloadJobId> InFlightJobs(OffloadRequestId id) const;
  bool is_store_job(OffloadJobId id) const;
  int64_t num_jobs_in_flight() const { return static_cast<int64_t>(jobs_.size()); }
  std::optional<StoreOrigin> origin(const OffloadKey& key) const;
  bool being_loaded(const OffloadKey& key) const { return being_loaded_.count(key) != 0; }

 private:
  struct GroupState {
    std::vector<OffloadKey> keys;
    int64_t next_stored_block_idx = 0;
    int64_t num_hit_blocks = 0;  // (g + e) // obs at the request's first lookup
  };
  struct RequestState {
    std::vector<GroupState> groups;
    int64_t gpu_hit_tokens = 0;  // g of the last lookup
    std::unordered_set<OffloadJobId> jobs;
    bool finished = false;
    bool store_step_seen = false;  // a BuildStoreJobs ran since it finished
  };
  struct Job {
    OffloadRequestId request;
    bool is_store;
    std::vector<OffloadKey> keys;
  };

  RequestState& StateOf(const OffloadRequestView& req, bool* created = nullptr);
  void UpdateKeys(RequestState& st, const OffloadRequestView& req) const;
  CpuHit FindHit(RequestState& st, int64_t num_tokens, int64_t g);
  int64_t SlidingWindowLookup(std::span<const OffloadKey> keys, int64_t window, bool* deferred);
  void TouchRequest(const RequestState& st);
  void MaybeForget(OffloadRequestId id);

  OffloadConnectorConfig config_;
  CpuOffloadTier tier_;
  std::vector<int> lookup_groups_;      // full attention first, then windows, largest first
  std::vector<int> window_groups_;
  std::unordered_map<OffloadRequestId, RequestState> reqs_;
  std::unordered_map<OffloadJobId, Job> jobs_;
  OffloadJobId next_job_id_ = 0;
  OffloadKeySet being_loaded_;  // only with GPU prefix caching
  std::unordered_map<OffloadKey, StoreOrigin, OffloadKeyHasher> origins_;
};

// vLLM's CPU tier size in offloaded blocks from bytes (CPUOffloadingSpec): `gpu_block_bytes` is
// one GPU block across all layers and ranks (sum of KV tensor bytes // num_gpu_blocks, times the
// world size). classic: cpu_bytes // (gpu_block_bytes · f); latest rounds the offloaded block's
// bytes up to the 4096-byte page first.
int64_t NumCpuBlocksFromBytes(int64_t cpu_bytes, int64_t gpu_block_bytes, int64_t block_size_factor,
                              VllmSemantics semantics);

}  // namespace kvsim
