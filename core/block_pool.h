// BlockPool: the shared pool of KV block ids of vLLM v1 (reference §5.2) — ref counts, the
// free queue in eviction order, the prefix-cache map (hash, group) → blocks, and the null
// block. Every KV cache group draws its block ids from one pool.
//
// Data layout (why it is fast): blocks live in one flat array of 32-byte records indexed by
// BlockId; the free queue is a ring of block ids with tombstones (O(1) pop at the head,
// removal from the middle on a hit, append/prepend; amortized compaction), so eviction
// scans memory sequentially and can prefetch; the cache map is an open-addressing
// table of {hash, group, first block} in 64-byte buckets of four slots (linear probing over
// buckets, backward-shift deletion, load ≤ 1/4 so a key almost always lives in its home
// bucket and an operation is one cache line with few unpredictable branches). Several
// blocks may carry the same (hash, group) — vLLM does not de-duplicate — so blocks of one
// key form an intrusive list in insertion order and a lookup returns the first inserted.
// No operation allocates memory after construction.
//
// Invariants (checked by CheckInvariants(), called after every operation in tests):
//   - block 0 is the null block: never in the free queue, never hashed, ref count unused;
//   - a block is in the free queue iff its ref count is 0 (num_free_blocks() counts them);
//   - a block is in the cache map iff it has a hash, under exactly its (hash, group);
//   - num_free + #{blocks with ref > 0} == num_blocks − 1 (block conservation).
//
// Ownership: the pool owns all block state. Callers (the KV cache manager) hold block ids
// in their per-request block tables and must give every reference back through FreeBlocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/block_hash.h"
#include "core/page_planner.h"  // VllmSemantics

namespace kvsim {

// Memory for the pool's big arrays (records, cache map, free ring). Arrays of 2 MiB or more
// are 2 MiB-aligned and, on Linux, advised to use transparent huge pages before first touch:
// eviction and caching touch the map and the records at random, and with 4 KiB pages nearly
// every such access also misses the TLB (measured ≈ 12–15% of replay time at block 16).
void* AllocateLargeArray(size_t bytes);
void FreeLargeArray(void* p, size_t bytes);
template <class T>
struct LargeArrayAllocator {
  using value_type = T;
  LargeArrayAllocator() = default;
  template <class U>
  LargeArrayAllocator(const LargeArrayAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(AllocateLargeArray(n * sizeof(T))); }
  void deallocate(T* p, size_t n) { FreeLargeArray(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const LargeArrayAllocator<U>&) const {
    return true;
  }
};
template <class T>
using LargeVector = std::vector<T, LargeArrayAllocator<T>>;

using BlockId = int32_t;
inline constexpr BlockId kNullBlock = 0;
inline constexpr BlockId kNoBlock = -1;

class BlockPool {
 public:
  // `num_blocks` includes the null block (vLLM's num_gpu_blocks). With caching off nothing is
  // ever hashed and (latest) every freed block goes to the head.
  BlockPool(int64_t num_blocks, bool enable_caching = true,
            VllmSemantics semantics = VllmSemantics::kLatest);

  int64_t num_blocks() const { return num_blocks_; }
  int64_t num_free_blocks() const { return num_free_; }
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
  // free queue ([classic] all at the tail; [latest] hashed at the tail, unhashed at the head
  // keeping their order). Null blocks are skipped.
  void FreeBlocks(std::span<const BlockId> blocks);
  // Frees a request's block table in reverse order (vLLM's `free`).
  void FreeBlocksReversed(std::span<const BlockId> blocks);

  // The first-inserted cached block of (hash, group), or kNoBlock.
  BlockId GetCachedBlock(BlockHash hash, int32_t group) const {
    size_t i = BucketFor(hash, group);
    while (true) {
      const Bucket& bk = map_[i];
      const int s = bk.Find(hash, group);
      if (s >= 0) return bk.first[s];
      if (bk.EmptyMask() != 0) return kNoBlock;
      i = (i + 1) & map_mask_;
    }
  }
  // Prefetch hint for a lookup that will follow soon (replay's hot loop).
  void PrefetchLookup(BlockHash hash, int32_t group) const {
    __builtin_prefetch(&map_[BucketFor(hash, group)]);
  }
  // Gives `block` (held, not yet hashed) the hash and inserts it in the cache map.
  void CacheBlock(BlockId block, BlockHash hash, int32_t group);
  // CacheBlock(blocks[k], hashes[k · hash_stride], group) for k = 0..n−1 in that order, with
  // the map slots prefetched ahead (the allocation hot path). Null and already-cached blocks
  // are skipped.
  void CacheBlocks(const BlockId* blocks, const BlockHash* hashes, int64_t hash_stride,
                   int64_t n, int32_t group);
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
  std::vector<BlockId> FreeQueue() const;
  int64_t num_cached_blocks() const { return num_cached_; }

  // Aborts (KVSIM_CHECK) on any broken invariant. O(num_blocks).
  void CheckInvariants() const;

 private:
  // One block's state in one 32-byte record, so a block costs one cache line touch.
  struct Block {
    uint64_t pos;        // absolute position in the free-queue ring; kNotQueued if held
    BlockHash hash;
    int32_t ref;
    int32_t group;       // −1: no hash
    BlockId dup_next;    // next block with the same key, insertion order
    int32_t pad;
  };
  // One cache line of the cache map: up to kSlots keys (hash, group), each with the first
  // inserted block of that key. Probing is linear over buckets, with the invariant that a key
  // sits outside its home bucket only if every bucket from its home up to its own is full; so
  // a lookup stops at the first bucket with an empty slot, and erasing from a bucket that was
  // not full moves nothing (the common case: a branch-predictable one-line update).
  static constexpr int kSlots = 4;
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
  static constexpr uint64_t kNotQueued = ~uint64_t{0};
  static constexpr BlockId kTomb = -1;

  struct MapView;
  MapView View();
  template <bool kReversed>
  void FreeImpl(std::span<const BlockId> blocks);
  void QueueRemove(BlockId b);
  void QueueAppend(BlockId b);
  void QueuePrependRun(const BlockId* run, int64_t n);
  void Compact(int64_t room_front);
  void MapInsert(BlockId b);
  void MapErase(BlockId b);
  // Home bucket of a key: Fibonacci hashing of the hash with the group folded in (top bits
  // of a multiply), so even small, regular hashes (tests) spread over the table.
  size_t BucketFor(BlockHash hash, int32_t group) const {
    const uint64_t k =
        (hash + static_cast<uint64_t>(static_cast<uint32_t>(group)) * 0x9e3779b97f4a7c15ULL) *
        0xbf58476d1ce4e5b9ULL;
    return static_cast<size_t>(k >> map_shift_);
  }

  int64_t num_blocks_;
  bool enable_caching_;
  VllmSemantics semantics_;
  int64_t num_free_ = 0;
  int64_t num_cached_ = 0;

  LargeVector<Block> blk_;
  // The free queue: a ring of block ids between head_ and tail_ (absolute positions, index =
  // pos & ring_mask_). Removal from the middle leaves a tombstone; the ring is compacted when
  // full (amortized O(1): its capacity is at least 4 × num_blocks). Popping from the head is
  // a sequential scan, which is what makes eviction prefetchable.
  LargeVector<BlockId> ring_;
  uint64_t ring_mask_ = 0;
  uint64_t head_ = 0, tail_ = 0;

  LargeVector<Bucket> map_;  // a power of two ≥ num_blocks buckets: load ≤ 1/4 of the slots
  size_t map_mask_ = 0;      // number of buckets − 1
  int map_shift_ = 64;       // 64 − log2(number of buckets)
  std::vector<BlockId> scratch_;  // unhashed run collected by FreeBlocks (latest)
  std::vector<BlockId> compact_;  // Compact()'s buffer
};

}  // namespace kvsim
