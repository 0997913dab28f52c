// The event order (tick, kind priority, insertion sequence) and lazy cancellation.
#include "sim/event_queue.h"

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <random>
#include <vector>

namespace kvsim {
namespace {

TEST_CASE("events pop by tick, then kind priority, then insertion order") {
  EventQueue q;
  q.Push(20, EventKind::kArrival, 1);
  q.Push(10, EventKind::kSchedule, 2);
  q.Push(10, EventKind::kArrival, 3);
  q.Push(10, EventKind::kStepEnd, 4);
  q.Push(10, EventKind::kArrival, 5);
  q.Push(5, EventKind::kSchedule, 6);
  std::vector<uint64_t> order;
  while (auto e = q.Pop()) order.push_back(e->payload);
  // tick 5; tick 10: step end, the two arrivals in insertion order, schedule; tick 20.
  CHECK(order == std::vector<uint64_t>{6, 4, 3, 5, 2, 1});
}

TEST_CASE("EventOrder is the one comparator: kind beats sequence, tick beats kind") {
  EventOrder before;
  CHECK(before(Event{1, EventKind::kSchedule, 0, 0}, Event{2, EventKind::kStepEnd, 0, 0}));
  CHECK(before(Event{1, EventKind::kStepEnd, 9, 0}, Event{1, EventKind::kArrival, 1, 0}));
  CHECK(before(Event{1, EventKind::kArrival, 1, 0}, Event{1, EventKind::kArrival, 2, 0}));
  CHECK_FALSE(before(Event{1, EventKind::kArrival, 2, 0}, Event{1, EventKind::kArrival, 2, 0}));
}

TEST_CASE("cancelled events never pop") {
  EventQueue q;
  const uint64_t a = q.Push(1, EventKind::kArrival, 1);
  q.Push(2, EventKind::kArrival, 2);
  const uint64_t c = q.Push(3, EventKind::kArrival, 3);
  q.Cancel(a);
  q.Cancel(c);
  q.Cancel(12345);  // unknown: ignored
  auto e = q.Pop();
  REQUIRE(e);
  CHECK(e->payload == 2);
  CHECK_FALSE(q.Pop());
  CHECK(q.empty());
}

TEST_CASE("property: a random push sequence pops sorted by EventOrder") {
  std::mt19937_64 rng(7);
  EventQueue q;
  std::vector<Event> pushed;
  for (int i = 0; i < 2000; ++i) {
    const Tick t = static_cast<Tick>(rng() % 50);
    const auto k = static_cast<EventKind>(rng() % kNumEventKinds);
    const uint64_t seq = q.Push(t, k, static_cast<uint64_t>(i));
    pushed.push_back({t, k, seq, static_cast<uint64_t>(i)});
  }
  std::stable_sort(pushed.begin(), pushed.end(), EventOrder());
  for (const Event& want : pushed) {
    auto got = q.Pop();
    REQUIRE(got);
    CHECK(got->payload == want.payload);
  }
  CHECK_FALSE(q.Pop());
}

}  // namespace
}  // namespace kvsim
