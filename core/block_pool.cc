#include "core/block_pool.h"

#include <algorithm>

#include "core/check.h"

namespace kvsim {
namespace {

inline uint64_t MixKey(BlockHash hash, int32_t group) {
  // The hash is already uniform; fold the group in and spread it (murmur finalizer).
  uint64_t x = hash ^ (static_cast<uint64_t>(static_cast<uint32_t>(group)) * 0x9e3779b97f4a7c15ULL);
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x;
}

}  // namespace

BlockPool::BlockPool(int64_t num_blocks, bool enable_caching, VllmSemantics semantics)
    : num_blocks_(num_blocks), enable_caching_(enable_caching), semantics_(semantics) {
  KVSIM_CHECK(num_blocks >= 1);
  KVSIM_CHECK(num_blocks < (int64_t{1} << 30));
  const size_t n = static_cast<size_t>(num_blocks);
  blk_.assign(n, Block{kNotQueued, 0, 0, -1, kNoBlock, 0});
  size_t rcap = 16;
  while (rcap < 4 * n) rcap <<= 1;
  ring_.assign(rcap, kTomb);
  ring_mask_ = rcap - 1;
  head_ = tail_ = uint64_t{1} << 62;  // room to prepend without wrapping below zero
  size_t cap = 16;
  while (cap < 2 * n) cap <<= 1;
  map_.assign(cap, MapEntry{0, -1, kNoBlock});
  map_mask_ = cap - 1;
  scratch_.reserve(n);
  compact_.reserve(n);
  // Blocks 1..n-1 in id order; block 0 is the null block and never enters the queue.
  for (BlockId b = 1; b < static_cast<BlockId>(num_blocks); ++b) QueueAppend(b);
}

double BlockPool::usage() const {
  if (num_blocks_ <= 1) return 0.0;
  return 1.0 - static_cast<double>(num_free_) / static_cast<double>(num_blocks_ - 1);
}

void BlockPool::Compact(int64_t room_front) {
  // Rewrite the live entries contiguously, keeping `room_front` free slots before them.
  compact_.clear();
  for (uint64_t p = head_; p != tail_; ++p) {
    const BlockId b = ring_[p & ring_mask_];
    if (b != kTomb) compact_.push_back(b);
  }
  std::fill(ring_.begin(), ring_.end(), kTomb);
  head_ = (uint64_t{1} << 62) + static_cast<uint64_t>(room_front);
  tail_ = head_;
  for (BlockId b : compact_) {
    ring_[tail_ & ring_mask_] = b;
    blk_[static_cast<size_t>(b)].pos = tail_++;
  }
}

void BlockPool::QueueRemove(BlockId b) {
  Block& k = blk_[static_cast<size_t>(b)];
  ring_[k.pos & ring_mask_] = kTomb;
  if (k.pos == head_) ++head_;
  k.pos = kNotQueued;
  --num_free_;
}

void BlockPool::QueueAppend(BlockId b) {
  if (tail_ - head_ >= ring_.size()) Compact(0);
  ring_[tail_ & ring_mask_] = b;
  blk_[static_cast<size_t>(b)].pos = tail_++;
  ++num_free_;
}

void BlockPool::QueuePrependRun(const BlockId* run, int64_t n) {
  // Insert run[0..n) before the current head, keeping their order (run[0] becomes the head).
  if (tail_ - head_ + static_cast<uint64_t>(n) > ring_.size()) Compact(n);
  for (int64_t i = n - 1; i >= 0; --i) {
    --head_;
    ring_[head_ & ring_mask_] = run[i];
    blk_[static_cast<size_t>(run[i])].pos = head_;
  }
  num_free_ += n;
}

size_t BlockPool::SlotFor(BlockHash hash, int32_t group) const {
  return static_cast<size_t>(MixKey(hash, group)) & map_mask_;
}

BlockId BlockPool::GetCachedBlock(BlockHash hash, int32_t group) const {
  size_t i = SlotFor(hash, group);
  while (true) {
    const MapEntry& e = map_[i];
    if (e.group < 0) return kNoBlock;
    if (e.hash == hash && e.group == group) return e.first;
    i = (i + 1) & map_mask_;
  }
}

void BlockPool::PrefetchLookup(BlockHash hash, int32_t group) const {
  __builtin_prefetch(&map_[SlotFor(hash, group)]);
}

void BlockPool::MapInsert(BlockId b) {
  const BlockHash hash = blk_[static_cast<size_t>(b)].hash;
  const int32_t group = blk_[static_cast<size_t>(b)].group;
  size_t i = SlotFor(hash, group);
  while (true) {
    MapEntry& e = map_[i];
    if (e.group < 0) {
      e = MapEntry{hash, group, b};
      blk_[static_cast<size_t>(b)].dup_next = kNoBlock;
      return;
    }
    if (e.hash == hash && e.group == group) {
      // Duplicate key: append at the end of the key's list (insertion order).
      BlockId x = e.first;
      while (blk_[static_cast<size_t>(x)].dup_next != kNoBlock) x = blk_[static_cast<size_t>(x)].dup_next;
      blk_[static_cast<size_t>(x)].dup_next = b;
      blk_[static_cast<size_t>(b)].dup_next = kNoBlock;
      return;
    }
    i = (i + 1) & map_mask_;
  }
}

void BlockPool::MapErase(BlockId b) {
  const BlockHash hash = blk_[static_cast<size_t>(b)].hash;
  const int32_t group = blk_[static_cast<size_t>(b)].group;
  size_t i = SlotFor(hash, group);
  while (true) {
    MapEntry& e = map_[i];
    KVSIM_DCHECK(e.group >= 0);
    if (e.hash == hash && e.group == group) break;
    i = (i + 1) & map_mask_;
  }
  MapEntry& e = map_[i];
  Block& k = blk_[static_cast<size_t>(b)];
  if (e.first != b) {
    BlockId x = e.first;
    while (blk_[static_cast<size_t>(x)].dup_next != b) x = blk_[static_cast<size_t>(x)].dup_next;
    blk_[static_cast<size_t>(x)].dup_next = k.dup_next;
    k.dup_next = kNoBlock;
    return;
  }
  if (k.dup_next != kNoBlock) {
    e.first = k.dup_next;
    k.dup_next = kNoBlock;
    return;
  }
  // Remove the entry: backward-shift deletion keeps every probe chain unbroken.
  size_t hole = i;
  size_t j = i;
  while (true) {
    j = (j + 1) & map_mask_;
    const MapEntry& f = map_[j];
    if (f.group < 0) break;
    const size_t home = SlotFor(f.hash, f.group);
    // f may move into the hole iff its home is not in the cyclic range (hole, j].
    const bool in_range = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
    if (!in_range) {
      map_[hole] = f;
      hole = j;
    }
  }
  map_[hole] = MapEntry{0, -1, kNoBlock};
}

bool BlockPool::GetNewBlocks(int64_t n, BlockId* out) {
  if (n > num_free_) return false;
  // Take the ids off the head (a sequential scan of the ring), then evict in a software
  // pipeline: block records are prefetched kRec blocks ahead and the map slots of their
  // hashes kSlot blocks ahead, so the random accesses of many blocks overlap.
  for (int64_t k = 0; k < n; ++k) {
    BlockId b;
    while ((b = ring_[head_ & ring_mask_]) == kTomb) ++head_;
    ++head_;
    out[k] = b;
  }
  num_free_ -= n;
  // Chunks of kChunk: prefetch the records, then (records present) the map slots, then
  // evict — about three memory latencies per chunk instead of one or two per block.
  constexpr int64_t kChunk = 32;
  for (int64_t c = 0; c < n; c += kChunk) {
    const int64_t e = std::min(n, c + kChunk);
    for (int64_t k = c; k < e; ++k) __builtin_prefetch(&blk_[static_cast<size_t>(out[k])]);
    for (int64_t k = c; k < e; ++k) {
      const Block& a = blk_[static_cast<size_t>(out[k])];
      if (a.group >= 0) PrefetchLookup(a.hash, a.group);
    }
    for (int64_t k = c; k < e; ++k) {
      Block& blk = blk_[static_cast<size_t>(out[k])];
      blk.pos = kNotQueued;
      if (blk.group >= 0) {
        MapErase(out[k]);
        blk.group = -1;
        --num_cached_;
      }
      blk.ref = 1;
    }
  }
  return true;
}

void BlockPool::Touch(std::span<const BlockId> blocks) {
  for (BlockId b : blocks) {
    if (b == kNullBlock) continue;
    Block& k = blk_[static_cast<size_t>(b)];
    if (k.ref == 0) QueueRemove(b);
    ++k.ref;
  }
}

void BlockPool::FreeBlocks(std::span<const BlockId> blocks) {
  const bool latest = semantics_ == VllmSemantics::kLatest;
  scratch_.clear();
  for (BlockId b : blocks) {
    if (b == kNullBlock) continue;
    Block& k = blk_[static_cast<size_t>(b)];
    KVSIM_DCHECK(k.ref > 0);
    if (--k.ref != 0) continue;
    if (latest && (k.group < 0 || !enable_caching_)) {
      scratch_.push_back(b);
    } else {
      QueueAppend(b);
    }
  }
  if (!scratch_.empty()) QueuePrependRun(scratch_.data(), static_cast<int64_t>(scratch_.size()));
}

void BlockPool::FreeBlocksReversed(std::span<const BlockId> blocks) {
  const bool latest = semantics_ == VllmSemantics::kLatest;
  scratch_.clear();
  for (size_t i = blocks.size(); i-- > 0;) {
    const BlockId b = blocks[i];
    if (b == kNullBlock) continue;
    Block& k = blk_[static_cast<size_t>(b)];
    KVSIM_DCHECK(k.ref > 0);
    if (--k.ref != 0) continue;
    if (latest && (k.group < 0 || !enable_caching_)) {
      scratch_.push_back(b);
    } else {
      QueueAppend(b);
    }
  }
  if (!scratch_.empty()) QueuePrependRun(scratch_.data(), static_cast<int64_t>(scratch_.size()));
}

void BlockPool::CacheBlock(BlockId block, BlockHash hash, int32_t group) {
  Block& k = blk_[static_cast<size_t>(block)];
  KVSIM_DCHECK(block != kNullBlock && k.group < 0 && k.ref > 0);
  if (!enable_caching_) return;
  k.hash = hash;
  k.group = group;
  ++num_cached_;
  MapInsert(block);
}

bool BlockPool::EvictCachedBlock(BlockId block) {
  if (block == kNullBlock || blk_[static_cast<size_t>(block)].group < 0) return false;
  MapErase(block);
  blk_[static_cast<size_t>(block)].group = -1;
  --num_cached_;
  return true;
}

bool BlockPool::ResetPrefixCache() {
  if (num_free_ != num_blocks_ - 1) return false;
  for (Block& k : blk_) {
    k.group = -1;
    k.dup_next = kNoBlock;
  }
  std::fill(map_.begin(), map_.end(), MapEntry{0, -1, kNoBlock});
  num_cached_ = 0;
  return true;
}

std::vector<BlockId> BlockPool::FreeQueue() const {
  std::vector<BlockId> out;
  for (uint64_t p = head_; p != tail_; ++p) {
    const BlockId b = ring_[p & ring_mask_];
    if (b != kTomb) out.push_back(b);
  }
  return out;
}

void BlockPool::CheckInvariants() const {
  const Block& null = blk_[kNullBlock];
  KVSIM_CHECK(null.group < 0 && null.pos == kNotQueued);
  // Walk the ring: positions consistent, members have ref 0, count matches.
  KVSIM_CHECK(tail_ >= head_ && tail_ - head_ <= ring_.size());
  std::vector<uint8_t> in_queue(static_cast<size_t>(num_blocks_), 0);
  int64_t count = 0;
  for (uint64_t p = head_; p != tail_; ++p) {
    const BlockId b = ring_[p & ring_mask_];
    if (b == kTomb) continue;
    KVSIM_CHECK(b > 0 && b < num_blocks_);
    KVSIM_CHECK(blk_[static_cast<size_t>(b)].pos == p);
    KVSIM_CHECK(!in_queue[static_cast<size_t>(b)]);
    in_queue[static_cast<size_t>(b)] = 1;
    KVSIM_CHECK(blk_[static_cast<size_t>(b)].ref == 0);
    ++count;
  }
  KVSIM_CHECK(count == num_free_);
  int64_t held = 0, cached = 0;
  for (BlockId b = 1; b < num_blocks_; ++b) {
    const Block& k = blk_[static_cast<size_t>(b)];
    KVSIM_CHECK(k.ref >= 0);
    if (k.ref > 0) {
      ++held;
      KVSIM_CHECK(!in_queue[static_cast<size_t>(b)] && k.pos == kNotQueued);
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
  KVSIM_CHECK(held + num_free_ == num_blocks_ - 1);  // block conservation
  KVSIM_CHECK(cached == num_cached_);
  // Every map entry's chain holds only hashed blocks of that key.
  int64_t in_map = 0;
  for (const MapEntry& e : map_) {
    if (e.group < 0) continue;
    for (BlockId x = e.first; x != kNoBlock; x = blk_[static_cast<size_t>(x)].dup_next) {
      const Block& k = blk_[static_cast<size_t>(x)];
      KVSIM_CHECK(k.group == e.group && k.hash == e.hash);
      ++in_map;
    }
  }
  KVSIM_CHECK(in_map == num_cached_);
}

}  // namespace kvsim
