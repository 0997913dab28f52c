#include "sim/cluster/router.h"

#include <algorithm>

#include "core/check.h"

namespace kvsim {
namespace {

int LeastLoaded(const std::vector<InstanceLoad>& loads) {
  int best = 0;
  for (size_t i = 1; i < loads.size(); ++i) {
    if (loads[i].score() < loads[static_cast<size_t>(best)].score()) best = static_cast<int>(i);
  }
  return best;
}

}  // namespace

RoundRobinRouter::RoundRobinRouter(int num_instances)
    : num_instances_(static_cast<size_t>(num_instances)) {
  KVSIM_CHECK(num_instances > 0);
}

int RoundRobinRouter::Route(std::span<const BlockHash>, const std::vector<InstanceLoad>&) {
  const int i = static_cast<int>(next_);
  next_ = (next_ + 1) % num_instances_;
  return i;
}

int LeastLoadedRouter::Route(std::span<const BlockHash>, const std::vector<InstanceLoad>& loads) {
  KVSIM_CHECK(!loads.empty());
  return LeastLoaded(loads);
}

PrefixAwareRouter::PrefixAwareRouter(int num_instances, int64_t capacity, int64_t max_imbalance)
    : mem_(static_cast<size_t>(num_instances)), capacity_(capacity), max_imbalance_(max_imbalance) {
  KVSIM_CHECK(num_instances > 0 && capacity > 0 && max_imbalance >= 0);
}

int64_t PrefixAwareRouter::MatchLength(int i, std::span<const BlockHash> hashes) const {
  const Memory& m = mem_[static_cast<size_t>(i)];
  int64_t n = 0;
  for (BlockHash h : hashes) {
    if (!m.where.count(h)) break;
    ++n;
  }
  return n;
}

void PrefixAwareRouter::Remember(int i, std::span<const BlockHash> hashes) {
  Memory& m = mem_[static_cast<size_t>(i)];
  // Insert from the last block to the first so the prefix ends up most recent: a prefix
  // outlives its tails, as in an LRU prefix cache.
  for (auto it = hashes.rbegin(); it != hashes.rend(); ++it) {
    auto found = m.where.find(*it);
    if (found != m.where.end()) m.lru.erase(found->second);
    m.lru.push_front(*it);
    m.where[*it] = m.lru.begin();
  }
  while (static_cast<int64_t>(m.lru.size()) > capacity_) {
    m.where.erase(m.lru.back());
    m.lru.pop_back();
  }
}

int PrefixAwareRouter::Route(std::span<const BlockHash> hashes,
                             const std::vector<InstanceLoad>& loads) {
  KVSIM_CHECK(loads.size() == mem_.size());
  const int least = LeastLoaded(loads);
  const int64_t floor = loads[static_cast<size_t>(least)].score();
  int best = least;
  int64_t best_match = 0;
  for (size_t i = 0; i < loads.size(); ++i) {
    if (loads[i].score() > floor + max_imbalance_) continue;
    const int64_t match = MatchLength(static_cast<int>(i), hashes);
    const bool better =
        match > best_match ||
        (match == best_match && match > 0 &&
         loads[i].score() < loads[static_cast<size_t>(best)].score());
    if (better) {
      best = static_cast<int>(i);
      best_match = match;
    }
  }
  Remember(best, hashes);
  return best;
}

Result<std::unique_ptr<Router>> MakeRouter(const std::string& policy, int num_instances,
                                           int64_t prefix_capacity, int64_t max_imbalance) {
  std::unique_ptr<Router> r;
  if (policy == "round_robin") r = std::make_unique<RoundRobinRouter>(num_instances);
  if (policy == "least_loaded") r = std::make_unique<LeastLoadedRouter>();
  if (policy == "prefix_aware") {
    r = std::make_unique<PrefixAwareRouter>(num_instances, prefix_capacity, max_imbalance);
  }
  if (!r) return Status::Error("bad_value", "unknown router policy \"" + policy + "\"");
  return r;
}

}  // namespace kvsim
