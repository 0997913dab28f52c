// FlowNetwork: concurrent transfers sharing links max-min fairly. Each flow crosses a set of
// resources (directed links, see topology.h) and drains a byte count; its rate is its
// max-min fair share, computed by progressive filling: raise every unfrozen flow's rate
// together until a resource saturates (or a flow hits its own cap), freeze the flows through
// it, repeat. Rates are recomputed whenever a flow starts or finishes, so between two such
// events every rate is constant and completion times are exact (rounded up to the next
// nanosecond tick).
//
// The network owns its flows; the cluster simulator owns time: it calls AdvanceTo(now)
// before adding or removing flows and asks NextCompletion() for the next event. Flow ids are
// handed out in increasing order and every iteration is in id order, so runs are
// deterministic. Bytes carried per resource are integrated for link utilisation.
//
// Invariants (CheckInvariants): no resource carries more than its capacity; every flow with a
// resource has a positive rate; a flow is bottlenecked (some resource on its path is
// saturated, or it runs at its cap) — the definition of max-min fairness.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace kvsim {

class FlowNetwork {
 public:
  explicit FlowNetwork(std::vector<double> capacities_bytes_per_ns);

  // Starts a flow of `bytes` over `resources` (each at most once). `rate_cap` bounds its rate
  // (e.g. one queue pair's limit); +inf = none. Call AdvanceTo(now) first.
  int64_t Add(std::vector<int> resources, double bytes, int64_t now,
              double rate_cap = std::numeric_limits<double>::infinity());
  // Stops a flow (finished or cancelled) and recomputes the rates.
  void Remove(int64_t id);
  // Drains every flow at its current rate up to `now`.
  void AdvanceTo(int64_t now);
  // The earliest (tick, flow) at which a flow finishes at the current rates.
  std::optional<std::pair<int64_t, int64_t>> NextCompletion() const;
  // Flows whose bytes are drained at `now` (after AdvanceTo(now)), in id order.
  std::vector<int64_t> Finished() const;

  double rate(int64_t id) const { return flows_.at(id).rate; }
  double remaining(int64_t id) const { return flows_.at(id).remaining; }
  bool active(int64_t id) const { return flows_.count(id) > 0; }
  size_t size() const { return flows_.size(); }
  int64_t now() const { return now_; }
  // Bytes carried so far per resource.
  const std::vector<double>& carried_bytes() const { return carried_; }
  const std::vector<double>& capacities() const { return capacity_; }
  // Current total rate per resource.
  std::vector<double> Load() const;

  // KVSIM_CHECKs the max-min invariants above.
  void CheckInvariants() const;

 private:
  struct Flow {
    std::vector<int> resources;
    double remaining = 0;
    double rate = 0;
    double cap = std::numeric_limits<double>::infinity();
  };
  void Recompute();
  static int64_t TicksFor(double bytes, double rate);

  std::vector<double> capacity_;
  std::vector<double> carried_;
  std::map<int64_t, Flow> flows_;
  int64_t next_id_ = 0;
  int64_t now_ = 0;
};

}  // namespace kvsim
