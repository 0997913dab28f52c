#include "core/block_pool.h"

#include <algorithm>

#include "core/check.h"

namespace kvsim {
namespace {

// Checked before any array is sized: block ids are 32-bit and the null block always exists.
int64_t CheckedNumBlocks(int64_t num_blocks) {
  KVSIM_CHECK(num_blocks >= 1);
  KVSIM_CHECK(num_blocks < (int64_t{1} << 30));
  return num_blocks;
}

}  // namespace

BlockPool::BlockPool(int64_t num_blocks, bool enable_caching, VllmSemantics semantics)
    : num_blocks_(CheckedNumBlocks(num_blocks)),
      enable_caching_(enable_caching),
      semantics_(semantics),
      policy_(semantics),
      blk_(static_cast<size_t>(num_blocks_),
           Block{FreeBlockQueue::kNotQueued, 0, 0, -1, kNoBlock, 0}),
      queue_(num_blocks),
      map_(num_blocks) {
  scratch_.reserve(static_cast<size_t>(num_blocks));
  // Blocks 1..n-1 in id order; block 0 is the null block and never enters the queue.
  for (BlockId b = 1; b < static_cast<BlockId>(num_blocks); ++b) queue_.PushBack(blk_.data(), b);
}

double BlockPool::usage() const {
  if (num_blocks_ <= 1) return 0.0;
  return 1.0 - static_cast<double>(num_free_blocks()) / static_cast<double>(num_blocks_ - 1);
}

bool BlockPool::GetNewBlocks(int64_t n, BlockId* out) {
  if (n > queue_.size()) return false;
  // Take the ids off the head (a sequential scan of the ring), then evict in a software
  // pipeline: block k's record is prefetched kRec blocks ahead and, once it has arrived, the
  // map slot of its hash kSlot blocks ahead, so the random accesses of many blocks overlap
  // and the erase itself rarely waits on memory.
  queue_.PopFront(n, out);
  const BlockHashMap::View map = map_.view();
  Block* const blk = blk_.data();
  constexpr int64_t kRec = 96;
  constexpr int64_t kSlot = 48;
  auto prefetch_slot = [&](int64_t k) {
    const Block& a = blk[out[k]];
    if (a.group >= 0) map.Prefetch(a.hash, a.group);
  };
  for (int64_t k = 0; k < std::min(n, kRec); ++k) __builtin_prefetch(&blk[out[k]]);
  for (int64_t k = 0; k < std::min(n, kSlot); ++k) prefetch_slot(k);
  int64_t uncached = 0;
  for (int64_t k = 0; k < n; ++k) {
    if (k + kRec < n) __builtin_prefetch(&blk[out[k + kRec]]);
    if (k + kSlot < n) prefetch_slot(k + kSlot);
    Block& b = blk[out[k]];
    FreeBlockQueue::MarkTaken(b);
    b.ref = 1;
    if (b.group >= 0) {
      map.Erase(blk, out[k]);
      b.group = -1;
      ++uncached;
    }
  }
  num_cached_ -= uncached;
  return true;
}

void BlockPool::Touch(std::span<const BlockId> blocks) {
  // Leaving the free queue writes a tombstone at a random ring position: prefetch them all
  // first (the lookup that found these blocks already brought their records in).
  for (BlockId b : blocks) {
    const Block& k = blk_[static_cast<size_t>(b)];
    if (b != kNullBlock && k.ref == 0) queue_.PrefetchRemove(k);
  }
  for (BlockId b : blocks) {
    if (b == kNullBlock) continue;
    Block& k = blk_[static_cast<size_t>(b)];
    if (k.ref == 0) queue_.Remove(blk_.data(), b);
    ++k.ref;
  }
}

template <bool kReversed>
void BlockPool::FreeImpl(std::span<const BlockId> blocks) {
  // Room for every append up front, then plain stores; the blocks the policy sends to the
  // head are collected and put there as one run, in release order.
  Block* const blk = blk_.data();
  FreeBlockQueue::BackInserter tail = queue_.ReserveBack(blk, static_cast<int64_t>(blocks.size()));
  const VllmEvictionPolicy policy = policy_;
  scratch_.clear();
  const size_t n = blocks.size();
  for (size_t q = 0; q < n; ++q) {
    const BlockId b = blocks[kReversed ? n - 1 - q : q];
    if (b == kNullBlock) continue;
    Block& k = blk[b];
    KVSIM_DCHECK(k.ref > 0);
    if (--k.ref != 0) continue;
    if (policy.Placement(k.group >= 0) == FreeQueueEnd::kHead) {
      scratch_.push_back(b);
    } else {
      tail.Push(k, b);
    }
  }
  queue_.Commit(tail);
  if (!scratch_.empty())
    queue_.PushFrontRun(blk, scratch_.data(), static_cast<int64_t>(scratch_.size()));
}

void BlockPool::FreeBlocks(std::span<const BlockId> blocks) { FreeImpl<false>(blocks); }

void BlockPool::FreeBlocksReversed(std::span<const BlockId> blocks) { FreeImpl<true>(blocks); }

void BlockPool::CacheBlock(BlockId block, BlockHash hash, int32_t group) {
  Block& k = blk_[static_cast<size_t>(block)];
  KVSIM_DCHECK(block != kNullBlock && k.group < 0 && k.ref > 0);
  if (!enable_caching_) return;
  k.hash = hash;
  k.group = group;
  ++num_cached_;
  map_.Insert(blk_.data(), block, hash, group);
}

void BlockPool::CacheBlocks(const BlockId* blocks, const BlockHash* hashes, int64_t hash_stride,
                            int64_t n, int32_t group) {
  if (!enable_caching_) return;
  const BlockHashMap::View map = map_.view();
  Block* const blk = blk_.data();
  constexpr int64_t kAhead = 64;
  for (int64_t k = 0; k < std::min(n, kAhead); ++k) map.Prefetch(hashes[k * hash_stride], group);
  int64_t cached = 0;
  for (int64_t k = 0; k < n; ++k) {
    if (k + kAhead < n) map.Prefetch(hashes[(k + kAhead) * hash_stride], group);
    const BlockId b = blocks[k];
    if (b == kNullBlock) continue;
    Block& r = blk[b];
    if (r.group >= 0) continue;
    KVSIM_DCHECK(r.ref > 0);
    const BlockHash h = hashes[k * hash_stride];
    r.hash = h;
    r.group = group;
    ++cached;
    map.Insert(blk, b, h, group);
  }
  num_cached_ += cached;
}

bool BlockPool::EvictCachedBlock(BlockId block) {
  if (block == kNullBlock || blk_[static_cast<size_t>(block)].group < 0) return false;
  map_.Erase(blk_.data(), block);
  blk_[static_cast<size_t>(block)].group = -1;
  --num_cached_;
  return true;
}

bool BlockPool::ResetPrefixCache() {
  if (num_free_blocks() != num_blocks_ - 1) return false;
  for (Block& k : blk_) {
    k.group = -1;
    k.dup_next = kNoBlock;
  }
  map_.Clear();
  num_cached_ = 0;
  return true;
}

void BlockPool::CheckInvariants() const {
  const Block& null = blk_[kNullBlock];
  KVSIM_CHECK(null.group < 0 && null.pos == FreeBlockQueue::kNotQueued);
  // The queue's own invariants; queued blocks have ref 0.
  std::vector<uint8_t> in_queue(static_cast<size_t>(num_blocks_), 0);
  queue_.CheckInvariants(blk_.data(), num_blocks_, in_queue);
  KVSIM_CHECK(!in_queue[kNullBlock]);
  int64_t held = 0, cached = 0;
  for (BlockId b = 1; b < num_blocks_; ++b) {
    const Block& k = blk_[static_cast<size_t>(b)];
    KVSIM_CHECK(k.ref >= 0);
    if (k.ref > 0) {
      ++held;
      KVSIM_CHECK(!in_queue[static_cast<size_t>(b)] && k.pos == FreeBlockQueue::kNotQueued);
    } else {
      KVSIM_CHECK(in_queue[static_cast<size_t>(b)]);
    }
    if (k.group >= 0) {
      ++cached;
      KVSIM_CHECK(enable_caching_);
      // Reachable from its key's entry.
      BlockId x = GetCachedBlock(k.hash, k.group);
      while (x != kNoBlock && x != b) x = blk_[static_cast<size_t>(x)].dup_next;
      KVSIM_CHECK(x == b);
    }
  }
  KVSIM_CHECK(held + num_free_blocks() == num_blocks_ - 1);  // block conservation
  KVSIM_CHECK(cached == num_cached_);
  // Every key's chain holds only hashed blocks of that key (and the probing invariant).
  KVSIM_CHECK(map_.CheckInvariants(blk_.data()) == num_cached_);
}

}  // namespace kvsim
