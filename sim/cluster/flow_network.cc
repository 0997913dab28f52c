#include "sim/cluster/flow_network.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace kvsim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Relative slack for "saturated" and "drained": rates and bytes are doubles.
constexpr double kRelEps = 1e-9;

}  // namespace

FlowNetwork::FlowNetwork(std::vector<double> capacities_bytes_per_ns)
    : capacity_(std::move(capacities_bytes_per_ns)), carried_(capacity_.size(), 0.0) {
  for (double c : capacity_) KVSIM_CHECK(c > 0);
}

int64_t FlowNetwork::Add(std::vector<int> resources, double bytes, int64_t now,
                         double rate_cap) {
  KVSIM_CHECK(now == now_);  // AdvanceTo(now) first
  KVSIM_CHECK(bytes >= 0 && rate_cap > 0);
  std::sort(resources.begin(), resources.end());
  KVSIM_CHECK(std::adjacent_find(resources.begin(), resources.end()) == resources.end());
  for (int r : resources) KVSIM_CHECK(r >= 0 && static_cast<size_t>(r) < capacity_.size());
  const int64_t id = next_id_++;
  flows_[id] = Flow{std::move(resources), bytes, 0.0, rate_cap};
  Recompute();
  return id;
}

void FlowNetwork::Remove(int64_t id) {
  KVSIM_CHECK(flows_.erase(id) == 1);
  Recompute();
}

void FlowNetwork::AdvanceTo(int64_t now) {
  KVSIM_CHECK(now >= now_);
  const double dt = static_cast<double>(now - now_);
  if (dt > 0) {
    for (auto& [id, f] : flows_) {
      if (std::isinf(f.rate)) {
        f.remaining = 0;
        continue;
      }
      const double moved = std::min(f.remaining, f.rate * dt);
      f.remaining -= moved;
      for (int r : f.resources) carried_[static_cast<size_t>(r)] += moved;
    }
  }
  now_ = now;
}

int64_t FlowNetwork::TicksFor(double bytes, double rate) {
  if (bytes <= 0 || std::isinf(rate)) return 0;
  return static_cast<int64_t>(std::ceil(bytes / rate * (1.0 - kRelEps)));
}

std::optional<std::pair<int64_t, int64_t>> FlowNetwork::NextCompletion() const {
  std::optional<std::pair<int64_t, int64_t>> best;
  for (const auto& [id, f] : flows_) {
    const int64_t t = now_ + TicksFor(f.remaining, f.rate);
    if (!best || t < best->first) best = {t, id};
  }
  return best;
}

std::vector<int64_t> FlowNetwork::Finished() const {
  std::vector<int64_t> out;
  for (const auto& [id, f] : flows_) {
    // Drained, or less than one tick of bytes left (ceil already charged that tick).
    if (f.remaining <= 0 || std::isinf(f.rate) || f.remaining <= f.rate * (1.0 + kRelEps) * 1e-3) {
      out.push_back(id);
    }
  }
  return out;
}

std::vector<double> FlowNetwork::Load() const {
  std::vector<double> load(capacity_.size(), 0.0);
  for (const auto& [id, f] : flows_) {
    for (int r : f.resources) load[static_cast<size_t>(r)] += f.rate;
  }
  return load;
}

void FlowNetwork::Recompute() {
  // Progressive filling.
  std::vector<double> left = capacity_;
  std::vector<int64_t> unfrozen;
  for (auto& [id, f] : flows_) {
    f.rate = 0;
    if (f.resources.empty() && std::isinf(f.cap)) {
      f.rate = kInf;  // nothing to cross: done at once
    } else {
      unfrozen.push_back(id);
    }
  }
  while (!unfrozen.empty()) {
    std::vector<int> users(capacity_.size(), 0);
    for (int64_t id : unfrozen) {
      for (int r : flows_[id].resources) ++users[static_cast<size_t>(r)];
    }
    double inc = kInf;
    for (size_t r = 0; r < left.size(); ++r) {
      if (users[r] > 0) inc = std::min(inc, left[r] / users[r]);
    }
    for (int64_t id : unfrozen) inc = std::min(inc, flows_[id].cap - flows_[id].rate);
    KVSIM_CHECK(std::isfinite(inc) && inc >= 0);
    for (int64_t id : unfrozen) flows_[id].rate += inc;
    for (size_t r = 0; r < left.size(); ++r) left[r] -= inc * users[r];
    std::vector<int64_t> still;
    for (int64_t id : unfrozen) {
      const Flow& f = flows_[id];
      bool frozen = f.rate >= f.cap * (1.0 - kRelEps);
      for (int r : f.resources) {
        frozen = frozen || left[static_cast<size_t>(r)] <= capacity_[static_cast<size_t>(r)] * kRelEps;
      }
      if (!frozen) still.push_back(id);
    }
    KVSIM_CHECK(still.size() < unfrozen.size());  // every round freezes at least one flow
    unfrozen.swap(still);
  }
}

void FlowNetwork::CheckInvariants() const {
  const std::vector<double> load = Load();
  for (size_t r = 0; r < load.size(); ++r) {
    KVSIM_CHECK(load[r] <= capacity_[r] * (1.0 + 1e-6));
  }
  for (const auto& [id, f] : flows_) {
    if (f.resources.empty()) continue;
    KVSIM_CHECK(f.rate > 0);
    bool bottlenecked = f.rate >= f.cap * (1.0 - 1e-6);
    for (int r : f.resources) {
      // Saturated, and this flow is among the fastest through it.
      if (load[static_cast<size_t>(r)] < capacity_[static_cast<size_t>(r)] * (1.0 - 1e-6)) continue;
      bool fastest = true;
      for (const auto& [id2, g] : flows_) {
        if (std::find(g.resources.begin(), g.resources.end(), r) != g.resources.end() &&
            g.rate > f.rate * (1.0 + 1e-6)) {
          fastest = false;
        }
      }
      bottlenecked = bottlenecked || fastest;
    }
    KVSIM_CHECK_MSG(bottlenecked, "flow is not bottlenecked: not max-min fair");
  }
}

}  // namespace kvsim
