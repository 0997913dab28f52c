// What the Page map and Block pool panels cost on the CPU when the view changes (zoom, pan,
// a new block, a new plan, a scrub), separate from rendering. Registered under the `bench`
// label: `ctest -L bench -R viz_bench -V`.
#include <benchmark/benchmark.h>

#include "core/kv_cache_manager.h"
#include "viz/page_map.h"
#include "viz/plan_model.h"
#include "viz/pool_replay.h"
#include "viz/sim_run.h"

namespace kvsim::viz {
namespace {

KvCachePlan PlanOf(std::vector<std::string> overrides) {
  auto m = PlanModel::Load("", overrides);
  if (!m.ok() || !m->ok()) std::abort();
  return m->plan();
}

// A full-page raster as the panel draws it at 1600x900 (256 columns, up to 180 rows).
void ClassifyPage(benchmark::State& state, std::vector<std::string> overrides, int group) {
  const KvCachePlan p = PlanOf(std::move(overrides));
  auto map = PageMap::Build(p, {0, group, 1});
  if (!map.ok()) std::abort();
  const Raster r = MakeRaster(map->begin(), map->size(), map->token_row_bytes(), 256, 180);
  for (auto _ : state) {
    auto cells = ClassifyCells(map.value(), r);
    benchmark::DoNotOptimize(cells.data());
  }
  state.counters["cells"] = static_cast<double>(r.num_cells());
  state.counters["page_bytes"] = static_cast<double>(map->size());
}

void BM_ClassifyAttentionPage(benchmark::State& s) { ClassifyPage(s, {}, 3); }
void BM_ClassifyMambaPage(benchmark::State& s) { ClassifyPage(s, {}, 0); }
void BM_ClassifyCrossLayerSlab(benchmark::State& s) { ClassifyPage(s, {"cache.layout=BLNHC"}, 3); }
BENCHMARK(BM_ClassifyAttentionPage)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ClassifyMambaPage)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ClassifyCrossLayerSlab)->Unit(benchmark::kMillisecond);

// Every group's page of one tensor (what a new block or plan costs the strips).
void BM_BuildGroupPages(benchmark::State& state) {
  const KvCachePlan p = PlanOf({"model.preset=mimo-style", "parallel.tp=4"});
  for (auto _ : state) {
    for (size_t g = 0; g < p.groups.size(); ++g) {
      auto m = PageMap::Build(p, {0, static_cast<int>(g), 1});
      benchmark::DoNotOptimize(m.ok());
    }
  }
  state.counters["groups"] = static_cast<double>(p.groups.size());
}
BENCHMARK(BM_BuildGroupPages)->Unit(benchmark::kMillisecond);

// Re-planning after a knob change (scenario reload + PlanKvCache).
void BM_Replan(benchmark::State& state) {
  auto m = PlanModel::Load("", {});
  if (!m.ok()) std::abort();
  int64_t pack = 1;
  for (auto _ : state) {
    pack = pack == 1 ? 4 : 1;
    m->mutable_knobs().attn_pack_size = pack;
    m->ReplanIfChanged();
  }
}
BENCHMARK(BM_Replan)->Unit(benchmark::kMillisecond);

// Scrubbing the block pool from the end of the trace back to its middle (a replay from the
// start) on the padded MiMo plan's 1,048,576-block pool.
void BM_PoolScrub(benchmark::State& state) {
  auto cfg = KvCacheManagerConfigFromPlan(PlanOf({"model.preset=mimo-style", "parallel.tp=4"}));
  auto trace = LoadTrace("scenarios/traces/sample_tokens.jsonl");
  if (!cfg.ok() || !trace.ok()) std::abort();
  auto r = PoolReplay::Create(trace.value(), cfg.value(), {});
  if (!r.ok()) std::abort();
  PoolReplay& p = *r.value();
  for (auto _ : state) {
    p.SeekTo(p.num_steps() - 1);
    p.SeekTo(p.num_steps() / 2);
  }
  state.counters["blocks"] = static_cast<double>(cfg->num_blocks);
}
BENCHMARK(BM_PoolScrub)->Unit(benchmark::kMillisecond);

// Scrubbing a simulation's recorded pool (the default scenario through the engine, 3177
// blocks): one step back from every step, the worst case of keyframes + deltas (a rebuild from
// the keyframe at or before it), as the Block pool panel does when the Steps panel moves back.
void BM_SimScrubBack(benchmark::State& state) {
  auto plan = PlanModel::Load("", {"workload.num_requests=200"});
  if (!plan.ok()) std::abort();
  auto r = RunScenarioSimulation(plan->scenario(), "bench");
  if (!r.ok()) std::abort();
  const SimRun& run = *r.value();
  std::vector<GpuCell> cells;
  int64_t at = -1;
  for (auto _ : state) {
    for (int64_t i = run.num_snapshots() - 1; i > 0; --i) {
      run.GpuCells(i, cells, at);
      run.GpuCells(i - 1, cells, at);
    }
  }
  state.counters["blocks"] = static_cast<double>(run.num_gpu_blocks());
  state.counters["steps"] = static_cast<double>(run.num_snapshots());
  state.counters["MiB"] = static_cast<double>(run.snapshot_bytes()) / (1 << 20);
}
BENCHMARK(BM_SimScrubBack)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kvsim::viz

BENCHMARK_MAIN();
