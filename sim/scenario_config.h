// Scenario: one experiment as typed structs, parsed once from YAML by sim/scenario/ (the
// only code that reads the file) and read by everything else. It sits above the components
// and gathers their own config structs, each defined beside the code that uses it; only the
// run-wide sections are defined here:
//   name, description, seed   identity and the root of all randomness
//   model, parallel, cache    ModelSpec and PlannerConfig (core/page_planner.h)
//   cache.offload             the CPU KV tier, OffloadSection (sim/instance/offload_tier_config.h)
//   scheduler                 SchedulerConfig, SchedulerExtras (sim/scheduler/scheduler_config.h)
//   cluster                   P/D disaggregation, ClusterConfig (sim/cluster/cluster_config.h)
//   workload                  WorkloadConfig (sim/workload/workload_config.h)
//   spec                      draft acceptance, SpecConfig (sim/instance/spec_config.h)
//   hardware, run, metrics, reference   run-wide sections (SimConfig, defined here)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/cost_model.h"
#include "core/memory_budget.h"
#include "core/model_spec.h"
#include "core/page_planner.h"
#include "sim/cluster/cluster_config.h"
#include "sim/config/config_tree.h"
#include "sim/instance/offload_tier_config.h"
#include "sim/instance/spec_config.h"
#include "sim/scheduler/scheduler_config.h"
#include "sim/workload/workload_config.h"

namespace kvsim {

struct RunConfig {
  double max_sim_seconds = 0;         // stop simulated time here (0 = run to completion)
  int64_t trace_max_requests = 2000;  // request lifecycles kept in --trace output
};

struct MetricsConfig {
  double kv_sample_interval_ms = 50;  // KV-usage time series resolution
};

// Measured metrics of a real serving run the scenario reproduces (`reference:`), compared
// with the simulated ones by `kvsim run` and fitted by `kvsim calibrate`. Keys are metric
// names (ReferenceMetricNames()), values in ms or tokens/s.
struct ReferenceConfig {
  std::string source;                                   // where the measurements come from
  std::vector<std::pair<std::string, double>> summary;  // whole run
  std::vector<std::vector<std::pair<std::string, double>>> stages;  // per load stage
  bool empty() const { return summary.empty() && stages.empty(); }
};

struct SimConfig {
  HardwareSpec hardware;
  std::string hardware_source;  // "preset H100-SXM + file x.yaml + inline"
  WorkloadConfig workload;
  SpecConfig spec;
  SchedulerExtras scheduler;
  RunConfig run;
  MetricsConfig metrics;
  ReferenceConfig reference;
};

struct Scenario {
  std::string name;
  std::string description;
  std::string source;  // file the scenario came from ("<built-in>/..." for embedded ones)
  uint64_t seed = 0;

  std::string model_preset;  // empty when layers were given inline
  ModelSpec model;
  std::optional<ModelSpec> draft;
  PlannerConfig cache;     // parallel.tp and cache.* (and the scheduler's token budget)
  OffloadSection offload;  // cache.offload
  SchedulerConfig scheduler;
  ClusterConfig cluster;  // P/D pools; cluster.enabled is false for a single engine
  SimConfig sim;          // hardware, workload, spec, run, metrics (sim/scenario/sim_sections.h)
  // cache.gpu_memory_utilization > 0 (and neither kv_memory_bytes nor num_gpu_blocks given):
  // how vLLM's worker derived cache.kv_memory_bytes (core/memory_budget.h).
  std::optional<MemoryBudget> memory_budget;

  ConfigNode tree;  // the merged tree the structs came from (after includes and overrides)

  // The KV cache plan of this scenario. A planner error names the key to change
  // ("parallel.tp: ..."); this prefixes it with the file and line that set that key (or the
  // closest enclosing key, or the scenario file when the value is a default).
  Result<KvCachePlan> Plan() const;
  // "file:line" where `key_path` (a.b.c) was set: its deepest present key, else the file.
  std::string Where(const std::string& key_path) const;
};

}  // namespace kvsim
