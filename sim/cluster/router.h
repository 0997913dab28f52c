// Router: picks the instance of a pool that serves a request. A small interface with three
// policies (the registry is MakeRouter):
//   round_robin   instances in turn;
//   least_loaded  the instance with the least outstanding work (ties: lowest index);
//   prefix_aware  block-hash affinity: the instance whose remembered block hashes match the
//                 longest prefix of the request's hashes, unless its load exceeds the least
//                 loaded one by more than `max_imbalance` (then least_loaded); ties → least
//                 loaded → lowest index. After routing, the chosen instance remembers the
//                 request's hashes (up to `capacity` per instance, least recently used out).
// Routers see only what a real router sees: loads the cluster reports and the request's
// block hashes (computed by the cluster from the token ids, at `hash_block_tokens`). They do
// not look into the engines' caches. Deterministic: no randomness, stable tie-breaks.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/block_hash.h"
#include "core/status.h"

namespace kvsim {

struct InstanceLoad {
  int64_t waiting_tokens = 0;  // prompt tokens queued or in flight
  int64_t running = 0;         // requests admitted
  // The load the least_loaded policy compares.
  int64_t score() const { return waiting_tokens + running; }
};

class Router {
 public:
  virtual ~Router() = default;
  // The chosen instance of the pool. `loads` has one entry per instance when reads_loads(),
  // else it may be empty; `hashes` may be empty unless reads_hashes().
  virtual int Route(std::span<const BlockHash> hashes, const std::vector<InstanceLoad>& loads) = 0;
  virtual std::string_view name() const = 0;
  // What Route looks at, so that the cluster computes only that: the loads walk every
  // instance's queues, the hashes the whole prompt, once per routed request.
  virtual bool reads_loads() const { return true; }
  virtual bool reads_hashes() const { return false; }
};

class RoundRobinRouter final : public Router {
 public:
  explicit RoundRobinRouter(int num_instances);
  int Route(std::span<const BlockHash> hashes, const std::vector<InstanceLoad>& loads) override;
  std::string_view name() const override { return "round_robin"; }
  bool reads_loads() const override { return false; }

 private:
  size_t num_instances_;
  size_t next_ = 0;
};

class LeastLoadedRouter final : public Router {
 public:
  int Route(std::span<const BlockHash> hashes, const std::vector<InstanceLoad>& loads) override;
  std::string_view name() const override { return "least_loaded"; }
};

class PrefixAwareRouter final : public Router {
 public:
  // `capacity`: hashes remembered per instance; `max_imbalance`: load-score slack before the
  // affinity gives way to balance.
  PrefixAwareRouter(int num_instances, int64_t capacity, int64_t max_imbalance);
  int Route(std::span<const BlockHash> hashes, const std::vector<InstanceLoad>& loads) override;
  std::string_view name() const override { return "prefix_aware"; }
  bool reads_hashes() const override { return true; }
  // Leading hashes of `hashes` that instance `i` remembers.
  int64_t MatchLength(int i, std::span<const BlockHash> hashes) const;

 private:
  struct Memory {
    std::list<BlockHash> lru;  // most recent first
    std::unordered_map<BlockHash, std::list<BlockHash>::iterator> where;
  };
  void Remember(int i, std::span<const BlockHash> hashes);
  std::vector<Memory> mem_;
  int64_t capacity_;
  int64_t max_imbalance_;
};

// The registry: one router for each name of RouterPolicyNames() (sim/cluster/cluster_config.h).
Result<std::unique_ptr<Router>> MakeRouter(const std::string& policy, int num_instances,
                                           int64_t prefix_capacity, int64_t max_imbalance);

}  // namespace kvsim
