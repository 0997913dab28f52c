// The `cluster:` section of a scenario: prefill/decode (P/D) disaggregation. Parsed once
// into ClusterConfig by ParseClusterSection (called from the scenario loader); nothing
// downstream reads YAML. Keys:
//
//   cluster.prefill / cluster.decode    a pool: `count` instances, each an engine with the
//       scenario's model/parallel/cache/scheduler/hardware, with the pool's own `model`,
//       `parallel`, `cache`, `scheduler` and `hardware` maps merged over them (a pool `model`
//       with `preset` or `layers` replaces the model instead). Each pool is parsed as a
//       whole scenario, so its errors name the file and line of the pool's keys.
//   cluster.topology   kind star (one NIC link per instance to one switch) or explicit
//       (switches, nics and links naming instances "prefill0".., "decode0"..); the path
//       metric (latency | hops).
//   cluster.router     per-pool policy (round_robin | least_loaded | prefix_aware) and the
//       prefix-aware memory and load slack.
//   cluster.transfer   KV transfer options (core/kv_transfer.h) and the time model.
//
// Instances are named <pool><index>. A scenario without `cluster:` is a single engine.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/kv_transfer.h"
#include "sim/config/config_reader.h"

namespace kvsim {

struct Scenario;

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

struct RouterConfig {
  std::string prefill = "prefix_aware";
  std::string decode = "least_loaded";
  int64_t prefix_capacity_blocks = 1 << 20;  // hashes remembered per instance
  int64_t max_imbalance_tokens = 32768;       // load slack before affinity yields
  int64_t hash_block_tokens = 0;              // 0 = the prefill pool's block size
};

struct TransferConfig {
  KvTransferOptions options;
  KvTransferTimeModel time;
  double flow_rate_cap_gbytes_per_s = 0;  // per transfer (e.g. one QP); 0 = none
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

// Reads `cluster` from the root (and, in describe mode, documents every key). `tree` is the
// whole merged scenario tree (null in describe mode): pools are parsed from it.
void ParseClusterSection(ConfigReader& root, const ConfigNode* tree, Scenario& sc);

}  // namespace kvsim
