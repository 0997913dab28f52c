// Scenario: one experiment, parsed once from YAML into typed structs. Sections:
//   name, description, seed     identity and the root of all randomness
//   include                     files merged underneath this one (relative paths)
//   model                       `preset` (scenarios/models/<name>.yaml) or `layers`; `draft`
//   parallel                    tp
//   cache                       block size, pack size, KV dtype, layout, memory, Mamba mode...
//   cache.offload               the CPU KV offloading tier (sim/scenario/offload_section.h)
//   scheduler                   token budget and sequence limit
//   cluster                     P/D disaggregation (sim/scenario/cluster_sections.h)
//   hardware, workload, spec, run, metrics, sweep   the simulator's sections (sim_sections.h)
// Everything else in kvsim reads these structs, never YAML.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/model_spec.h"
#include "core/page_planner.h"
#include "sim/config/config_tree.h"
#include "sim/scenario/cluster_sections.h"
#include "sim/scenario/offload_section.h"
#include "sim/scenario/sim_sections.h"

namespace kvsim {

struct SchedulerConfig {
  int64_t max_num_batched_tokens = 8192;
  int64_t max_num_seqs = 1024;
};

struct Scenario {
  std::string name;
  std::string description;
  std::string source;  // file the scenario came from ("<built-in>/..." for embedded ones)
  uint64_t seed = 0;

  std::string model_preset;  // empty when layers were given inline
  ModelSpec model;
  std::optional<ModelSpec> draft;
  PlannerConfig cache;  // parallel.tp and cache.* (and the scheduler's token budget)
  OffloadSection offload;  // cache.offload
  SchedulerConfig scheduler;
  ClusterConfig cluster;  // P/D pools; cluster.enabled is false for a single engine
  SimConfig sim;  // hardware, workload, spec, run, metrics (sim/scenario/sim_sections.h)

  ConfigNode tree;  // the merged tree the structs came from (after includes and overrides)

  // The KV cache plan of this scenario. A planner error names the key to change
  // ("parallel.tp: ..."); this prefixes it with the file and line that set that key (or the
  // closest enclosing key, or the scenario file when the value is a default).
  Result<KvCachePlan> Plan() const;
  // "file:line" where `key_path` (a.b.c) was set: its deepest present key, else the file.
  std::string Where(const std::string& key_path) const;
};

}  // namespace kvsim
