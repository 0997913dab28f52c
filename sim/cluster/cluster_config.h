// ClusterConfig: how a P/D cluster is built (sim/cluster/cluster_sim.h): its prefill and
// decode pools (each pool's own scenario: the base scenario with the pool's overrides), the
// topology of instances, NICs, switches and links, the routers and the KV transfer model.
// The cluster owns this struct; the scenario loader (sim/scenario/cluster_sections.cc) only
// fills it from the `cluster:` section, where each key's help text lives. Instances are
// named <pool><index> ("prefill0", "decode1").
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/kv_transfer.h"

namespace kvsim {

struct Scenario;  // sim/scenario_config.h

struct PoolConfig {
  std::string role;   // "prefill" or "decode"
  int64_t count = 1;  // instances
  // The pool's own scenario: the base with the pool overrides merged (its `cluster` removed).
  std::shared_ptr<const Scenario> scenario;
};

struct LinkConfig {
  std::string a;
  std::string b;
  double gbytes_per_s = 0;  // per direction
  double latency_us = 0;
};

struct TopologyConfig {
  std::string kind = "star";       // star | explicit
  std::string metric = "latency";  // latency | hops
  // star: every instance —(nic_gbytes_per_s, 0)— nic<i> —(nic_gbytes_per_s, latency)— switch.
  double nic_gbytes_per_s = 50;  // one 400 Gb/s RDMA NIC
  double nic_latency_us = 2;
  // explicit
  std::vector<std::string> switches;
  std::vector<std::string> nics;
  std::vector<LinkConfig> links;
};

// The router policies MakeRouter (sim/cluster/router.h) builds. The list lives here, with
// the config, so that the scenario loader can check a policy name without including the
// routers themselves; tests/sim/router_test.cc checks that the two agree.
inline const std::vector<std::string>& RouterPolicyNames() {
  static const std::vector<std::string> kNames = {"round_robin", "least_loaded", "prefix_aware"};
  return kNames;
}

struct RouterConfig {
  std::string prefill = "prefix_aware";      // one of RouterPolicyNames()
  std::string decode = "least_loaded";       // one of RouterPolicyNames()
  int64_t prefix_capacity_blocks = 1 << 20;  // hashes remembered per instance
  int64_t max_imbalance_tokens = 32768;      // load slack before affinity yields
  int64_t hash_block_tokens = 0;             // 0 = the prefill pool's block size
};

struct TransferConfig {
  KvTransferOptions options;
  KvTransferTimeModel time;
  double flow_rate_cap_gbytes_per_s = 0;                   // per transfer (e.g. one QP); 0 = none
  std::string relayout_source = "H100 measured defaults";  // or the calibration file
};

struct ClusterConfig {
  bool enabled = false;
  PoolConfig prefill;
  PoolConfig decode;
  TopologyConfig topology;
  RouterConfig router;
  TransferConfig transfer;
};

}  // namespace kvsim
