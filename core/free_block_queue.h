// FreeBlockQueue: a block pool's free blocks in eviction order (head = the next block handed
// out), as a ring of block ids with tombstones. It is one part of a block pool
// (core/block_pool.h), kept apart so that another pool can reuse it; which end a released
// block joins is the pool's eviction policy (core/block_eviction_policy.h), not the queue's.
//
// Layout (why it is fast): the ids sit between two absolute positions head_ and tail_ (index
// = position & mask), so popping from the head is a sequential scan that hardware and
// software prefetching can run ahead of; removal from the middle (a prefix hit on a free
// block) leaves a tombstone; append and prepend are stores. The ring holds at least 4 ×
// num_blocks slots and is compacted (tombstones dropped, order kept) only when an insertion
// finds it full, so every operation is amortized O(1). Nothing is allocated after
// construction.
//
// Each queued block's position lives in the block's own record (`pos`, kNotQueued when it is
// not queued), so removal needs no search and the pool keeps a block's state in one record.
// Any record type with a `uint64_t pos` works (QueuedBlockRecord); operations that move
// blocks take the records array.
//
// Invariants (CheckInvariants): every live ring entry b has rec[b].pos == its position; no
// block appears twice; size() counts the live entries.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/check.h"
#include "core/large_array.h"
#include "core/types.h"

namespace kvsim {

// A block record the queue can hold: where the block sits in the ring.
template <class R>
concept QueuedBlockRecord = requires(R r) {
  { r.pos } -> std::same_as<uint64_t&>;
};

class FreeBlockQueue {
 public:
  static constexpr uint64_t kNotQueued = ~uint64_t{0};

  // Room for `num_blocks` queued blocks (ids 0..num_blocks−1); starts empty.
  explicit FreeBlockQueue(int64_t num_blocks) {
    const size_t n = static_cast<size_t>(num_blocks);
    size_t cap = 16;
    while (cap < 4 * n) cap <<= 1;
    ring_.assign(cap, kTomb);
    mask_ = cap - 1;
    head_ = tail_ = kOrigin;
    compact_.reserve(n);
  }

  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Takes the first `n` ≤ size() blocks off the head, in order, into `out`. Their records
  // still hold their old positions: the caller clears them with MarkTaken as it visits each
  // record (the pool does so in its eviction loop, which touches the record anyway).
  void PopFront(int64_t n, BlockId* out) {
    KVSIM_DCHECK(n <= size_);
    const BlockId* ring = ring_.data();
    const uint64_t mask = mask_;
    uint64_t head = head_;
    for (int64_t k = 0; k < n; ++k) {
      BlockId b;
      while ((b = ring[head & mask]) == kTomb) ++head;
      ++head;
      out[k] = b;
    }
    head_ = head;
    size_ -= n;
  }
  template <QueuedBlockRecord R>
  static void MarkTaken(R& rec) {
    rec.pos = kNotQueued;
  }

  // Removes queued block b from wherever it is (a tombstone is left behind).
  template <QueuedBlockRecord R>
  void Remove(R* rec, BlockId b) {
    R& k = rec[b];
    ring_[k.pos & mask_] = kTomb;
    if (k.pos == head_) ++head_;
    k.pos = kNotQueued;
    --size_;
  }
  // Warms the ring line Remove(rec, b) will write (for a batch of removals).
  template <QueuedBlockRecord R>
  void PrefetchRemove(const R& rec) const {
    __builtin_prefetch(&ring_[rec.pos & mask_], 1);
  }

  template <QueuedBlockRecord R>
  void PushBack(R* rec, BlockId b) {
    if (tail_ - head_ >= ring_.size()) Compact(rec, 0);
    ring_[tail_ & mask_] = b;
    rec[b].pos = tail_++;
    ++size_;
  }

  // Inserts run[0..n) before the head, keeping their order (run[0] becomes the head).
  template <QueuedBlockRecord R>
  void PushFrontRun(R* rec, const BlockId* run, int64_t n) {
    if (tail_ - head_ + static_cast<uint64_t>(n) > ring_.size()) Compact(rec, n);
    for (int64_t i = n - 1; i >= 0; --i) {
      --head_;
      ring_[head_ & mask_] = run[i];
      rec[run[i]].pos = head_;
    }
    size_ += n;
  }

  // A batch of appends into room reserved up front: its state stays in locals (registers)
  // while the caller's loop also writes records; Commit publishes it. No other operation on
  // the queue may run between ReserveBack and Commit.
  class BackInserter {
   public:
    template <QueuedBlockRecord R>
    void Push(R& rec, BlockId b) {
      ring_[tail_ & mask_] = b;
      rec.pos = tail_++;
      ++n_;
    }

   private:
    friend class FreeBlockQueue;
    BackInserter(BlockId* ring, uint64_t mask, uint64_t tail)
        : ring_(ring), mask_(mask), tail_(tail) {}
    BlockId* ring_;
    uint64_t mask_;
    uint64_t tail_;
    int64_t n_ = 0;
  };
  // Room for `n` appends (compacting now if needed: compaction only drops tombstones, so
  // doing it early changes no order).
  template <QueuedBlockRecord R>
  BackInserter ReserveBack(R* rec, int64_t n) {
    if (tail_ - head_ + static_cast<uint64_t>(n) > ring_.size()) Compact(rec, 0);
    return BackInserter(ring_.data(), mask_, tail_);
  }
  void Commit(const BackInserter& ins) {
    tail_ = ins.tail_;
    size_ += ins.n_;
  }

  // The queue from head to tail. O(ring); for tests and views.
  std::vector<BlockId> Snapshot() const {
    std::vector<BlockId> out;
    out.reserve(static_cast<size_t>(size_));
    for (uint64_t p = head_; p != tail_; ++p) {
      const BlockId b = ring_[p & mask_];
      if (b != kTomb) out.push_back(b);
    }
    return out;
  }

  // Aborts (KVSIM_CHECK) on a broken invariant. Marks in_queue[b] = 1 for every queued block
  // (`in_queue` must hold num_blocks zeros), for the owner's own checks. O(ring).
  template <QueuedBlockRecord R>
  void CheckInvariants(const R* rec, int64_t num_blocks, std::vector<uint8_t>& in_queue) const {
    KVSIM_CHECK(tail_ >= head_ && tail_ - head_ <= ring_.size());
    KVSIM_CHECK(static_cast<int64_t>(in_queue.size()) == num_blocks);
    int64_t count = 0;
    for (uint64_t p = head_; p != tail_; ++p) {
      const BlockId b = ring_[p & mask_];
      if (b == kTomb) continue;
      KVSIM_CHECK(b >= 0 && b < num_blocks);
      KVSIM_CHECK(rec[b].pos == p);
      KVSIM_CHECK(!in_queue[static_cast<size_t>(b)]);
      in_queue[static_cast<size_t>(b)] = 1;
      ++count;
    }
    KVSIM_CHECK(count == size_);
  }

 private:
  static constexpr BlockId kTomb = -1;
  // Positions start here so that prepending never wraps below zero.
  static constexpr uint64_t kOrigin = uint64_t{1} << 62;

  // Rewrites the live entries contiguously, keeping `room_front` free slots before them.
  template <QueuedBlockRecord R>
  void Compact(R* rec, int64_t room_front) {
    compact_.clear();
    for (uint64_t p = head_; p != tail_; ++p) {
      const BlockId b = ring_[p & mask_];
      if (b != kTomb) compact_.push_back(b);
    }
    std::fill(ring_.begin(), ring_.end(), kTomb);
    head_ = kOrigin + static_cast<uint64_t>(room_front);
    tail_ = head_;
    for (BlockId b : compact_) {
      ring_[tail_ & mask_] = b;
      rec[b].pos = tail_++;
    }
  }

  LargeVector<BlockId> ring_;
  uint64_t mask_ = 0;
  uint64_t head_ = 0, tail_ = 0;  // absolute positions: live entries are [head_, tail_)
  int64_t size_ = 0;
  std::vector<BlockId> compact_;  // Compact()'s buffer
};

}  // namespace kvsim
