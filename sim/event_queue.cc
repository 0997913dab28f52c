#include "sim/event_queue.h"

#include <algorithm>

namespace kvsim {
namespace {

// std::push_heap builds a max-heap; "a is less than b" must mean "b runs first".
struct HeapCompare {
  bool operator()(const Event& a, const Event& b) const { return EventOrder()(b, a); }
};

}  // namespace

uint64_t EventQueue::Push(Tick tick, EventKind kind, uint64_t payload) {
  Event e{tick, kind, next_seq_++, payload};
  heap_.push_back(e);
  std::push_heap(heap_.begin(), heap_.end(), HeapCompare());
  return e.seq;
}

void EventQueue::DropCancelledTop() {
  while (!heap_.empty() && !cancelled_.empty()) {
    auto it = cancelled_.find(heap_.front().seq);
    if (it == cancelled_.end()) return;
    cancelled_.erase(it);
    std::pop_heap(heap_.begin(), heap_.end(), HeapCompare());
    heap_.pop_back();
  }
}

std::optional<Event> EventQueue::Peek() {
  DropCancelledTop();
  if (heap_.empty()) return std::nullopt;
  return heap_.front();
}

std::optional<Event> EventQueue::Pop() {
  DropCancelledTop();
  if (heap_.empty()) return std::nullopt;
  std::pop_heap(heap_.begin(), heap_.end(), HeapCompare());
  Event e = heap_.back();
  heap_.pop_back();
  return e;
}

void EventQueue::Cancel(uint64_t seq) {
  if (seq >= next_seq_) return;
  for (const Event& e : heap_) {
    if (e.seq == seq) {
      cancelled_.insert(seq);
      return;
    }
  }
}

}  // namespace kvsim
