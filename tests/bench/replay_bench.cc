// Replay throughput (issue 3 target: ≥ 20 million 16-token blocks per second on one core,
// peak memory < 2 GiB). Replays the Mooncake conversation trace when it can be found in a
// `shared/data/traces/` folder above the working directory (or $KVSIM_TRACE_DIR), else a
// generated trace of the same shape, at block sizes 16 and 512 with a capacity of 2M tokens
// (the trace's prompts total about 145M tokens, so the cache evicts constantly).
// Counters: blocks_per_s (blocks of the replayed size), tok16_blocks_per_s (16-token blocks),
// hit_rate, peak_rss_mib.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cstdlib>
#include <filesystem>

#include "core/kv_cache_manager.h"
#include "sim/replay/replay.h"
#include "sim/trace/request_trace.h"

namespace {

const kvsim::RequestTrace& Trace() {
  static const kvsim::RequestTrace trace = [] {
    namespace fs = std::filesystem;
    std::vector<fs::path> candidates;
    if (const char* dir = std::getenv("KVSIM_TRACE_DIR")) candidates.emplace_back(dir);
    for (fs::path p = fs::current_path(); ; p = p.parent_path()) {
      candidates.push_back(p / "shared/data/traces");
      if (p == p.parent_path()) break;
    }
    for (const auto& c : candidates) {
      const fs::path f = c / "conversation_trace.jsonl";
      if (fs::exists(f)) {
        auto t = kvsim::RequestTrace::ReadFile(f.string());
        if (t.ok()) {
          std::fprintf(stderr, "replay_bench: %s (%zu requests)\n", f.c_str(), t->size());
          return std::move(t.value());
        }
      }
    }
    std::fprintf(stderr, "replay_bench: Mooncake trace not found; using a generated one\n");
    return kvsim::GenerateMooncakeStyleTrace(42, 12000, 400);
  }();
  return trace;
}

void BM_Replay(benchmark::State& state) {
  const int64_t block = state.range(0);
  const int64_t cache_tokens = state.range(1);
  const auto& trace = Trace();
  auto cfg = kvsim::KvCacheManagerConfigFromHybrid("", block, cache_tokens / block + 1);
  kvsim::ReplayResult r;
  double seconds = 0;
  int64_t blocks = 0, tokens = 0;
  for (auto _ : state) {
    r = kvsim::Replay(trace, cfg.value());
    state.SetIterationTime(r.seconds);
    seconds += r.seconds;
    blocks += r.blocks;
    tokens += r.prompt_tokens;
  }
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  state.counters["blocks_per_s"] = static_cast<double>(blocks) / seconds;
  state.counters["tok16_blocks_per_s"] = static_cast<double>(tokens) / 16.0 / seconds;
  state.counters["hit_rate"] = r.hit_rate();
  state.counters["peak_rss_mib"] = static_cast<double>(ru.ru_maxrss) / 1024.0;
}

BENCHMARK(BM_Replay)
    ->Args({16, 2000000})
    ->Args({512, 2000000})
    ->Args({16, 20000000})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
