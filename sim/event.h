// Events and their one ordering. Simulated time is an integer number of nanoseconds (Tick);
// nothing in the simulator uses floating-point time. Events at the same tick run in the
// order of EventKind (the enum value is the priority, lower first), then in insertion order.
// EventOrder below is the only definition of that order; the queue uses it and
// tests/sim/event_test.cc checks it. (Vidur's simulator defined its order twice and the heap
// used the copy that ignores the kind; this file exists so that cannot happen here.)
#pragma once

#include <cstdint>
#include <string_view>

namespace kvsim {

using Tick = int64_t;  // nanoseconds of simulated time
inline constexpr Tick kTicksPerUs = 1000;
inline constexpr Tick kTicksPerMs = 1000 * 1000;
inline constexpr Tick kTicksPerSecond = 1000 * 1000 * 1000;

// Kinds of events, in the order they run at equal ticks. Why this order:
//   kStepEnd first: a step that finishes at t frees blocks and emits tokens before anything
//     else looks at the engine, so work that arrives at t sees the post-step state;
//   kKvReady, kWireStart (P/D clusters only, sim/cluster): KV that became usable on a decode
//     instance at t joins its batch, and transfers whose posting ended at t go on the wire,
//     before t's arrivals and schedules;
//   kArrival next: every request that arrives at t is queued before the scheduler runs;
//   kSchedule last: the scheduler sees all of tick t's arrivals and completions at once.
enum class EventKind : uint8_t {
  kStepEnd = 0,
  kKvReady = 1,
  kWireStart = 2,
  kArrival = 3,
  kSchedule = 4,
};
inline constexpr int kNumEventKinds = 5;

constexpr std::string_view EventKindName(EventKind k) {
  switch (k) {
    case EventKind::kStepEnd: return "step_end";
    case EventKind::kKvReady: return "kv_ready";
    case EventKind::kWireStart: return "wire_start";
    case EventKind::kArrival: return "arrival";
    case EventKind::kSchedule: return "schedule";
  }
  return "?";
}

struct Event {
  Tick tick = 0;
  EventKind kind = EventKind::kArrival;
  uint64_t seq = 0;       // insertion sequence number, assigned by the queue
  uint64_t payload = 0;   // meaning depends on kind (e.g. the arriving request's index)
};

// The order of events: (tick, kind priority, insertion sequence). Returns true if `a` runs
// before `b`.
struct EventOrder {
  constexpr bool operator()(const Event& a, const Event& b) const {
    if (a.tick != b.tick) return a.tick < b.tick;
    if (a.kind != b.kind) return static_cast<uint8_t>(a.kind) < static_cast<uint8_t>(b.kind);
    return a.seq < b.seq;
  }
};

}  // namespace kvsim
