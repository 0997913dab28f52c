// BlockPool: the shared pool of KV block ids of vLLM v1 (reference §5.2) — ref counts, the
// free queue in eviction order, the prefix-cache map (hash, group) → blocks, and the null
// block. Every KV cache group draws its block ids from one pool.
//
// The pool is a composition of parts that each have their own header, so that another pool
// (another policy, another record) can reuse them the way LevelDB's util/cache.cc builds on
// its HandleTable:
//   - core/block_hash_map.h     the cache map (open addressing, duplicate keys chained);
//   - core/free_block_queue.h   the free queue (a ring of ids with tombstones);
//   - core/block_eviction_policy.h  where a released block joins the free queue;
//   - core/large_array.h        huge-page-backed memory for the big arrays.
// What stays here is the block record and the operations that keep the parts consistent.
//
// Data layout (why it is fast): blocks live in one flat array of 32-byte records indexed by
// BlockId, holding the block's ref count, its key, its link in its key's chain (the map's)
// and its free-queue position (the queue's), so a block costs one cache line touch; the hot
// loops prefetch records and map buckets ahead. No operation allocates memory after
// construction.
//
// Invariants (checked by CheckInvariants(), called after every operation in tests):
//   - block 0 is the null block: never in the free queue, never hashed, ref count unused;
//   - a block is in the free queue iff its ref count is 0 (num_free_blocks() counts them);
//   - a block is in the cache map iff it has a hash, under exactly its (hash, group);
//   - num_free + #{blocks with ref > 0} == num_blocks − 1 (block conservation);
//   - plus the map's and the queue's own (see their headers).
//
// Ownership: the pool owns all block state. Callers (the KV cache manager) hold block ids
// in their per-request block tables and must give every reference back through FreeBlocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/block_eviction_policy.h"
#include "core/block_hash.h"
#include "core/block_hash_map.h"
#include "core/free_block_queue.h"
#include "core/large_array.h"
#include "core/types.h"
#include "core/vllm_semantics.h"

namespace kvsim {

class BlockPool {
 public:
  // `num_blocks` includes the null block (vLLM's num_gpu_blocks). With caching off nothing is
  // ever hashed and (latest) every freed block goes to the head.
  BlockPool(int64_t num_blocks, bool enable_caching = true,
            VllmSemantics semantics = VllmSemantics::kLatest);

  int64_t num_blocks() const { return num_blocks_; }
  int64_t num_free_blocks() const { return queue_.size(); }
  // vLLM's usage: 1 − free / (num_blocks − 1).
  double usage() const;
  bool enable_caching() const { return enable_caching_; }
  VllmSemantics semantics() const { return semantics_; }

  // Pops `n` blocks from the head of the free queue, evicting their hashes, and sets their
  // ref count to 1. Returns false (changing nothing) if fewer than `n` are free.
  bool GetNewBlocks(int64_t n, BlockId* out);
  // A prefix hit: for each non-null block, leave the free queue if ref is 0; ref += 1.
  void Touch(std::span<const BlockId> blocks);
  // Gives back one reference to each block, in the order given; blocks reaching 0 enter the
  // free queue where the eviction policy puts them ([classic] all at the tail; [latest]
  // hashed at the tail, unhashed at the head keeping their order). Null blocks are skipped.
  void FreeBlocks(std::span<const BlockId> blocks);
  // Frees a request's block table in reverse order (vLLM's `free`).
  void FreeBlocksReversed(std::span<const BlockId> blocks);

  // The first-inserted cached block of (hash, group), or kNoBlock.
  BlockId GetCachedBlock(BlockHash hash, int32_t group) const { return map_.Find(hash, group); }
  // Prefetch hint for a lookup that will follow soon (replay's hot loop).
  void PrefetchLookup(BlockHash hash, int32_t group) const { map_.Prefetch(hash, group); }
  // Gives `block` (held, not yet hashed) the hash and inserts it in the cache map.
  void CacheBlock(BlockId block, BlockHash hash, int32_t group);
  // CacheBlock(blocks[k], hashes[k · hash_stride], group) for k = 0..n−1 in that order, with
  // the map slots prefetched ahead (the allocation hot path). Null and already-cached blocks
  // are skipped.
  void CacheBlocks(const BlockId* blocks, const BlockHash* hashes, int64_t hash_stride, int64_t n,
                   int32_t group);
  // Removes a block's hash (vLLM's evict_blocks, used by connectors); true if it had one.
  bool EvictCachedBlock(BlockId block);
  // Drops every hash; only succeeds (true) when every block but the null block is free.
  bool ResetPrefixCache();

  // Per-block state, for the viewer and tests.
  int32_t ref_cnt(BlockId b) const { return blk_[static_cast<size_t>(b)].ref; }
  bool is_cached(BlockId b) const { return blk_[static_cast<size_t>(b)].group >= 0; }
  BlockHash block_hash(BlockId b) const { return blk_[static_cast<size_t>(b)].hash; }
  int32_t block_group(BlockId b) const { return blk_[static_cast<size_t>(b)].group; }
  void PrefetchBlock(BlockId b) const { __builtin_prefetch(&blk_[static_cast<size_t>(b)]); }
  // The free queue from head (next to be reused) to tail. O(num_free); for tests and views.
  std::vector<BlockId> FreeQueue() const { return queue_.Snapshot(); }
  int64_t num_cached_blocks() const { return num_cached_; }

  // Aborts (KVSIM_CHECK) on any broken invariant. O(num_blocks).
  void CheckInvariants() const;

 private:
  // One block's state in one 32-byte record, so a block costs one cache line touch. It is a
  // record of both parts: the queue keeps `pos`, the map keeps `dup_next`.
  struct Block {
    uint64_t pos;  // position in the free-queue ring; FreeBlockQueue::kNotQueued if held
    BlockHash hash;
    int32_t ref;
    int32_t group;     // −1: no hash
    BlockId dup_next;  // next block with the same key, insertion order
    int32_t pad;
  };
  static_assert(sizeof(Block) == 32);
  static_assert(ChainedBlockRecord<Block> && QueuedBlockRecord<Block>);

  template <bool kReversed>
  void FreeImpl(std::span<const BlockId> blocks);

  int64_t num_blocks_;
  bool enable_caching_;
  VllmSemantics semantics_;
  VllmEvictionPolicy policy_;
  int64_t num_cached_ = 0;

  LargeVector<Block> blk_;
  FreeBlockQueue queue_;
  BlockHashMap map_;              // ≥ num_blocks buckets: load ≤ 1/4 of the slots
  std::vector<BlockId> scratch_;  // FreeImpl's run of blocks bound for the head
};

}  // namespace kvsim
