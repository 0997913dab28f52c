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
  ref_.assign(n, 0);
  prev_.assign(n + 1, kNoBlock);
  next_.assign(n + 1, kNoBlock);
  hash_.assign(n, 0);
  group_.assign(n, -1);
  hashed_.assign(n, 0);
  dup_next_.assign(n, kNoBlock);
  size_t cap = 16;
  while (cap < 2 * n) cap <<= 1;
  map_.assign(cap, MapEntry{0, -1, kNoBlock});
  map_mask_ = cap - 1;
  scratch_.reserve(n);
  // Sentinel at index n: an empty circular list. Blocks 1..n-1 in id order; block 0 is the
  // null block and never enters the queue.
  const BlockId s = static_cast<BlockId>(num_blocks);
  prev_[s] = next_[s] = s;
  for (BlockId b = 1; b < s; ++b) QueueAppend(b);
}

double BlockPool::usage() const {
  if (num_blocks_ <= 1) return 0.0;
  return 1.0 - static_cast<double>(num_free_) / static_cast<double>(num_blocks_ - 1);
}

void BlockPool::QueueRemove(BlockId b) {
  const BlockId p = prev_[b], n = next_[b];
  next_[p] = n;
  prev_[n] = p;
  prev_[b] = next_[b] = kNoBlock;
  --num_free_;
}

void BlockPool::QueueAppend(BlockId b) {
  const BlockId s = static_cast<BlockId>(num_blocks_);
  const BlockId last = prev_[s];
  next_[last] = b;
  prev_[b] = last;
  next_[b] = s;
  prev_[s] = b;
  ++num_free_;
}

void BlockPool::QueuePrependRun(const BlockId* run, int64_t n) {
  // Insert run[0..n) before the current head, keeping their order (run[0] becomes the head).
  const BlockId s = static_cast<BlockId>(num_blocks_);
  BlockId after = next_[s];
  for (int64_t i = n - 1; i >= 0; --i) {
    const BlockId b = run[i];
    prev_[b] = s;
    next_[b] = after;
    prev_[after] = b;
    next_[s] = b;
    after = b;
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
  const BlockHash hash = hash_[b];
  const int32_t group = group_[b];
  size_t i = SlotFor(hash, group);
  while (true) {
    MapEntry& e = map_[i];
    if (e.group < 0) {
      e = MapEntry{hash, group, b};
      dup_next_[b] = kNoBlock;
      return;
    }
    if (e.hash == hash && e.group == group) {
      // Duplicate key: append at the end of the key's list (insertion order).
      BlockId x = e.first;
      while (dup_next_[x] != kNoBlock) x = dup_next_[x];
      dup_next_[x] = b;
      dup_next_[b] = kNoBlock;
      return;
    }
    i = (i + 1) & map_mask_;
  }
}

void BlockPool::MapErase(BlockId b) {
  const BlockHash hash = hash_[b];
  const int32_t group = group_[b];
  size_t i = SlotFor(hash, group);
  while (true) {
    MapEntry& e = map_[i];
    KVSIM_DCHECK(e.group >= 0);
    if (e.hash == hash && e.group == group) break;
    i = (i + 1) & map_mask_;
  }
  MapEntry& e = map_[i];
  if (e.first != b) {
    BlockId x = e.first;
    while (dup_next_[x] != b) x = dup_next_[x];
    dup_next_[x] = dup_next_[b];
    dup_next_[b] = kNoBlock;
    return;
  }
  if (dup_next_[b] != kNoBlock) {
    e.first = dup_next_[b];
    dup_next_[b] = kNoBlock;
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
  const BlockId s = static_cast<BlockId>(num_blocks_);
  for (int64_t k = 0; k < n; ++k) {
    const BlockId b = next_[s];
    QueueRemove(b);
    if (hashed_[b]) {
      MapErase(b);
      hashed_[b] = 0;
      --num_cached_;
    }
    ref_[b] = 1;
    out[k] = b;
  }
  return true;
}

void BlockPool::Touch(std::span<const BlockId> blocks) {
  for (BlockId b : blocks) {
    if (b == kNullBlock) continue;
    if (ref_[b] == 0) QueueRemove(b);
    ++ref_[b];
  }
}

void BlockPool::FreeBlocks(std::span<const BlockId> blocks) {
  const bool latest = semantics_ == VllmSemantics::kLatest;
  scratch_.clear();
  for (BlockId b : blocks) {
    if (b == kNullBlock) continue;
    KVSIM_DCHECK(ref_[b] > 0);
    if (--ref_[b] != 0) continue;
    if (latest && (!hashed_[b] || !enable_caching_)) {
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
  for (size_t k = blocks.size(); k-- > 0;) {
    const BlockId b = blocks[k];
    if (b == kNullBlock) continue;
    KVSIM_DCHECK(ref_[b] > 0);
    if (--ref_[b] != 0) continue;
    if (latest && (!hashed_[b] || !enable_caching_)) {
      scratch_.push_back(b);
    } else {
      QueueAppend(b);
    }
  }
  if (!scratch_.empty()) QueuePrependRun(scratch_.data(), static_cast<int64_t>(scratch_.size()));
}

void BlockPool::CacheBlock(BlockId block, BlockHash hash, int32_t group) {
  KVSIM_DCHECK(block != kNullBlock && !hashed_[block] && ref_[block] > 0);
  if (!enable_caching_) return;
  hash_[block] = hash;
  group_[block] = group;
  hashed_[block] = 1;
  ++num_cached_;
  MapInsert(block);
}

bool BlockPool::EvictCachedBlock(BlockId block) {
  if (block == kNullBlock || !hashed_[block]) return false;
  MapErase(block);
  hashed_[block] = 0;
  --num_cached_;
  return true;
}

bool BlockPool::ResetPrefixCache() {
  if (num_free_ != num_blocks_ - 1) return false;
  for (BlockId b = 1; b < num_blocks_; ++b) hashed_[b] = 0;
  std::fill(map_.begin(), map_.end(), MapEntry{0, -1, kNoBlock});
  std::fill(dup_next_.begin(), dup_next_.end(), kNoBlock);
  num_cached_ = 0;
  return true;
}

std::vector<BlockId> BlockPool::FreeQueue() const {
  std::vector<BlockId> out;
  const BlockId s = static_cast<BlockId>(num_blocks_);
  for (BlockId b = next_[s]; b != s; b = next_[b]) out.push_back(b);
  return out;
}

void BlockPool::CheckInvariants() const {
  const BlockId s = static_cast<BlockId>(num_blocks_);
  KVSIM_CHECK(!hashed_[kNullBlock]);
  KVSIM_CHECK(prev_[kNullBlock] == kNoBlock && next_[kNullBlock] == kNoBlock);
  // Walk the queue: links consistent, members have ref 0, count matches.
  std::vector<uint8_t> in_queue(static_cast<size_t>(num_blocks_), 0);
  int64_t count = 0;
  BlockId prev = s;
  for (BlockId b = next_[s]; b != s; b = next_[b]) {
    KVSIM_CHECK(b > 0 && b < s);
    KVSIM_CHECK(prev_[b] == prev);
    KVSIM_CHECK(!in_queue[b]);
    in_queue[b] = 1;
    KVSIM_CHECK(ref_[b] == 0);
    prev = b;
    ++count;
    KVSIM_CHECK(count <= num_blocks_);
  }
  KVSIM_CHECK(prev_[s] == prev);
  KVSIM_CHECK(count == num_free_);
  int64_t held = 0, cached = 0;
  for (BlockId b = 1; b < s; ++b) {
    KVSIM_CHECK(ref_[b] >= 0);
    if (ref_[b] > 0) {
      ++held;
      KVSIM_CHECK(!in_queue[b]);
    } else {
      KVSIM_CHECK(in_queue[b]);
    }
    if (hashed_[b]) {
      ++cached;
      KVSIM_CHECK(enable_caching_);
      // Reachable from its key's entry.
      BlockId x = GetCachedBlock(hash_[b], group_[b]);
      while (x != kNoBlock && x != b) x = dup_next_[x];
      KVSIM_CHECK(x == b);
    }
  }
  KVSIM_CHECK(held + num_free_ == num_blocks_ - 1);  // block conservation
  KVSIM_CHECK(cached == num_cached_);
  // Every map entry's chain holds only hashed blocks of that key.
  int64_t in_map = 0;
  for (const MapEntry& e : map_) {
    if (e.group < 0) continue;
    for (BlockId x = e.first; x != kNoBlock; x = dup_next_[x]) {
      KVSIM_CHECK(hashed_[x] && hash_[x] == e.hash && group_[x] == e.group);
      ++in_map;
    }
  }
  KVSIM_CHECK(in_map == num_cached_);
}

}  // namespace kvsim
