// Scenario: one experiment as typed structs, parsed once from YAML by sim/scenario/ (the
// only code that reads the file) and read by everything else. It gathers the components'
// own config structs (PlannerConfig in core, WorkloadConfig beside the workload,
// ClusterConfig beside the cluster) and the engine's sections defined here:
//   name, description, seed     identity and the root of all randomness
//   model, parallel, cache      ModelSpec and PlannerConfig (core/page_planner.h)
//   cache.offload               the CPU KV offloading tier (OffloadSection)
//   scheduler                   token budget and sequence limit (SchedulerConfig)
//   cluster                     P/D disaggregation (sim/cluster/cluster_config.h)
//   hardware, workload, spec, run, metrics, reference   the simulator's sections (SimConfig)
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
#include "sim/workload/workload_config.h"

namespace kvsim {

struct SpecConfig {
  double acceptance_rate = 0.7;  // per-draft-token acceptance probability (i.i.d.)
  std::string method = "mtp";    // mtp | eagle | draft | dflash
  bool eagle() const { return method == "eagle" || method == "mtp"; }
};

struct SchedulerExtras {
  int64_t long_prefill_token_threshold = 0;
  bool enable_chunked_prefill = true;
  std::string policy = "fcfs";
  bool full_sequence_must_fit = true;
  // vLLM's default engine; off by default here (its fitted step times match measured runs
  // better sync, README). Single-engine runs only: P/D instances and drafts run sync.
  bool async_scheduling = false;
  // [latest] SchedulerConfig.watermark: a waiting request is admitted only if
  // int(watermark · num_gpu_blocks) blocks stay free beyond it while others run (0 = off).
  double watermark = 0;
};

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

// cache.offload as the scenario gives it; ScenarioOffloadConfig (sim/scenario/offload_section.h)
// checks it against the plan and turns it into the connector's config.
struct OffloadSection {
  bool enabled = false;  // cache.offload is present
  int64_t cpu_bytes = 0;
  int64_t num_cpu_blocks = 0;
  int64_t block_size = 0;
  std::string eviction_policy = "lru";
  int64_t store_threshold = 0;
  int64_t max_tracker_size = 64000;
  // `kvsim run`: the GPU's host link the copies take (per GPU, per direction).
  double pcie_gbytes_per_s = 55;
  double pcie_latency_us = 10;
  double copy_kernel_us = 5;  // launch + tail of one copy kernel (one per KV tensor per job)
  bool shared_link = false;   // loads and stores queue on one link (half duplex)
  // An empty tier (cpu_bytes or num_cpu_blocks 0, e.g. a sweep's baseline point): nothing is
  // offloaded, the run still reports the tier's columns.
  bool empty() const { return cpu_bytes == 0 && num_cpu_blocks == 0; }
};

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
