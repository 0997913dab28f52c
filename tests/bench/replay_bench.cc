// Replay throughput (issue 3 target: ≥ 20 million 16-token blocks per second on one core,
// peak memory < 2 GiB). Replays the Mooncake conversation trace when it can be found in a
// `shared/data/traces/` folder above the working directory (or $KVSIM_TRACE_DIR), else a
// generated trace of the same shape, at block sizes 16 and 512 with a capacity of 2M tokens
// (the trace's prompts total about 145M tokens, so the cache evicts constantly).
// The trace is parsed once, outside the timed loop: the figure is the KV manager's replay
// (hashing from the trace's hash ids, lookup, allocation, eviction, caching, free).
// BM_ParseTrace and BM_TraceHashes time the JSONL parse and the hashing alone.
// Counters: blocks_per_s (blocks of the replayed size, wall time), tok16_blocks_per_s
// (16-token blocks, wall), tok16_blocks_per_cpu_s (16-token blocks per second of CPU time —
// the robust figure on a shared machine), hit_rate, peak_rss_mib.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/kv_cache_manager.h"
#include "sim/replay/replay.h"
#include "sim/trace/request_trace.h"

namespace {

std::string TracePath() {
  namespace fs = std::filesystem;
  std::vector<fs::path> candidates;
  if (const char* dir = std::getenv("KVSIM_TRACE_DIR")) candidates.emplace_back(dir);
  for (fs::path p = fs::current_path();; p = p.parent_path()) {
    candidates.push_back(p / "shared/data/traces");
    if (p == p.parent_path()) break;
  }
  for (const auto& c : candidates) {
    const fs::path f = c / "conversation_trace.jsonl";
    if (fs::exists(f)) return f.string();
  }
  return "";
}

const kvsim::RequestTrace& Trace() {
  static const kvsim::RequestTrace trace = [] {
    if (const std::string f = TracePath(); !f.empty()) {
      auto t = kvsim::RequestTrace::ReadFile(f);
      if (t.ok()) {
        std::fprintf(stderr, "replay_bench: %s (%zu requests)\n", f.c_str(), t->size());
        return std::move(t.value());
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
  double seconds = 0, cpu_seconds = 0;
  int64_t blocks = 0, tokens = 0;
  for (auto _ : state) {
    r = kvsim::Replay(trace, cfg.value());
    state.SetIterationTime(r.seconds);
    seconds += r.seconds;
    cpu_seconds += r.cpu_seconds;
    blocks += r.blocks;
    tokens += r.prompt_tokens;
  }
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  state.counters["blocks_per_s"] = static_cast<double>(blocks) / seconds;
  state.counters["tok16_blocks_per_s"] = static_cast<double>(tokens) / 16.0 / seconds;
  state.counters["tok16_blocks_per_cpu_s"] = static_cast<double>(tokens) / 16.0 / cpu_seconds;
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

// The trace's block hashes alone (what Replay computes per request before any cache work).
void BM_TraceHashes(benchmark::State& state) {
  const int64_t block = state.range(0);
  const auto& trace = Trace();
  std::vector<kvsim::BlockHash> hashes;
  std::vector<kvsim::TokenId> tail;
  int64_t tokens = 0;
  for (auto _ : state) {
    for (size_t i = 0; i < trace.size(); ++i) {
      trace.PromptBlockHashes(i, block, hashes, tail);
      benchmark::DoNotOptimize(hashes.data());
      tokens += trace[i].input_length;
    }
  }
  state.counters["tok16_blocks_per_s"] =
      benchmark::Counter(static_cast<double>(tokens) / 16.0, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_TraceHashes)->Arg(16)->Arg(512)->Unit(benchmark::kMillisecond)->Iterations(3);

// Parsing the JSONL file (not part of the replay figure).
void BM_ParseTrace(benchmark::State& state) {
  const std::string path = TracePath();
  if (path.empty()) {
    state.SkipWithError("Mooncake trace not found");
    return;
  }
  int64_t requests = 0;
  for (auto _ : state) {
    auto t = kvsim::RequestTrace::ReadFile(path);
    requests += static_cast<int64_t>(t->size());
  }
  state.counters["requests_per_s"] =
      benchmark::Counter(static_cast<double>(requests), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ParseTrace)->Unit(benchmark::kMillisecond)->Iterations(2);

}  // namespace

BENCHMARK_MAIN();
