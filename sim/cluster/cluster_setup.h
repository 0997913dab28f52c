// ClusterSetup: the static part of a P/D cluster, built once from a scenario's `cluster:`
// section: each pool's KV cache plan, the transfer plan between them (core/kv_transfer.h),
// the topology with a node per instance, and the network path of every prefill → decode
// instance pair. The cluster simulator (cluster_sim.h) owns time and state; this owns
// nothing that changes. FormatClusterSetup is the human summary `kvsim run` prints before
// (or, without a workload, instead of) a simulation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/kv_transfer.h"
#include "core/page_planner.h"
#include "sim/cluster/topology.h"
#include "sim/scenario_config.h"

namespace kvsim {

struct ClusterSetup {
  KvCachePlan prefill_plan;
  KvCachePlan decode_plan;
  KvTransferPlan transfer;
  Topology topology;
  std::vector<int> prefill_nodes;  // topology node of prefill instance i
  std::vector<int> decode_nodes;
  std::vector<std::vector<TopoPath>> paths;  // [prefill i][decode j]

  const TopoPath& path(int p, int d) const {
    return paths[static_cast<size_t>(p)][static_cast<size_t>(d)];
  }
};

// Fails (exit code 2 material) when a pool cannot be planned, the pools cannot exchange KV
// (kv_transfer's reasons), or some prefill instance cannot reach some decode instance.
Result<ClusterSetup> BuildClusterSetup(const Scenario& sc);

// Builds the topology alone (exposed for tests).
Result<Topology> BuildTopology(const ClusterConfig& cc);

// Pools, plans, transfer treatment, paths, and the isolated cost of a few prompt lengths.
std::string FormatClusterSetup(const Scenario& sc, const ClusterSetup& setup);

}  // namespace kvsim
