// The scenario sections the simulator reads (beyond the model and cache the page planner
// needs): hardware and cost-model coefficients, the workload, speculative decoding, run
// limits, metrics/trace output and the scheduler's extra knobs. Parsed once into these
// structs by ParseSimSections (called from the scenario loader); nothing downstream sees
// YAML. Every key is documented through ConfigReader, so `kvsim list` prints it.
//
//   hardware:   preset (H100-SXM, H200, B200, A100-80G), file (a hardware YAML, e.g. a GPU
//               calibration), then any coefficient inline; later sources win.
//   workload:   kind shared_prefix | multi_turn | agent_tree | trace, arrivals, lengths, caps.
//   spec:       acceptance_rate, method (mtp | eagle | draft | dflash).
//   run:        max_sim_seconds; trace_max_requests.
//   metrics:    kv_sample_interval_ms.
//   sweep:      not parsed here: sim/sweep expands it into points before parsing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cost_model.h"
#include "sim/config/config_reader.h"

namespace kvsim {

struct Scenario;

// A length distribution in tokens. `fixed` always gives `mean`.
struct LengthDist {
  std::string dist = "fixed";  // fixed | uniform | exponential | lognormal | normal
  double mean = 0;
  double cv = 0.5;  // coefficient of variation (lognormal, normal)
  int64_t min = 1;
  int64_t max = 1 << 20;
};

struct SystemPromptConfig {
  int64_t tokens = 0;   // length of each shared system prompt (0 = none)
  int64_t count = 1;    // distinct system prompts
  double zipf_s = 0.0;  // popularity skew over prompts (0 = uniform)
};

struct MultiTurnConfig {
  LengthDist turns{"uniform", 4, 0.5, 2, 8};
  double think_time_s = 5.0;  // mean (exponential) time between a reply and the next turn
};

struct AgentTreeConfig {
  int64_t depth = 3;      // levels below the root
  int64_t branching = 2;  // children per node
  LengthDist tool_tokens{"fixed", 200, 0.5, 1, 1 << 20};  // tool output appended per child
  double think_time_s = 0.2;
};

struct TraceConfig {
  std::string path;                // file (relative to the scenario file or the working dir)
  std::string format = "auto";     // auto | mooncake | tokens | azure
  double time_scale = 1.0;         // arrival times are multiplied by this
  bool required = true;            // a missing file is an error (false: fall back to synthetic)
};

// One stage of staged load (inference-perf's `constant` load stages): requests arrive at
// `rate_per_s` for `duration_s`, then the next stage begins.
struct LoadStage {
  double rate_per_s = 1;
  double duration_s = 1;
};

struct WorkloadConfig {
  std::string kind = "shared_prefix";
  int64_t num_requests = 1000;  // cap on requests created (0 = no cap)
  double duration_s = 0;        // cap on arrival times (0 = none)
  std::string arrival = "poisson";  // poisson | gamma | burst (all at t = 0)
  double rate_per_s = 10;
  double gamma_cv = 2.0;
  std::vector<LoadStage> stages;  // non-empty: rate_per_s by stage, arrivals end after the last
  int64_t concurrency = 0;        // > 0: closed loop, this many clients each with one request
                                  // in flight (shared_prefix)
  LengthDist prompt_tokens{"lognormal", 512, 0.5, 16, 32768};
  LengthDist output_tokens{"lognormal", 256, 0.5, 1, 8192};
  int64_t vocab_size = 32000;
  SystemPromptConfig system_prompt;
  MultiTurnConfig multi_turn;
  AgentTreeConfig agent_tree;
  TraceConfig trace;
  std::string scenario_dir;  // directory of the scenario file, for relative trace paths
  int64_t max_model_len = 0;  // the model's context (set by the loader; 0 = unknown): bounds trace prompts
};

struct SpecConfig {
  double acceptance_rate = 0.7;   // per-draft-token acceptance probability (i.i.d.)
  std::string method = "mtp";     // mtp | eagle | draft | dflash
  bool eagle() const { return method == "eagle" || method == "mtp"; }
};

struct SchedulerExtras {
  int64_t long_prefill_token_threshold = 0;
  bool enable_chunked_prefill = true;
  std::string policy = "fcfs";
  bool full_sequence_must_fit = true;
  // vLLM's default engine; off until the step-time model splits a step's CPU and GPU parts
  // (async overlaps them). Single-engine runs only: P/D instances and drafts run sync.
  bool async_scheduling = false;
};

struct RunConfig {
  double max_sim_seconds = 0;        // stop simulated time here (0 = run to completion)
  int64_t trace_max_requests = 2000; // request lifecycles kept in --trace output
};

struct MetricsConfig {
  double kv_sample_interval_ms = 50;  // KV-usage time series resolution
};

// Measured metrics of a real serving run the scenario reproduces (`reference:`), compared
// with the simulated ones by `kvsim run` and fitted by `kvsim calibrate`. Keys are metric
// names (ReferenceMetricNames()), values in ms or tokens/s.
struct ReferenceConfig {
  std::string source;  // where the measurements come from
  std::vector<std::pair<std::string, double>> summary;              // whole run
  std::vector<std::vector<std::pair<std::string, double>>> stages;  // per load stage
  bool empty() const { return summary.empty() && stages.empty(); }
};

// The metric names a reference may give: ttft_mean_ms, ttft_p90_ms, ttft_p99_ms,
// tpot_mean_ms, e2e_mean_ms, e2e_p90_ms, e2e_p99_ms, output_tok_per_s.
const std::vector<std::string>& ReferenceMetricNames();

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

// Reads hardware, workload, spec, run, metrics (and marks `sweep` as known) from the root.
void ParseSimSections(ConfigReader& root, Scenario& sc);
// Reads the scheduler keys beyond the token budget and sequence limit.
void ParseSchedulerExtras(ConfigReader& sched, Scenario& sc);

// Hardware preset names (scenarios/hardware/*.yaml, by their `name`).
std::vector<std::string> HardwarePresetNames();

}  // namespace kvsim
