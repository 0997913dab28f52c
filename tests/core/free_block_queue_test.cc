// FreeBlockQueue on its own, over a test record of its own (not the pool's): order under
// push/pop/remove/prepend, tombstones skipped by PopFront, compaction keeping the order, and
// a randomized comparison with a std::deque, with CheckInvariants after every operation.
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <deque>
#include <random>
#include <vector>

#include "core/free_block_queue.h"

namespace kvsim {
namespace {

using Ids = std::vector<BlockId>;

struct Rec {
  uint64_t pos = FreeBlockQueue::kNotQueued;
};
static_assert(QueuedBlockRecord<Rec>);

void Check(const FreeBlockQueue& q, const std::vector<Rec>& rec) {
  std::vector<uint8_t> in_queue(rec.size(), 0);
  q.CheckInvariants(rec.data(), static_cast<int64_t>(rec.size()), in_queue);
  for (size_t b = 0; b < rec.size(); ++b)
    CHECK((in_queue[b] != 0) == (rec[b].pos != FreeBlockQueue::kNotQueued));
}

TEST_CASE("FreeBlockQueue: push, pop from the head, remove from the middle", "[free_queue]") {
  std::vector<Rec> rec(8);
  FreeBlockQueue q(8);
  CHECK(q.empty());
  for (BlockId b : {1, 2, 3, 4, 5}) q.PushBack(rec.data(), b);
  Check(q, rec);
  CHECK(q.Snapshot() == Ids{1, 2, 3, 4, 5});
  CHECK(rec[2].pos == rec[1].pos + 1);  // consecutive positions, no gaps yet

  Ids out(2);
  q.PopFront(2, out.data());
  CHECK(out == Ids{1, 2});
  for (BlockId b : out) FreeBlockQueue::MarkTaken(rec[static_cast<size_t>(b)]);
  CHECK(q.size() == 3);
  Check(q, rec);

  q.Remove(rec.data(), 4);  // middle: a tombstone between 3 and 5
  CHECK(q.Snapshot() == Ids{3, 5});
  q.Remove(rec.data(), 3);  // the head: the head moves past it
  CHECK(q.Snapshot() == Ids{5});
  CHECK(q.size() == 1);
  Check(q, rec);
}

TEST_CASE("FreeBlockQueue: PopFront skips tombstones", "[free_queue]") {
  std::vector<Rec> rec(6);
  FreeBlockQueue q(6);
  for (BlockId b : {1, 2, 3, 4, 5}) q.PushBack(rec.data(), b);
  q.Remove(rec.data(), 2);
  q.Remove(rec.data(), 3);
  Ids out(2);
  q.PopFront(2, out.data());
  CHECK(out == Ids{1, 4});
  for (BlockId b : out) FreeBlockQueue::MarkTaken(rec[static_cast<size_t>(b)]);
  CHECK(q.Snapshot() == Ids{5});
  Check(q, rec);
}

TEST_CASE("FreeBlockQueue: a run pushed at the front keeps its order", "[free_queue]") {
  std::vector<Rec> rec(10);
  FreeBlockQueue q(10);
  for (BlockId b : {1, 2, 3}) q.PushBack(rec.data(), b);
  const Ids run{7, 8, 9};
  q.PushFrontRun(rec.data(), run.data(), 3);
  CHECK(q.Snapshot() == Ids{7, 8, 9, 1, 2, 3});  // run[0] is the new head
  CHECK(q.size() == 6);
  Check(q, rec);
}

TEST_CASE("FreeBlockQueue: a batch through BackInserter equals single appends", "[free_queue]") {
  std::vector<Rec> rec(6);
  FreeBlockQueue q(6);
  q.PushBack(rec.data(), 5);
  FreeBlockQueue::BackInserter ins = q.ReserveBack(rec.data(), 3);
  for (BlockId b : {2, 4, 1}) ins.Push(rec[static_cast<size_t>(b)], b);
  q.Commit(ins);
  CHECK(q.Snapshot() == Ids{5, 2, 4, 1});
  CHECK(q.size() == 4);
  Check(q, rec);
}

TEST_CASE("FreeBlockQueue: compaction drops tombstones and keeps the order", "[free_queue]") {
  // 4 blocks → a ring of 16 slots. Keep 1 at the head and cycle 2 out and back in: each cycle
  // leaves one tombstone, so the live window [head, tail) grows by one slot per cycle from 3.
  // After 13 cycles it spans all 16 slots; the 14th append compacts first.
  std::vector<Rec> rec(4);
  FreeBlockQueue q(4);
  for (BlockId b : {1, 2, 3}) q.PushBack(rec.data(), b);
  for (int cycle = 0; cycle < 14; ++cycle) {
    q.Remove(rec.data(), 2);
    q.PushBack(rec.data(), 2);
    Check(q, rec);
  }
  CHECK(q.Snapshot() == Ids{1, 3, 2});
  // After the compaction the live entries are contiguous again: 1, 3, 2 at p, p+1, p+2
  // (2 was appended just after the compaction).
  CHECK(rec[3].pos == rec[1].pos + 1);
  CHECK(rec[2].pos == rec[3].pos + 1);

  // Fill the window again (13 more cycles of 3: 15 slots before the last append, 16 after),
  // then a run at the front no longer fits: compaction leaves room before the entries.
  for (int cycle = 0; cycle < 13; ++cycle) {
    q.Remove(rec.data(), 3);
    q.PushBack(rec.data(), 3);
  }
  CHECK(q.Snapshot() == Ids{1, 2, 3});
  CHECK(rec[2].pos != rec[1].pos + 1);  // tombstones in between
  const Ids run{0};
  q.PushFrontRun(rec.data(), run.data(), 1);
  CHECK(q.Snapshot() == Ids{0, 1, 2, 3});
  CHECK(rec[1].pos == rec[0].pos + 1);
  CHECK(rec[2].pos == rec[1].pos + 1);
  CHECK(rec[3].pos == rec[2].pos + 1);
  Check(q, rec);
}

TEST_CASE("FreeBlockQueue against a std::deque under random churn", "[free_queue][property]") {
  std::mt19937_64 rng(7);
  const int64_t n = 33;  // a ring of 256 slots: many compactions over the run
  std::vector<Rec> rec(static_cast<size_t>(n));
  FreeBlockQueue q(n);
  std::deque<BlockId> ref;
  Ids held;
  for (BlockId b = 0; b < n; ++b) held.push_back(b);
  for (int step = 0; step < 20000; ++step) {
    const int op = static_cast<int>(rng() % 5);
    if (op == 0 && !held.empty()) {  // back
      const size_t i = rng() % held.size();
      q.PushBack(rec.data(), held[i]);
      ref.push_back(held[i]);
      held.erase(held.begin() + static_cast<long>(i));
    } else if (op == 1 && !held.empty()) {  // a run to the front
      const size_t k = 1 + rng() % std::min<size_t>(3, held.size());
      const Ids run(held.end() - static_cast<long>(k), held.end());
      held.resize(held.size() - k);
      q.PushFrontRun(rec.data(), run.data(), static_cast<int64_t>(k));
      ref.insert(ref.begin(), run.begin(), run.end());
    } else if (op == 2 && !ref.empty()) {  // from the head
      const int64_t k = 1 + static_cast<int64_t>(rng() % std::min<size_t>(4, ref.size()));
      Ids out(static_cast<size_t>(k));
      q.PopFront(k, out.data());
      for (BlockId b : out) {
        REQUIRE(b == ref.front());
        ref.pop_front();
        FreeBlockQueue::MarkTaken(rec[static_cast<size_t>(b)]);
        held.push_back(b);
      }
    } else if (op >= 3 && !ref.empty()) {  // from anywhere
      const size_t i = rng() % ref.size();
      const BlockId b = ref[i];
      q.Remove(rec.data(), b);
      ref.erase(ref.begin() + static_cast<long>(i));
      held.push_back(b);
    }
    REQUIRE(q.size() == static_cast<int64_t>(ref.size()));
    if (step % 61 == 0) {
      CHECK(q.Snapshot() == Ids(ref.begin(), ref.end()));
      Check(q, rec);
    }
  }
  CHECK(q.Snapshot() == Ids(ref.begin(), ref.end()));
  Check(q, rec);
}

}  // namespace
}  // namespace kvsim
