// libFuzzer target: scenario YAML → ConfigNode (aliases bounded, duplicate keys refused) →
// Scenario (every key range-checked) → the KV cache plan. Bad input must come back as a
// Status; an accepted scenario must plan or refuse with a Status, never crash.
#include <cstdint>

#include "sim/config/config_tree.h"
#include "sim/scenario/scenario_loader.h"
#include "sim/workload/workload_config.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 16384) return 0;  // scenario files are small; keep each input fast
  auto tree = kvsim::ParseYaml(AsText(data, size), "fuzz.yaml");
  if (!tree.ok()) return 0;
  auto sc = kvsim::ParseScenario(tree.value(), "fuzz.yaml");
  if (!sc.ok()) return 0;
  ACCEPTED_INVALID(sc->cache.tp >= 1, "parallel.tp below 1");
  ACCEPTED_INVALID(sc->scheduler.max_num_batched_tokens >= 1, "token budget below 1");
  // Open-loop load stages end with the last stage (closed-loop clients do not).
  ACCEPTED_INVALID(sc->sim.workload.kind == "trace" || sc->sim.workload.num_requests > 0 ||
                       sc->sim.workload.duration_s > 0 || sc->sim.run.max_sim_seconds > 0 ||
                       (!sc->sim.workload.stages.empty() && sc->sim.workload.concurrency == 0),
                   "an unbounded synthetic workload");
  // Synthetic lengths as the loader bounds them: at most 2^24, a non-uniform mean inside
  // [min, max] (no silent clamp), the system prompts' token ids at most 2^25.
  const kvsim::WorkloadConfig& w = sc->sim.workload;
  if (w.kind != "trace") {
    for (const kvsim::LengthDist* d : {&w.prompt_tokens, &w.output_tokens}) {
      ACCEPTED_INVALID(d->min >= 1 && d->max <= kvsim::kMaxSyntheticLength && d->min <= d->max,
                       "a synthetic length outside [1, 2^24]");
      ACCEPTED_INVALID(d->dist == "uniform" || (d->mean >= static_cast<double>(d->min) &&
                                                d->mean <= static_cast<double>(d->max)),
                       "a length mean outside [min, max]");
    }
  }
  ACCEPTED_INVALID(static_cast<double>(w.system_prompt.count) * static_cast<double>(w.system_prompt.tokens) <=
                       static_cast<double>(kvsim::kMaxPromptPoolTokens),
                   "system prompts above 2^25 tokens");
  auto plan = sc->Plan();
  if (plan.ok()) ACCEPTED_INVALID(plan->num_blocks >= 0, "negative num_blocks");
  return 0;
}
