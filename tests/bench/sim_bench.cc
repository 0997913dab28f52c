// Simulator throughput (Google Benchmark; CTest label `bench`, run with `make bench`).
//   BM_Chat100k      100,000 chat requests end to end (≈1k-token prompts behind a shared
//                    200-token system prompt, ≈300 output tokens, prefix caching on,
//                    Llama-3.1-8B on an H100): simulated requests per wall-clock second.
//                    Target: ≥ 35,000/s on one core (issue 28).
//   BM_Pd20k         the same chat workload, 20,000 requests, on a P/D cluster of one prefill
//                    and one decode instance: instance steps per wall-clock second, to hold
//                    against BM_Chat100k's steps_per_s (a P/D instance's step may cost no
//                    more than a colocated one's).
//   BM_Sweep/jobs:J  four 10,000-request points through the sweep runner on J threads:
//                    points per second, for the -j speed-up.
#include <benchmark/benchmark.h>

#include "sim/cluster/cluster_sim.h"
#include "sim/engine.h"
#include "sim/scenario/scenario_loader.h"
#include "sim/sweep/sweep_runner.h"

namespace kvsim {
namespace {

const char* kChat = R"(
name: bench_chat
seed: 1
model: {preset: llama-3.1-8b}
hardware: {preset: H100-SXM}
cache: {block_size: 16, kv_memory_bytes: 40GiB, enable_prefix_caching: true}
scheduler: {max_num_batched_tokens: 8192, max_num_seqs: 256}
workload:
  kind: shared_prefix
  num_requests: 100000
  arrival: poisson
  rate_per_s: 60
  system_prompt: {tokens: 200, count: 8}
  prompt_tokens: {dist: lognormal, mean: 800, cv: 0.5, min: 16, max: 8192}
  output_tokens: {dist: lognormal, mean: 300, cv: 0.5, min: 1, max: 4096}
)";

ConfigNode ChatTree() {
  auto t = ParseYaml(kChat, "bench_chat");
  if (!t.ok()) std::abort();
  return t.value();
}

void BM_Chat100k(benchmark::State& state) {
  auto sc = ParseScenario(ChatTree(), "bench_chat");
  if (!sc.ok()) {
    state.SkipWithError(sc.status().message().c_str());
    return;
  }
  int64_t requests = 0, steps = 0;
  double sim_s = 0, hit = 0;
  for (auto _ : state) {
    auto e = Engine::Create(sc.value());
    if (!e.ok()) {
      state.SkipWithError(e.status().message().c_str());
      return;
    }
    e.value()->Run();
    const RunSummary s = e.value()->Summary();
    requests += s.requests_finished;
    steps += s.steps;
    sim_s = s.makespan_s;
    hit = s.prefix_hit_rate;
  }
  state.counters["requests_per_s"] =
      benchmark::Counter(static_cast<double>(requests), benchmark::Counter::kIsRate);
  state.counters["steps_per_s"] =
      benchmark::Counter(static_cast<double>(steps), benchmark::Counter::kIsRate);
  state.counters["sim_seconds"] = sim_s;
  state.counters["hit_rate"] = hit;
}
BENCHMARK(BM_Chat100k)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

void BM_Pd20k(benchmark::State& state) {
  ConfigNode tree = ChatTree();
  if (!ApplyOverride(tree, "workload.num_requests=20000").ok() ||
      !ApplyOverride(tree, "cluster={prefill: {count: 1}, decode: {count: 1}, router: "
                           "{prefill: round_robin, decode: round_robin}}")
           .ok()) {
    state.SkipWithError("override failed");
    return;
  }
  auto sc = ParseScenario(tree, "bench_pd");
  if (!sc.ok()) {
    state.SkipWithError(sc.status().message().c_str());
    return;
  }
  int64_t requests = 0, steps = 0;
  for (auto _ : state) {
    auto sim = ClusterSim::Create(sc.value());
    if (!sim.ok()) {
      state.SkipWithError(sim.status().message().c_str());
      return;
    }
    sim.value()->Run();
    const ClusterSummary s = sim.value()->Summary();
    requests += s.finished;
    steps += s.prefill_pool.steps + s.decode_pool.steps;
  }
  state.counters["requests_per_s"] =
      benchmark::Counter(static_cast<double>(requests), benchmark::Counter::kIsRate);
  state.counters["instance_steps_per_s"] =
      benchmark::Counter(static_cast<double>(steps), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Pd20k)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

void BM_Sweep(benchmark::State& state) {
  ConfigNode tree = ChatTree();
  if (!ApplyOverride(tree, "workload.num_requests=10000").ok() ||
      !ApplyOverride(tree, "sweep={seed: [1, 2, 3, 4]}").ok()) {
    state.SkipWithError("override failed");
    return;
  }
  auto points = ExpandSweep(tree);
  if (!points.ok()) {
    state.SkipWithError(points.status().message().c_str());
    return;
  }
  const int jobs = static_cast<int>(state.range(0));
  int64_t done = 0;
  for (auto _ : state) {
    RunPoints(
        points.value(), "bench_chat", jobs, 1, [](const SweepPoint&) { return PointOptions{}; },
        [&](PointResult&& r) { done += r.status.ok() ? 1 : 0; });
  }
  state.counters["points_per_s"] =
      benchmark::Counter(static_cast<double>(done), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Sweep)->ArgName("jobs")->Arg(1)->Arg(2)->Iterations(1)->Unit(benchmark::kSecond)
    ->UseRealTime();

}  // namespace
}  // namespace kvsim

BENCHMARK_MAIN();
