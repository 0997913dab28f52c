// KvGroupPolicy: the extension point that holds the rules of one kind of KV cache group —
// vLLM v1's single-type managers (reference §5.3–5.4): full attention, sliding window,
// chunked local attention, Mamba `align` and Mamba `all`. The KV cache manager
// (core/kv_cache_manager.h) owns the request table, the shared BlockPool and the hybrid
// coordinator; it asks each group's policy every kind-specific question and never branches on
// the kind itself. A policy is immutable after construction and owns nothing but its group's
// configuration: the blocks live in the pool, a request's block table for the group
// (GroupBlockTable) in the manager, and both are passed in.
//
// Contract (all lengths in tokens unless named blocks; B = the group's block size):
//   - FindHit(L, drop_eagle, cached, put, buf): vLLM's find_longest_cache_hit over the
//     request's first L tokens, dropping the EAGLE block if asked. Works in blocks of B,
//     returns the hit length n in blocks (the hit is n·B tokens, a multiple of the scheduler
//     block unless the kind says otherwise). Positions it found cached are reported through
//     `put(j, blocks)`; positions below n never put are null blocks (skipped); the caller
//     truncates its list to n afterwards (a finder may put positions it later drops).
//     `cached(j, out)` says whether block j is cached in every group of the lookup unit and,
//     if `out` is non-null, writes one block id per group.
//     The finders are templates over `cached`/`put` (next to each policy), so tests run them
//     against plain cached/not-cached patterns (§8.12, §8.14).
//   - hit_is_prefix_closed(): every prefix of a hit is a hit (full attention), so the
//     coordinator looks this kind up first and later only truncates its hit.
//   - NumSkippedTokens(n): tokens at the front that a request with n computed tokens no
//     longer reads (vLLM's get_num_skipped_tokens); their blocks can become null.
//   - NumNewBlocks(demand, hit blocks, table, cap): blocks the group must take from the free
//     queue for `demand` (vLLM's get_num_blocks_to_allocate, without the evictable hit
//     blocks, which the manager counts for every kind alike). `cap` > 0 caps the blocks a
//     request can hold at once (MaxBlocksPerRequest, the whole-sequence admission check).
//   - AllocateNewBlocks(demand, table, pool): grows the table to cover `demand`; the manager
//     has checked that the pool has the blocks NumNewBlocks asked for.
//   - RemoveSkippedBlocks(n, table, pool): frees the blocks that fell out of reach once n
//     tokens are processed, back to front, replacing them with the null block.
//   - retention_can_be_sparse() / RetentionMask: [latest] sparse retention
//     (prefix_cache_retention_interval; docs/vllm-latest-hybrid.md §2): which of blocks
//     [start, end) a group hashes when they become full — only those a later hit could end
//     on: segment tails (one per k-token segment when the interval k > 0) and the request's
//     reachable boundaries (its replay boundary and shared-prefix junction, floored to the
//     scheduler block). Returns false when every block is to be cached (dense).
//   - defers_hits_cached_this_step(): a hit whose last block was cached during the current
//     step waits a step (Mamba, §5.4).
//   - aligns_prefill_chunks() / AlignPrefillChunk: the group trims prefill chunks (Mamba
//     `align`'s _mamba_block_aligned_split, §6); identity otherwise.
// Policies: full_attention_policy.h, sliding_window_policy.h, chunked_local_policy.h,
// mamba_policy.h (what both Mamba modes share), mamba_align_policy.h, mamba_all_policy.h;
// MakeKvGroupPolicy (kv_group_policy.cc) is the registry.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/block_hash.h"
#include "core/block_pool.h"
#include "core/kv_group/kv_group_config.h"
#include "core/types.h"
#include "core/vllm_semantics.h"

namespace kvsim {

// The manager-wide settings a group's rules depend on, fixed at construction.
struct KvGroupContext {
  VllmSemantics semantics = VllmSemantics::kLatest;
  bool use_eagle = false;                 // EAGLE/MTP: hits drop their last block
  int64_t scheduler_block_size = 16;      // hits end on multiples of it
  int64_t hash_block_size = 16;           // the hashing granularity (resolved)
  bool prefix_match_unit = false;         // hash_block_size was set explicitly (finer hits)
  int64_t max_num_batched_tokens = 8192;  // in-flight tokens for the window/chunk caps
  int64_t retention_interval = -1;        // effective: −1 dense, 0 boundaries only, k > 0
};

// One request's blocks in one group, owned by the manager's request table.
struct GroupBlockTable {
  std::vector<BlockId> blocks;  // block j holds tokens [j·B, (j+1)·B); null = skipped
  int64_t num_cached = 0;       // blocks [0, num_cached) are cached (or were left unhashed)
  // Mamba `align` only: the state blocks were allocated before (vLLM's
  // _allocated_block_reqs), and the index of the previous running state, freed once the
  // state has moved on (last_state_block_idx), or −1.
  bool state_allocated = false;
  int64_t last_state = -1;
};

// What an allocation must cover, in tokens (capped at max_model_len by the manager).
struct SlotDemand {
  int64_t num_tokens = 0;       // tokens that need slots, lookahead slots included
  int64_t num_tokens_main = 0;  // the same without lookahead slots
  int64_t num_computed = 0;     // computed tokens, the hit and loaded tokens included
};

// A prefill chunk a group may trim (AlignPrefillChunk).
struct PrefillChunk {
  int64_t start = 0;           // where the chunk starts (computed + hit)
  int64_t num_new_tokens = 0;  // its length before trimming
  int64_t num_tokens = 0;      // the request's known tokens
  int64_t num_prompt_tokens = 0;
  int64_t junction = 0;     // [latest] the request's shared-prefix junction, 0 = none
  int64_t chunk_limit = 0;  // the most tokens a step can give one request
};

// `cached` for the finders over the pool: block j of a lookup unit (groups `gids` of one
// spec) is cached iff every group has a cached block under the request's hash at the end of
// block j (hash index (j+1)·hash_ratio − 1).
class HitProbe {
 public:
  HitProbe(const BlockPool& pool, const BlockHash* hashes, int64_t hash_ratio,
           std::span<const int32_t> gids)
      : pool_(&pool), hashes_(hashes), ratio_(hash_ratio), gids_(gids) {}
  bool operator()(int64_t j, BlockId* out) const {
    const BlockHash hv = hashes_[static_cast<size_t>((j + 1) * ratio_ - 1)];
    for (size_t q = 0; q < gids_.size(); ++q) {
      const BlockId b = pool_->GetCachedBlock(hv, gids_[q]);
      if (b == kNoBlock) return false;
      if (out != nullptr) out[q] = b;
    }
    return true;
  }

 private:
  const BlockPool* pool_;
  const BlockHash* hashes_;
  int64_t ratio_;
  std::span<const int32_t> gids_;
};

// `put` for the finders: records position j of every group of the lookup unit in the
// manager's per-group hit lists (null when `blocks` is null), growing them with nulls.
class HitSink {
 public:
  HitSink(std::vector<std::vector<BlockId>>& hit_blocks, std::span<const int32_t> gids)
      : hit_blocks_(&hit_blocks), gids_(gids) {}
  void operator()(int64_t j, const BlockId* blocks) const {
    for (size_t q = 0; q < gids_.size(); ++q) {
      auto& v = (*hit_blocks_)[static_cast<size_t>(gids_[q])];
      if (static_cast<int64_t>(v.size()) <= j) v.resize(static_cast<size_t>(j + 1), kNullBlock);
      v[static_cast<size_t>(j)] = blocks != nullptr ? blocks[q] : kNullBlock;
    }
  }

 private:
  std::vector<std::vector<BlockId>>* hit_blocks_;
  std::span<const int32_t> gids_;
};

class KvGroupPolicy {
 public:
  KvGroupPolicy(const KvGroupConfig& group, const KvGroupContext& context)
      : group_(group), context_(context) {}
  virtual ~KvGroupPolicy() = default;
  KvGroupPolicy(const KvGroupPolicy&) = delete;
  KvGroupPolicy& operator=(const KvGroupPolicy&) = delete;

  const KvGroupConfig& group() const { return group_; }
  const KvGroupContext& context() const { return context_; }
  int64_t block_size() const { return group_.block_size; }

  // ---- Prefix hits ---------------------------------------------------------------------
  // `drop_eagle`: this lookup drops the EAGLE/MTP block (the coordinator decides, once per
  // candidate length); kinds whose hits never drop it (chunked local, Mamba) ignore it.
  virtual int64_t FindHit(int64_t max_length, bool drop_eagle, const HitProbe& cached,
                          const HitSink& put, BlockId* buf) const = 0;
  // The hit finder drops the EAGLE block when asked, so the coordinator looks one block
  // further (vLLM's eagle_margin) to land back on the candidate length.
  virtual bool hit_drops_eagle_block() const { return false; }
  virtual bool hit_is_prefix_closed() const { return false; }
  virtual bool defers_hits_cached_this_step() const { return false; }

  // ---- Allocation ----------------------------------------------------------------------
  virtual int64_t NumSkippedTokens(int64_t num_computed_tokens) const = 0;
  // The most blocks a request can hold at once when its whole sequence is `max_len`
  // tokens, or 0 (no bound below cdiv(max_len, B)).
  virtual int64_t MaxBlocksPerRequest(int64_t max_len) const {
    (void)max_len;
    return 0;
  }
  // The defaults are the rules of a group that keeps one block per B tokens and may skip a
  // front it no longer reads (vLLM's SingleTypeKVCacheManager).
  virtual int64_t NumNewBlocks(const SlotDemand& demand, int64_t num_hit_blocks,
                               const GroupBlockTable& table, int64_t cap_blocks) const;
  virtual void AllocateNewBlocks(const SlotDemand& demand, GroupBlockTable& table,
                                 BlockPool& pool) const;
  // `scratch` is the caller's buffer (no allocation per call).
  virtual void RemoveSkippedBlocks(int64_t num_computed_tokens, GroupBlockTable& table,
                                   BlockPool& pool, std::vector<BlockId>& scratch) const;

  // ---- Caching -------------------------------------------------------------------------
  virtual bool retention_can_be_sparse() const { return false; }
  // `boundaries`: the request's reachable hit boundaries, in tokens.
  virtual bool RetentionMask(int64_t start, int64_t end, std::span<const int64_t> boundaries,
                             std::vector<uint8_t>& mask) const {
    (void)start, (void)end, (void)boundaries, (void)mask;
    return false;
  }

  // ---- Prefill chunks ------------------------------------------------------------------
  virtual bool aligns_prefill_chunks() const { return false; }
  virtual int64_t AlignPrefillChunk(const PrefillChunk& chunk) const {
    return chunk.num_new_tokens;
  }

 private:
  KvGroupConfig group_;
  KvGroupContext context_;
};

// The registry: the policy of a group's kind (and Mamba mode).
std::unique_ptr<KvGroupPolicy> MakeKvGroupPolicy(const KvGroupConfig& group,
                                                 const KvGroupContext& context);

}  // namespace kvsim
