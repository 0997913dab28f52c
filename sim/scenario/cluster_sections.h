// The `cluster:` section of a scenario: prefill/decode (P/D) disaggregation. Parsed once
// into ClusterConfig (sim/cluster/cluster_config.h) by ParseClusterSection (called from the
// scenario loader); nothing downstream reads YAML. Keys:
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

#include "sim/cluster/cluster_config.h"
#include "sim/config/config_reader.h"

namespace kvsim {

struct Scenario;

// Whether a merged scenario tree describes a P/D cluster: it has a `cluster:` map (the rule
// ParseClusterSection applies; `cluster: null` is a single engine).
bool IsClusterTree(const ConfigNode& tree);

// Reads `cluster` from the root (and, in describe mode, documents every key). `tree` is the
// whole merged scenario tree (null in describe mode): pools are parsed from it.
void ParseClusterSection(ConfigReader& root, const ConfigNode* tree, Scenario& sc);

}  // namespace kvsim
