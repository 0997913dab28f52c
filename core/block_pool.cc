#include "core/block_pool.h"

#include <algorithm>
#include <cstdlib>
#include <new>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "core/check.h"

namespace kvsim {

namespace {
constexpr size_t kHugePage = size_t{1} << 21;
}

constexpr std::align_val_t kLineAlign{64};  // every element type fits a cache-line alignment

void* AllocateLargeArray(size_t bytes) {
  if (bytes < kHugePage) return ::operator new(bytes, kLineAlign);
  const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = std::aligned_alloc(kHugePage, rounded);
  if (p == nullptr) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  madvise(p, rounded, MADV_HUGEPAGE);  // a hint; failure just means small pages
#endif
  return p;
}

void FreeLargeArray(void* p, size_t bytes) {
  if (bytes < kHugePage) {
    ::operator delete(p, kLineAlign);
  } else {
    std::free(p);
  }
}
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
  size_t buckets = 4;
  int bits = 2;
  while (buckets < n) {
    buckets <<= 1;
    ++bits;
  }
  map_.resize(buckets);
  for (Bucket& bk : map_) std::fill(std::begin(bk.group), std::end(bk.group), -1);
  map_mask_ = buckets - 1;
  map_shift_ = 64 - bits;
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

// The map and block arrays are passed in as locals so the hot loops keep the pointers,
// mask and shift in registers (member loads would be repeated after every store).
struct BlockPool::MapView {
  Bucket* map;
  Block* blk;
  size_t mask;
  int shift;

  size_t Home(BlockHash hash, int32_t group) const {
    const uint64_t k =
        (hash + static_cast<uint64_t>(static_cast<uint32_t>(group)) * 0x9e3779b97f4a7c15ULL) *
        0xbf58476d1ce4e5b9ULL;
    return static_cast<size_t>(k >> shift);
  }

  // Inserts block b under (hash, group). A duplicate key is appended to the key's list, so
  // lookups keep returning the first inserted block.
  [[gnu::always_inline]] void Insert(BlockId b, BlockHash hash, int32_t group) const {
    blk[b].dup_next = kNoBlock;
    size_t i = Home(hash, group);
    while (true) {
      Bucket& bk = map[i];
      const int s = bk.Find(hash, group);
      if (s >= 0) [[unlikely]] {
        BlockId x = bk.first[s];
        while (blk[x].dup_next != kNoBlock) x = blk[x].dup_next;
        blk[x].dup_next = b;
        return;
      }
      if (const unsigned empty = bk.EmptyMask(); empty != 0) [[likely]] {
        const int e = __builtin_ctz(empty);
        bk.hash[e] = hash;
        bk.group[e] = group;
        bk.first[e] = b;
        return;
      }
      i = (i + 1) & mask;
    }
  }

  // Removes block b (hashed) from its key's list, and the key when b was its only block.
  [[gnu::always_inline]] void Erase(BlockId b) const {
    Block& k = blk[b];
    const BlockHash hash = k.hash;
    const int32_t group = k.group;
    size_t i = Home(hash, group);
    int s;
    while ((s = map[i].Find(hash, group)) < 0) [[unlikely]] {
      KVSIM_DCHECK(map[i].EmptyMask() == 0);
      i = (i + 1) & mask;
    }
    Bucket& bk = map[i];
    if (bk.first[s] != b) [[unlikely]] {
      BlockId x = bk.first[s];
      while (blk[x].dup_next != b) x = blk[x].dup_next;
      blk[x].dup_next = k.dup_next;
      k.dup_next = kNoBlock;
      return;
    }
    if (k.dup_next != kNoBlock) [[unlikely]] {
      bk.first[s] = k.dup_next;
      k.dup_next = kNoBlock;
      return;
    }
    const bool was_full = bk.EmptyMask() == 0;
    bk.group[s] = -1;
    if (!was_full) [[likely]] return;
    // Backward shift: the bucket was full, so keys homed at or before it may have probed past
    // it. Scan the following buckets while they are full; the first key whose probe path
    // crosses the hole (probe distance ≥ distance to the hole) moves into it, and the hole
    // moves to where that key was.
    size_t hole_b = i;
    int hole_s = s;
    for (size_t j = (i + 1) & mask;; j = (j + 1) & mask) {
      Bucket& bj = map[j];
      const bool j_full = bj.EmptyMask() == 0;
      const size_t dist_hole = (j - hole_b) & mask;
      for (int t = 0; t < kSlots; ++t) {
        if (bj.group[t] < 0) continue;
        if (((j - Home(bj.hash[t], bj.group[t])) & mask) >= dist_hole) {
          Bucket& bh = map[hole_b];
          bh.hash[hole_s] = bj.hash[t];
          bh.group[hole_s] = bj.group[t];
          bh.first[hole_s] = bj.first[t];
          bj.group[t] = -1;
          hole_b = j;
          hole_s = t;
          break;
        }
      }
      if (!j_full) break;  // nothing beyond a bucket with room probed through it
    }
  }
};

BlockPool::MapView BlockPool::View() {
  return MapView{map_.data(), blk_.data(), map_mask_, map_shift_};
}

void BlockPool::MapInsert(BlockId b) {
  const Block& k = blk_[static_cast<size_t>(b)];
  View().Insert(b, k.hash, k.group);
}

void BlockPool::MapErase(BlockId b) { View().Erase(b); }

bool BlockPool::GetNewBlocks(int64_t n, BlockId* out) {
  if (n > num_free_) return false;
  // Take the ids off the head (a sequential scan of the ring), then evict in a software
  // pipeline: block k's record is prefetched kRec blocks ahead and, once it has arrived, the
  // map slot of its hash kSlot blocks ahead, so the random accesses of many blocks overlap
  // and the erase itself rarely waits on memory.
  {
    const BlockId* ring = ring_.data();
    const uint64_t rmask = ring_mask_;
    uint64_t head = head_;
    for (int64_t k = 0; k < n; ++k) {
      BlockId b;
      while ((b = ring[head & rmask]) == kTomb) ++head;
      ++head;
      out[k] = b;
    }
    head_ = head;
  }
  num_free_ -= n;
  const MapView v = View();
  constexpr int64_t kRec = 96;
  constexpr int64_t kSlot = 48;
  auto prefetch_slot = [&](int64_t k) {
    const Block& a = v.blk[out[k]];
    if (a.group >= 0) __builtin_prefetch(&v.map[v.Home(a.hash, a.group)]);
  };
  for (int64_t k = 0; k < std::min(n, kRec); ++k) __builtin_prefetch(&v.blk[out[k]]);
  for (int64_t k = 0; k < std::min(n, kSlot); ++k) prefetch_slot(k);
  int64_t uncached = 0;
  for (int64_t k = 0; k < n; ++k) {
    if (k + kRec < n) __builtin_prefetch(&v.blk[out[k + kRec]]);
    if (k + kSlot < n) prefetch_slot(k + kSlot);
    Block& blk = v.blk[out[k]];
    blk.pos = kNotQueued;
    blk.ref = 1;
    if (blk.group >= 0) {
      v.Erase(out[k]);
      blk.group = -1;
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
    if (b != kNullBlock && k.ref == 0) __builtin_prefetch(&ring_[k.pos & ring_mask_], 1);
  }
  for (BlockId b : blocks) {
    if (b == kNullBlock) continue;
    Block& k = blk_[static_cast<size_t>(b)];
    if (k.ref == 0) QueueRemove(b);
    ++k.ref;
  }
}

template <bool kReversed>
void BlockPool::FreeImpl(std::span<const BlockId> blocks) {
  // Room for every append up front (compaction only drops tombstones, so doing it earlier
  // changes no order), then plain stores.
  if (tail_ - head_ + blocks.size() > ring_.size()) Compact(0);
  const bool latest = semantics_ == VllmSemantics::kLatest;
  const bool unhashed_to_head = latest;
  BlockId* const ring = ring_.data();
  const uint64_t rmask = ring_mask_;
  Block* const blk = blk_.data();
  uint64_t tail = tail_;
  int64_t appended = 0;
  scratch_.clear();
  const size_t n = blocks.size();
  for (size_t q = 0; q < n; ++q) {
    const BlockId b = blocks[kReversed ? n - 1 - q : q];
    if (b == kNullBlock) continue;
    Block& k = blk[b];
    KVSIM_DCHECK(k.ref > 0);
    if (--k.ref != 0) continue;
    if (unhashed_to_head && (k.group < 0 || !enable_caching_)) {
      scratch_.push_back(b);
    } else {
      ring[tail & rmask] = b;
      k.pos = tail++;
      ++appended;
    }
  }
  tail_ = tail;
  num_free_ += appended;
  if (!scratch_.empty()) QueuePrependRun(scratch_.data(), static_cast<int64_t>(scratch_.size()));
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
  MapInsert(block);
}

void BlockPool::CacheBlocks(const BlockId* blocks, const BlockHash* hashes, int64_t hash_stride,
                            int64_t n, int32_t group) {
  if (!enable_caching_) return;
  const MapView v = View();
  constexpr int64_t kAhead = 64;
  for (int64_t k = 0; k < std::min(n, kAhead); ++k)
    __builtin_prefetch(&v.map[v.Home(hashes[k * hash_stride], group)]);
  int64_t cached = 0;
  for (int64_t k = 0; k < n; ++k) {
    if (k + kAhead < n) __builtin_prefetch(&v.map[v.Home(hashes[(k + kAhead) * hash_stride], group)]);
    const BlockId b = blocks[k];
    if (b == kNullBlock) continue;
    Block& r = v.blk[b];
    if (r.group >= 0) continue;
    KVSIM_DCHECK(r.ref > 0);
    const BlockHash h = hashes[k * hash_stride];
    r.hash = h;
    r.group = group;
    ++cached;
    v.Insert(b, h, group);
  }
  num_cached_ += cached;
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
  for (Bucket& bk : map_) std::fill(std::begin(bk.group), std::end(bk.group), -1);
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
  // Every key's chain holds only hashed blocks of that key; every key outside its home
  // bucket has only full buckets between (the probing invariant lookups rely on).
  int64_t in_map = 0;
  const size_t nb = map_.size();
  for (size_t j = 0; j < nb; ++j) {
    const Bucket& bk = map_[j];
    for (int s = 0; s < kSlots; ++s) {
      if (bk.group[s] < 0) continue;
      for (BlockId x = bk.first[s]; x != kNoBlock; x = blk_[static_cast<size_t>(x)].dup_next) {
        const Block& k = blk_[static_cast<size_t>(x)];
        KVSIM_CHECK(k.group == bk.group[s] && k.hash == bk.hash[s]);
        ++in_map;
      }
      for (size_t h = BucketFor(bk.hash[s], bk.group[s]); h != j; h = (h + 1) & map_mask_)
        KVSIM_CHECK(map_[h].EmptyMask() == 0);
      for (int t = s + 1; t < kSlots; ++t)  // a key appears once
        KVSIM_CHECK(bk.group[t] < 0 || bk.hash[t] != bk.hash[s] || bk.group[t] != bk.group[s]);
    }
  }
  KVSIM_CHECK(in_map == num_cached_);
}

}  // namespace kvsim
