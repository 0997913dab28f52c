// WorkloadConfig: what the workload generators (sim/workload/) are asked to make: the kind
// (shared_prefix, multi_turn, agent_tree, trace), arrivals, lengths, caps and the kind's own
// knobs. The workload owns this struct; the scenario loader (sim/scenario/sim_sections.cc)
// only fills it from the `workload:` section, where each key's help text lives.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvsim {

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
  // > 0: a fixed pool of count × users prompts (each system prompt with `users` questions of
  // its own), made once, shuffled once, and re-sent in turn: request k of a load stage sends
  // pool[k mod pool size] (inference-perf's shared_prefix generator). 0: every request gets a
  // fresh question after a system prompt drawn by popularity.
  int64_t users = 0;
};

// The most prompt tokens a prompt pool may hold (count × users × question length): the pool
// is kept as token ids for the whole run.
inline constexpr int64_t kMaxPromptPoolTokens = int64_t{1} << 25;
// The longest synthetic length (a prompt, output, system prompt, tool output or turn
// count) and the most requests a synthetic workload may create: the bounds a trace has
// (kMaxTracePromptTokens, 2^24), so a typo such as 5e8 is an error at load instead of
// gigabytes of token ids or a run that never ends.
inline constexpr int64_t kMaxSyntheticLength = int64_t{1} << 24;
inline constexpr int64_t kMaxSyntheticRequests = int64_t{1} << 24;
// The most requests one load stage of `inference_perf` arrivals may hold (their send times
// are drawn up front, as inference-perf's timer does).
inline constexpr int64_t kMaxStageRequests = int64_t{1} << 24;

struct MultiTurnConfig {
  LengthDist turns{"uniform", 4, 0.5, 2, 8};
  double think_time_s = 5.0;  // mean (exponential) time between a reply and the next turn
};

struct AgentTreeConfig {
  int64_t depth = 3;                                      // levels below the root
  int64_t branching = 2;                                  // children per node
  LengthDist tool_tokens{"fixed", 200, 0.5, 1, 1 << 20};  // tool output appended per child
  double think_time_s = 0.2;
};

struct TraceConfig {
  std::string path;             // file (relative to the scenario file or the working dir)
  std::string format = "auto";  // auto | mooncake | tokens | azure
  double time_scale = 1.0;      // arrival times are multiplied by this
  bool required = true;         // a missing file is an error (false: fall back to synthetic)
  // The pin a resolved scenario records (sim/scenario/pin_scenario.h): when sha256 is set,
  // the file found must have this size and SHA-256, or the run is refused.
  std::string sha256;
  int64_t bytes = -1;
};

// One stage of staged load (inference-perf's `constant` load stages): requests arrive at
// `rate_per_s` for `duration_s`, then the next stage begins.
struct LoadStage {
  double rate_per_s = 1;
  double duration_s = 1;
};

// The load stages `inference_perf` arrivals draw from: the workload's stages, or without
// any, one stage of rate_per_s for duration_s.
struct WorkloadConfig;
std::vector<LoadStage> InferencePerfStages(const WorkloadConfig& w);

// The stages' durations in order (what StageMetrics splits arrival time by).
inline std::vector<double> StageDurations(const std::vector<LoadStage>& stages) {
  std::vector<double> d;
  d.reserve(stages.size());
  for (const LoadStage& st : stages) d.push_back(st.duration_s);
  return d;
}

struct WorkloadConfig {
  std::string kind = "shared_prefix";
  int64_t num_requests = 1000;      // cap on requests created (0 = no cap)
  double duration_s = 0;            // cap on arrival times (0 = none)
  // poisson | gamma | constant (evenly spaced) | burst (all at t = 0) | inference_perf
  // (inference-perf's `constant` load type: ⌊rate · duration⌋ requests per stage, exponential
  // gaps rescaled to fill the stage exactly, so the last one lands at the stage's end)
  std::string arrival = "poisson";
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
  int64_t max_model_len =
      0;  // the model's context (set by the loader; 0 = unknown): bounds trace prompts
};

inline std::vector<LoadStage> InferencePerfStages(const WorkloadConfig& w) {
  return w.stages.empty() ? std::vector<LoadStage>{{w.rate_per_s, w.duration_s}} : w.stages;
}

}  // namespace kvsim
