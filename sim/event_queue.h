// EventQueue: a binary min-heap of Events ordered by EventOrder (sim/event.h). It assigns
// each pushed event its insertion sequence number, so ties at one tick and kind pop in FIFO
// order. Cancellation is lazy: Cancel() marks the sequence number and Pop() skips it.
// Single-threaded; one queue per simulation.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_set>
#include <vector>

#include "sim/event.h"

namespace kvsim {

class EventQueue {
 public:
  // Adds an event; returns its sequence number (the handle for Cancel).
  uint64_t Push(Tick tick, EventKind kind, uint64_t payload = 0);
  // Removes and returns the next event that was not cancelled, or nullopt when none is left.
  std::optional<Event> Pop();
  // The next live event without removing it.
  std::optional<Event> Peek();
  // Marks an event as cancelled; a no-op for unknown or already popped events.
  void Cancel(uint64_t seq);

  bool empty() { return !Peek().has_value(); }
  size_t size_including_cancelled() const { return heap_.size(); }

 private:
  void DropCancelledTop();

  // Invariant: heap_ is a heap under the reverse of EventOrder (front = first to run).
  std::vector<Event> heap_;
  std::unordered_set<uint64_t> cancelled_;  // tombstones, erased when their event surfaces
  uint64_t next_seq_ = 0;
};

}  // namespace kvsim
