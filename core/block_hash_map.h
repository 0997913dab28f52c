// BlockHashMap: the prefix cache's index, (block hash, KV cache group) → the first-inserted
// cached block of that key, as an open-addressing table. It is one part of a block pool
// (core/block_pool.h), kept apart so that another pool (another eviction policy, another
// record layout) can reuse it.
//
// Layout (why it is fast): 64-byte buckets of four slots {hash, group, first block}, linear
// probing over buckets, backward-shift deletion; a power of two ≥ `capacity` buckets, so with
// one key per block the load is ≤ 1/4 of the slots, a key almost always lives in its home
// bucket and an operation is one cache line with few unpredictable branches. Nothing is
// allocated after construction.
//
// Chains: vLLM does not de-duplicate, so several blocks may carry one key. The table holds one
// slot per key, naming the key's first-inserted block; the key's other blocks form an
// intrusive list in insertion order threaded through the blocks' own records (`dup_next`), so
// the map owns no per-block memory and a pool keeps a block's whole state in one record. Any
// record type with `hash`, `group` and `dup_next` fields can be chained (ChainedBlockRecord);
// operations that walk or edit a chain take the records array.
//
// Invariants (CheckInvariants):
//   - a key occupies at most one slot; group −1 marks an empty slot;
//   - a key sits outside its home bucket only if every bucket from its home up to its own is
//     full (so a lookup stops at the first bucket with an empty slot, and erasing from a
//     bucket that was not full moves nothing);
//   - every block on a key's chain carries that key.
//
// Ownership: the owner (the pool) decides which blocks are hashed and sets their records'
// `hash` and `group` before Insert; the map owns the buckets and the `dup_next` links.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <iterator>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/block_hash.h"
#include "core/check.h"
#include "core/large_array.h"
#include "core/types.h"

namespace kvsim {

// A block record the map can chain: its key and the next block of the same key.
template <class R>
concept ChainedBlockRecord = requires(R r) {
  { r.hash } -> std::convertible_to<BlockHash>;
  { r.group } -> std::convertible_to<int32_t>;
  { r.dup_next } -> std::convertible_to<BlockId>;
};

class BlockHashMap {
 public:
  static constexpr int kSlots = 4;

  // One cache line: up to kSlots keys (hash, group), each with the first inserted block.
  struct alignas(64) Bucket {
    BlockHash hash[kSlots];
    int32_t group[kSlots];  // −1 = empty slot
    BlockId first[kSlots];

    // Slot holding (hash, group), or −1: all slots compared at once (SSE2, part of x86-64),
    // without a branch per slot.
    int Find(BlockHash h, int32_t g) const {
#if defined(__SSE2__)
      const __m128i hv = _mm_set1_epi64x(static_cast<long long>(h));
      __m128i a = _mm_cmpeq_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(hash)), hv);
      __m128i b = _mm_cmpeq_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(hash + 2)), hv);
      // A 64-bit lane is equal when both of its 32-bit halves are.
      a = _mm_and_si128(a, _mm_shuffle_epi32(a, _MM_SHUFFLE(2, 3, 0, 1)));
      b = _mm_and_si128(b, _mm_shuffle_epi32(b, _MM_SHUFFLE(2, 3, 0, 1)));
      const unsigned hm = static_cast<unsigned>(_mm_movemask_pd(_mm_castsi128_pd(a))) |
                          (static_cast<unsigned>(_mm_movemask_pd(_mm_castsi128_pd(b))) << 2);
      const __m128i gv = _mm_load_si128(reinterpret_cast<const __m128i*>(group));
      const unsigned gm = static_cast<unsigned>(
          _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(gv, _mm_set1_epi32(g)))));
      const unsigned m = hm & gm;
#else
      unsigned m = 0;
      for (int s = 0; s < kSlots; ++s)
        m |= static_cast<unsigned>((hash[s] == h) & (group[s] == g)) << s;
#endif
      return m != 0 ? __builtin_ctz(m) : -1;
    }
    // Bit s set iff slot s is empty (group −1: the sign bit).
    unsigned EmptyMask() const {
#if defined(__SSE2__)
      return static_cast<unsigned>(_mm_movemask_ps(
          _mm_castsi128_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(group)))));
#else
      unsigned m = 0;
      for (int s = 0; s < kSlots; ++s) m |= static_cast<unsigned>(group[s] < 0) << s;
      return m;
#endif
    }
  };

  // The table's pointer and shape as a value, for hot loops: a caller keeps a View in locals,
  // so the pointer, mask and shift stay in registers across the stores to buckets and records
  // (members would be reloaded after every store that might alias them).
  class View {
   public:
    View(Bucket* buckets, size_t mask, int shift) : b_(buckets), mask_(mask), shift_(shift) {}

    // Home bucket of a key: Fibonacci hashing of the hash with the group folded in (top bits
    // of a multiply), so even small, regular hashes (tests) spread over the table.
    size_t Home(BlockHash hash, int32_t group) const {
      const uint64_t k =
          (hash + static_cast<uint64_t>(static_cast<uint32_t>(group)) * 0x9e3779b97f4a7c15ULL) *
          0xbf58476d1ce4e5b9ULL;
      return static_cast<size_t>(k >> shift_);
    }
    void Prefetch(BlockHash hash, int32_t group) const {
      __builtin_prefetch(&b_[Home(hash, group)]);
    }
    // The first-inserted block of (hash, group), or kNoBlock.
    BlockId Find(BlockHash hash, int32_t group) const {
      size_t i = Home(hash, group);
      while (true) {
        const Bucket& bk = b_[i];
        const int s = bk.Find(hash, group);
        if (s >= 0) return bk.first[s];
        if (bk.EmptyMask() != 0) return kNoBlock;
        i = (i + 1) & mask_;
      }
    }

    // Inserts block b under (hash, group). A duplicate key is appended to the key's chain, so
    // lookups keep returning the first inserted block.
    template <ChainedBlockRecord R>
    [[gnu::always_inline]] void Insert(R* rec, BlockId b, BlockHash hash, int32_t group) const {
      rec[b].dup_next = kNoBlock;
      size_t i = Home(hash, group);
      while (true) {
        Bucket& bk = b_[i];
        const int s = bk.Find(hash, group);
        if (s >= 0) [[unlikely]] {
          BlockId x = bk.first[s];
          while (rec[x].dup_next != kNoBlock) x = rec[x].dup_next;
          rec[x].dup_next = b;
          return;
        }
        if (const unsigned empty = bk.EmptyMask(); empty != 0) [[likely]] {
          const int e = __builtin_ctz(empty);
          bk.hash[e] = hash;
          bk.group[e] = group;
          bk.first[e] = b;
          return;
        }
        i = (i + 1) & mask_;
      }
    }

    // Removes block b, inserted under its record's (hash, group), from its key's chain, and
    // the key when b was its only block. The record's key is left for the caller to clear.
    template <ChainedBlockRecord R>
    [[gnu::always_inline]] void Erase(R* rec, BlockId b) const {
      R& k = rec[b];
      const BlockHash hash = k.hash;
      const int32_t group = k.group;
      size_t i = Home(hash, group);
      int s;
      while ((s = b_[i].Find(hash, group)) < 0) [[unlikely]] {
          KVSIM_DCHECK(b_[i].EmptyMask() == 0);
          i = (i + 1) & mask_;
        }
      Bucket& bk = b_[i];
      if (bk.first[s] != b) [[unlikely]] {
        BlockId x = bk.first[s];
        while (rec[x].dup_next != b) x = rec[x].dup_next;
        rec[x].dup_next = k.dup_next;
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
      if (!was_full) [[likely]]
        return;
      ShiftBack(i, s);
    }

   private:
    // Backward shift after emptying slot s of bucket i, which was full: keys homed at or
    // before it may have probed past it. Scan the following buckets while they are full; the
    // first key whose probe path crosses the hole (probe distance ≥ distance to the hole)
    // moves into it, and the hole moves to where that key was.
    void ShiftBack(size_t i, int s) const {
      size_t hole_b = i;
      int hole_s = s;
      for (size_t j = (i + 1) & mask_;; j = (j + 1) & mask_) {
        Bucket& bj = b_[j];
        const bool j_full = bj.EmptyMask() == 0;
        const size_t dist_hole = (j - hole_b) & mask_;
        for (int t = 0; t < kSlots; ++t) {
          if (bj.group[t] < 0) continue;
          if (((j - Home(bj.hash[t], bj.group[t])) & mask_) >= dist_hole) {
            Bucket& bh = b_[hole_b];
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

    Bucket* b_;
    size_t mask_;  // number of buckets − 1
    int shift_;    // 64 − log2(number of buckets)
  };

  // At least `capacity` buckets (a power of two, ≥ 4): give the most keys the owner can hold
  // at once (for a pool, its number of blocks).
  explicit BlockHashMap(int64_t capacity) {
    size_t buckets = 4;
    int bits = 2;
    while (buckets < static_cast<size_t>(capacity)) {
      buckets <<= 1;
      ++bits;
    }
    buckets_.resize(buckets);
    mask_ = buckets - 1;
    shift_ = 64 - bits;
    Clear();
  }

  View view() { return View(buckets_.data(), mask_, shift_); }
  size_t num_buckets() const { return buckets_.size(); }

  BlockId Find(BlockHash hash, int32_t group) const { return cview().Find(hash, group); }
  // A hint for a lookup or an insertion of this key that will follow soon.
  void Prefetch(BlockHash hash, int32_t group) const { cview().Prefetch(hash, group); }
  template <ChainedBlockRecord R>
  void Insert(R* rec, BlockId b, BlockHash hash, int32_t group) {
    view().Insert(rec, b, hash, group);
  }
  template <ChainedBlockRecord R>
  void Erase(R* rec, BlockId b) {
    view().Erase(rec, b);
  }
  // The bucket holding (hash, group), or num_buckets() when the key is absent; with
  // view().Home, lets tests check where probing and backward shifts put keys.
  size_t BucketOf(BlockHash hash, int32_t group) const {
    const View v = cview();
    for (size_t i = v.Home(hash, group);; i = (i + 1) & mask_) {
      if (buckets_[i].Find(hash, group) >= 0) return i;
      if (buckets_[i].EmptyMask() != 0) return buckets_.size();
    }
  }
  // Empties every slot (the caller resets its records' keys and links).
  void Clear() {
    for (Bucket& bk : buckets_) std::fill(std::begin(bk.group), std::end(bk.group), -1);
  }

  // Aborts (KVSIM_CHECK) on a broken invariant; returns the number of blocks on all chains.
  // O(buckets + chained blocks).
  template <ChainedBlockRecord R>
  int64_t CheckInvariants(const R* rec) const {
    int64_t chained = 0;
    const View v = cview();
    for (size_t j = 0; j < buckets_.size(); ++j) {
      const Bucket& bk = buckets_[j];
      for (int s = 0; s < kSlots; ++s) {
        if (bk.group[s] < 0) continue;
        for (BlockId x = bk.first[s]; x != kNoBlock; x = rec[x].dup_next) {
          KVSIM_CHECK(rec[x].group == bk.group[s] && rec[x].hash == bk.hash[s]);
          ++chained;
        }
        for (size_t h = v.Home(bk.hash[s], bk.group[s]); h != j; h = (h + 1) & mask_)
          KVSIM_CHECK(buckets_[h].EmptyMask() == 0);
        for (int t = s + 1; t < kSlots; ++t)  // a key appears once
          KVSIM_CHECK(bk.group[t] < 0 || bk.hash[t] != bk.hash[s] || bk.group[t] != bk.group[s]);
      }
    }
    return chained;
  }

 private:
  // Lookups only read through it.
  View cview() const { return View(const_cast<Bucket*>(buckets_.data()), mask_, shift_); }

  LargeVector<Bucket> buckets_;
  size_t mask_ = 0;
  int shift_ = 64;
};

}  // namespace kvsim
