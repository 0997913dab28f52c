// KvCacheManager: vLLM v1's prefix-caching KV cache manager (reference §5.3–5.6) — the
// per-group-type managers (full attention, sliding window, chunked local, Mamba `align` and
// `all`) behind the hybrid coordinator, over one shared BlockPool. The rules of each group
// type are its KvGroupPolicy (core/kv_group/); this class is the request table, the
// coordinator's fixed point over the groups' hits, and the block-count math of
// allocate_slots that is the same for every type.
//
// Who owns what
//   - The manager owns the BlockPool, one policy per group, and a table of the requests it
//     knows, addressed by a RequestHandle (core/types.h: a small slot index; slots are
//     reused; nothing is allocated per block in the steady state). Per request it keeps the
//     block table of every group (GroupBlockTable: the blocks, how many are cached, the
//     Mamba `align` bookkeeping) and the chained block hashes of the request's tokens.
//   - The caller (the scheduler, or the replay driver) owns the request's *progress*:
//     num_computed_tokens, status, queues, and the decision of what to schedule. It passes
//     num_computed_tokens into every call instead of the manager mirroring it, so the two can
//     never drift (on preemption the caller sets it to 0 and calls Free).
//   - Token ids are appended by the caller: the prompt at AddRequest, then each *accepted*
//     output token through AppendTokens. Draft (speculative) tokens are never appended, so
//     they are never hashed or cached; lookahead slots are allocated but never cached.
//
// Call protocol (mirrors vLLM's Scheduler.schedule, reference §6)
//   h = AddRequest(prompt, keys)                       when the request arrives
//   each step, for a RUNNING request:
//     AllocateSlots(h, computed, n, 0, lookahead)      false → preempt someone and retry
//   for a WAITING / PREEMPTED request (num_computed_tokens == 0):
//     hit = GetComputedBlocks(h, 0)                    the prefix hit (no side effects)
//     n   = MambaAlignedSplit(...) where a Mamba align group exists
//     AllocateSlots(h, 0, n, hit.num_tokens, lookahead, /*full_sequence_must_fit=*/true)
//   after the step's outputs:  AppendTokens(h, accepted tokens)
//   preemption:               Free(h); caller sets num_computed_tokens = 0
//   finish / abort:           RemoveRequest(h)  (frees, then forgets the request)
// The hit that GetComputedBlocks finds is remembered for that handle and consumed by the next
// AllocateSlots(h, ...) with num_new_computed_tokens == hit.num_tokens; any other mutating
// call in between (on any request) invalidates it (checked).
//
// What each call may mutate
//   GetComputedBlocks: nothing observable (the prefix-cache stats counters only).
//   AllocateSlots: on success, touches the hit blocks (they leave the free queue), takes new
//     blocks from the head of the free queue (evicting their old hashes), and caches the
//     request's newly full blocks. On failure it changes nothing, except that blocks which
//     fell out of a sliding window (or old Mamba states) may already have been freed —
//     exactly as in vLLM, where remove_skipped_blocks runs first.
//   AppendTokens: only the request's hash list (new full blocks get hashes; they are cached
//     by the next AllocateSlots).
//   Free / RemoveRequest / RemoveSkippedBlocks: give blocks back to the free queue (in reverse
//     order), never touching other requests.
//
// Semantics knobs: VllmSemantics picks the snapshot (classic 2026-05 vs latest 2026-08-18,
// §0; docs/vllm-latest-hybrid.md has the latest-only rules with worked examples):
//   - the free-queue order (unhashed blocks to the head in latest);
//   - [latest] sparse retention (prefix_cache_retention_interval, default 0): sliding-window
//     and Mamba groups cache only the blocks a hit can end on at the request's replay
//     boundary (num_prompt_tokens − 1, floored to the scheduler block), at its shared-prefix
//     junction, and (interval k > 0) at the end of every k-token segment; `null` is dense.
//     Classic is always dense (every reachable full block that holds a real block is cached);
//   - [latest] the shared-prefix junction: a lookup whose lagging sparse group stops short of
//     the longest single-group hit remembers that longest hit on the request; the retention
//     mask keeps it and MambaAlignedSplit ends a prefill chunk there (floored to a block).
// The Mamba "hit cached in the current step is deferred" rule (§5.4) applies once a stepping
// caller calls NewStepStarts (replay never does). Not modelled: partial (sub-block) hits of a
// finer prefix_match_unit.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "core/block_hash.h"
#include "core/block_pool.h"
#include "core/kv_group/kv_group_config.h"
#include "core/page_planner.h"
#include "core/status.h"
#include "core/types.h"
#include "core/vllm_semantics.h"

namespace kvsim {

struct KvCacheManagerConfig {
  std::vector<KvGroupConfig> groups;      // in vLLM's group order (group id = index)
  int64_t num_blocks = 0;                 // vLLM's num_gpu_blocks, including the null block
  int64_t max_model_len = 0;              // 0 = unbounded
  int64_t max_num_batched_tokens = 8192;  // in-flight tokens for the SWA/chunked caps
  bool enable_caching = true;
  bool use_eagle = false;  // EAGLE/MTP: drop the last hit block (§5.4)
  VllmSemantics semantics = VllmSemantics::kLatest;
  int64_t hash_block_size = 0;  // 0 = derived as vLLM does (§5.1); > 0 = prefix_match_unit
  // CacheConfig.prefix_cache_retention_interval [latest]: kRetentionProfileDefault (0 in
  // latest, dense in classic), kRetentionDense (`null`: every reachable block), 0 (replay
  // boundary and junctions only) or k > 0 (also one checkpoint per k-token segment).
  static constexpr int64_t kRetentionDense = -1;
  static constexpr int64_t kRetentionProfileDefault = -2;
  int64_t prefix_cache_retention_interval = kRetentionProfileDefault;
  // Tests only: run the general hybrid coordinator even for a single full-attention group
  // (which otherwise takes a specialized lookup), so the two can be compared.
  bool disable_fast_paths = false;

  // LCM of the group block sizes: hits and hybrid caching are multiples of it.
  int64_t scheduler_block_size() const;
  // The hashing granularity: one group → its block size; several → their GCD, or the LCM when
  // any Mamba group is not in `align` mode.
  int64_t resolved_hash_block_size() const;
  bool has_mamba_align() const;
  // The retention in force: kRetentionDense or an interval ≥ 0 (profile default resolved).
  int64_t effective_retention_interval() const;
  Status Validate() const;
};

// From the page planner's plan (groups, block sizes, num_blocks, Mamba mode, semantics).
Result<KvCacheManagerConfig> KvCacheManagerConfigFromPlan(const KvCachePlan& plan);
// The replay shorthand: one full-attention group plus, unless `hybrid` is "" or "none", one
// group of `mamba-align`, `mamba-all` or `swa:W`, all at `block_size`.
Result<KvCacheManagerConfig> KvCacheManagerConfigFromHybrid(std::string_view hybrid,
                                                            int64_t block_size, int64_t num_blocks);

struct PrefixHit {
  int64_t num_tokens = 0;  // hit tokens: block-aligned (scheduler block), ≤ num_tokens − 1
  // [latest] the longest hit any single group type found (≥ num_tokens): the end of a shared
  // prefix whose state is not cached everywhere (Marconi junction). Equals num_tokens in
  // classic and for single-group models.
  int64_t shared_prefix_tokens = 0;
  // vLLM's shared_prefix_boundary as get_computed_blocks returns it: shared_prefix_tokens
  // when it exceeds num_tokens (a sparse group lags), else 0. Always 0 in classic.
  int64_t shared_prefix_boundary() const {
    return shared_prefix_tokens > num_tokens ? shared_prefix_tokens : 0;
  }
};

struct PrefixCacheStats {
  int64_t requests = 0;      // lookups done
  int64_t query_tokens = 0;  // Σ num_tokens of looked-up requests
  int64_t hit_tokens = 0;    // Σ hit tokens
};

class KvCacheManager {
 public:
  // `config` must pass Validate() (checked).
  explicit KvCacheManager(const KvCacheManagerConfig& config);
  ~KvCacheManager();
  KvCacheManager(const KvCacheManager&) = delete;
  KvCacheManager& operator=(const KvCacheManager&) = delete;

  const KvCacheManagerConfig& config() const { return config_; }
  int num_groups() const { return static_cast<int>(config_.groups.size()); }

  // ---- Request table -------------------------------------------------------------------
  // Registers a request with its prompt and hashes the prompt's full blocks. `keys` (LoRA,
  // salt, multimodal items) is copied when non-empty.
  RequestHandle AddRequest(std::span<const TokenId> prompt, const RequestKeys& keys = {});
  // The same as AddRequest(prompt) without extra keys, with the prompt given as the chained
  // hashes of its full blocks at config().resolved_hash_block_size() (what HashFullBlocks
  // computes from kNoneHash) plus the tokens of its unfinished last block. Lets replay hash
  // straight from a trace's hash ids without materializing the tokens.
  RequestHandle AddRequestWithHashes(std::span<const BlockHash> block_hashes,
                                     std::span<const TokenId> tail);
  // Accepted output tokens (never drafts): extends the hash list.
  void AppendTokens(RequestHandle h, std::span<const TokenId> tokens);
  // Free(h), then forget the request; the handle may be reused by a later AddRequest.
  void RemoveRequest(RequestHandle h);
  int64_t num_tokens(RequestHandle h) const;
  int64_t num_prompt_tokens(RequestHandle h) const;
  int64_t num_live_requests() const { return num_live_; }

  // ---- Scheduling ----------------------------------------------------------------------
  // vLLM's get_computed_blocks: the longest prefix hit across groups, capped at
  // num_tokens − 1 and aligned to the scheduler block size. Only looks when
  // num_computed_tokens == 0 and caching is on; otherwise returns {0, 0}. A lookup
  // (num_computed_tokens == 0) also stores the hit's shared_prefix_boundary() on the request,
  // as vLLM's scheduler does, for the retention mask and MambaAlignedSplit.
  PrefixHit GetComputedBlocks(RequestHandle h, int64_t num_computed_tokens);

  // vLLM's allocate_slots. `num_computed_tokens`: tokens that already have slots (the
  // request's num_computed_tokens); `num_new_computed_tokens`: the prefix hit being admitted
  // (0, or exactly the last GetComputedBlocks(h) result); `num_new_tokens`: tokens to compute
  // now (including scheduled draft tokens); lookahead slots are allocated but never cached.
  // With `full_sequence_must_fit`, the whole request (num_tokens) must fit first.
  // Returns false, with nothing changed (but see remove_skipped above), when out of blocks.
  // `num_in_flight_tokens` [latest]: tokens of num_computed_tokens scheduled but not yet
  // processed (async scheduling); out-of-window blocks are freed only up to the processed
  // tokens (classic frees up to num_computed_tokens).
  // A connector's load: `num_external_computed_tokens` more tokens after the hit get slots as
  // if computed (their KV is copied in); with `delay_cache_blocks` nothing is cached now
  // (CacheBlocks once the load is done). `watermark_blocks` [latest]: free blocks that must
  // remain beyond the allocation (both checks; the scheduler passes it for waiting requests
  // while others run). `reserved_blocks` [latest]: free blocks the
  // allocation must leave to in-flight prefills (not counted by the whole-sequence check).
  bool AllocateSlots(RequestHandle h, int64_t num_computed_tokens, int64_t num_new_tokens,
                     int64_t num_new_computed_tokens = 0, int64_t num_lookahead_tokens = 0,
                     bool full_sequence_must_fit = false, int64_t num_in_flight_tokens = 0,
                     int64_t num_external_computed_tokens = 0, bool delay_cache_blocks = false,
                     int64_t reserved_blocks = 0, int64_t watermark_blocks = 0);

  // vLLM's cache_blocks(request, num_tokens): caches the request's full blocks up to
  // min(num_tokens, its appended tokens). AllocateSlots does this for the tokens it covers;
  // async scheduling also calls it when a step's outputs arrive for a running request.
  void CacheBlocks(RequestHandle h, int64_t num_tokens);

  // vLLM's new_step_starts, called by a stepping scheduler at the start of every step. From
  // the first call on, a Mamba hit whose state block was cached during the current step is
  // deferred (§5.4, MambaManager.cached_blocks_this_step): AllocateSlots with that hit
  // returns false, as vLLM's "not enough blocks", so the request waits a step. [latest]
  // only states that actually got a hash count. Never called (replay): no deferral.
  void NewStepStarts();

  // Frees every block of the request in reverse order (group by group); the request keeps its
  // hashes (preemption by recompute). Idempotent.
  void Free(RequestHandle h);

  // Frees blocks that fell out of a sliding window / chunk / old Mamba states, given the
  // tokens actually processed. AllocateSlots calls it first; callers rarely need to.
  void RemoveSkippedBlocks(RequestHandle h, int64_t num_computed_tokens);

  // The Mamba `align` chunk split (_mamba_block_aligned_split, §6): trims `num_new_tokens`
  // so a prefill chunk that does not finish the prompt ends on a block boundary and never
  // runs past the last cacheable boundary. `num_computed_tokens` is where the chunk starts
  // (computed + hit). `chunk_limit` is the most tokens a step can ever give one request
  // (min of the token budget and long_prefill_token_threshold): chunks are rounded down to a
  // block only when a block fits it. Identity when no Mamba align group exists.
  // [latest] (step-log §9) the chunk also stops at the first of: the next block boundary
  // when it starts mid-block, the last cacheable boundary, the prompt's last hash boundary
  // (finer prefix_match_unit), and the request's shared-prefix junction floored to a block
  // (the one its last lookup stored; `shared_prefix_tokens` is used only when the request
  // has none, so callers may pass the hit's value or 0). It also applies to a resumed
  // request replaying its output tokens (start < max(prompt, num_tokens − 1)).
  // [classic] the junction argument is ignored.
  int64_t MambaAlignedSplit(RequestHandle h, int64_t num_computed_tokens, int64_t num_new_tokens,
                            int64_t shared_prefix_tokens, int64_t chunk_limit) const;

  // ---- Queries -------------------------------------------------------------------------
  std::span<const BlockId> blocks(RequestHandle h, int group) const;
  std::span<const BlockHash> block_hashes(RequestHandle h) const;
  int64_t num_free_blocks() const { return pool_.num_free_blocks(); }
  double usage() const { return pool_.usage(); }
  const BlockPool& pool() const { return pool_; }
  BlockPool& mutable_pool() { return pool_; }
  const PrefixCacheStats& stats() const { return stats_; }
  // Blocks the request needs beyond those it holds for all its tokens (capped at
  // max_model_len): vLLM's _request_remaining_blocks.
  int64_t RemainingBlocks(RequestHandle h) const;
  // Blocks a fresh request of `num_tokens` tokens needs with no hit (admission math only).
  int64_t BlocksNeededFresh(int64_t num_tokens) const;
  // Drops the whole prefix cache; only when no request holds blocks (true on success).
  bool ResetPrefixCache();

  // Pool invariants plus: every held block reference is accounted for by exactly one request
  // table entry (ref counts == table references), cached-block counts are in range.
  void CheckInvariants() const;

  struct RequestState;  // defined in the .cc

 private:
  struct Impl;
  KvCacheManagerConfig config_;
  BlockPool pool_;
  PrefixCacheStats stats_;
  int64_t num_live_ = 0;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvsim
