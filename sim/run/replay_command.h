// `kvsim replay` as a library call: its flags, their checks, the trace, the replay (or the
// hit-rate curve) and the texts it prints, shared by the CLI (apps/kvsim/cmd_replay.cc) and
// the Python module (python/), so that both refuse the same flags with the same message and
// write the same bytes. It lives in run/ because --model and --scenario build the cache from
// a scenario's plan (the scenario loader and sim/instance_builder.h), which the replay
// component (sim/replay/) must not see.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/kv_cache_manager.h"
#include "core/offload/offload_connector.h"
#include "core/status.h"
#include "sim/replay/replay.h"
#include "sim/trace/request_trace.h"

namespace kvsim {

// The command's flags, as given (0 / "" / -1: not given).
struct ReplayFlags {
  std::string trace;
  int64_t block_size = 0;
  int64_t num_blocks = 0;
  int64_t cache_tokens = 0;
  int64_t concurrency = 0;
  std::string hybrid;
  std::string model;
  std::string scenario;
  std::string semantics;     // --vllm-semantics: "", "classic" or "latest"
  std::string retention;     // --prefix-cache-retention-interval: "", "null" or an integer
  bool per_request = false;  // keep each request's outcome (--per-request FILE)
  bool curve = false;
  bool skip_bad_lines = false;
  // The CPU offloading tier (kv-offload.md); none unless --num-cpu-blocks is given or the
  // --scenario has cache.offload.
  int64_t num_cpu_blocks = 0;
  int64_t offload_block_size = 0;
  std::string eviction_policy;   // "", "lru" or "arc"
  int64_t store_threshold = -1;  // −1: not given
};

// What a replay found. Exactly one of `curve` (--curve) and `result` holds the numbers.
struct ReplayRun {
  KvCacheManagerConfig config;
  std::optional<OffloadConnectorConfig> offload;
  RequestTrace trace;
  // "" or the note the CLI prints as "kvsim: note: ..." (a model's plan replaced the block).
  std::string note;
  std::optional<CurveResult> curve;
  ReplayResult result;

  // No request fitted even alone: the hit rate would be about nothing (the CLI exits 1).
  bool none_served() const { return !curve && result.requests > 0 && result.served == 0; }
};

// Checks the flags, builds the cache (and CPU tier), reads the trace and replays it. Bad
// flags and bad input come back as errors with the CLI's text ("replay: ...", file:line).
Result<ReplayRun> RunReplayCommand(const ReplayFlags& flags);

// What the CLI prints on stdout: the --json object (with a trailing newline), or the text —
// the summary lines, or with --curve the CSV `capacity_blocks,hit_tokens,hit_rate`.
std::string ReplayJson(const ReplayRun& run);
std::string ReplayText(const ReplayFlags& flags, const ReplayRun& run);
// The --per-request file: one JSON line per request (flags.per_request).
std::string ReplayPerRequestJsonl(const ReplayRun& run);
// The message the CLI prints after "kvsim: error: " when no request was served ("" else).
std::string ReplayNoneServedMessage(const ReplayRun& run);

}  // namespace kvsim
