// vLLM's data-parallel load balancing: which DP rank (engine core) a new request goes to.
//
// vLLM's front end (DPLBAsyncMPClient.get_core_engine_for_request, vllm/v1/engine/
// core_client.py) scores every rank by 4 · waiting + running over its own copy of the ranks'
// request counts and picks the lowest score, the first rank in index order on a tie; it then
// adds one to the chosen rank's waiting count ("for better balancing between stats updates
// from the coordinator (which happen every 100ms)"). The counts are replaced by the
// coordinator's publications (vllm/v1/engine/coordinator.py, stats_update_interval_ms = 100).
// Only an MoE model's DP ranks (DPEngineCoreProc) publish them; a dense model's ranks run as
// independent engines and the front end only ever adds its own assignments, so it deals the
// requests round-robin.
//
// The model: a publication at every multiple of `publish_interval` reads the ranks' counts as
// they are when the next request is routed after it (lazily, so the balancer adds no events;
// vLLM reads them when the ranks last reported). publish_interval 0 = never (dense).
#pragma once

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "core/check.h"
#include "sim/event.h"

namespace kvsim {

class DpLoadBalancer {
 public:
  DpLoadBalancer(int ranks, Tick publish_interval)
      : counts_(static_cast<size_t>(ranks)), interval_(publish_interval) {
    KVSIM_CHECK(ranks >= 1 && publish_interval >= 0);
  }

  // The rank for a request routed at `now`. `counts(rank)` returns that rank's (waiting,
  // running) request counts as they are now; it is called only when a publication is due.
  template <class Counts>
  int Pick(Tick now, Counts&& counts) {
    if (interval_ > 0 && now >= next_publish_) {
      for (size_t r = 0; r < counts_.size(); ++r) counts_[r] = counts(static_cast<int>(r));
      next_publish_ = (now / interval_ + 1) * interval_;
    }
    int best = 0;
    int64_t best_score = std::numeric_limits<int64_t>::max();
    for (size_t r = 0; r < counts_.size(); ++r) {
      const int64_t score = 4 * counts_[r].first + counts_[r].second;
      if (score < best_score) {
        best_score = score;
        best = static_cast<int>(r);
      }
    }
    ++counts_[static_cast<size_t>(best)].first;
    return best;
  }

 private:
  std::vector<std::pair<int64_t, int64_t>> counts_;  // the front end's (waiting, running)
  Tick interval_ = 0;
  Tick next_publish_ = 0;
};

}  // namespace kvsim
