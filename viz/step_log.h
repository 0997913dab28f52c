// StepLog: a step log (`kvsim schedule --step-log`, `kvsim run --step-log`; the record format
// of shared/reference/step-log.md) read into memory for the viewer's Steps panel, with each
// scheduled chunk classified as a prefill chunk, a decode step or a recompute after a
// preemption. Pure data and parsing: no ImGui, so headless tests check it directly.
//
// Classification, from the records alone (the log does not carry prompt lengths):
//  * recompute: the request was preempted earlier and the chunk redoes tokens it had
//    computed before its last preemption (before < that high-water mark);
//  * decode: one token for a request that has already sampled (its first sampled step is
//    known from the summary line's first_token_step, or, without a summary, a 1-token chunk
//    of a request that was already running);
//  * prefill: everything else (first chunks and later prompt chunks).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace kvsim::viz {

enum class ChunkKind : uint8_t { kPrefill, kDecode, kRecompute };

struct StepChunk {
  int32_t request = 0;  // index into StepLog::request_ids
  int64_t n = 0;        // tokens scheduled
  int64_t before = 0;   // tokens computed before the chunk
  int64_t hit = -1;     // prefix hit at admission; -1 for a running request
  ChunkKind kind = ChunkKind::kPrefill;
};

struct StepRecord {
  int64_t step = 0;
  std::vector<StepChunk> scheduled;  // scheduler order
  std::vector<int32_t> preempted;
  std::vector<int32_t> finished;
  int64_t num_free_blocks = 0;
  int64_t running = -1;  // optional fields: -1 when the log leaves them out
  int64_t waiting = -1;
  int64_t t_start_ns = -1;
  int64_t t_end_ns = -1;
  // With a CPU offloading tier (step-log.md §8); -1 / empty without one.
  int64_t cpu_blocks_used = -1;   // resident in the tier after the step's outputs
  int64_t cpu_blocks_ready = -1;  // of those, ready (their store finished)
  int64_t cpu_load_blocks = 0;    // offloaded blocks whose load the decision started
  int64_t cpu_store_blocks = 0;   // offloaded blocks whose store the decision planned
  std::vector<int32_t> loading;   // waiting for a load after the decision
  bool has_offload() const { return cpu_blocks_used >= 0; }
  int64_t num_scheduled_tokens() const;
};

struct StepLog {
  std::vector<std::string> request_ids;
  std::vector<StepRecord> steps;
  int64_t max_tokens_in_step = 0;  // the tallest stacked bar
  int64_t max_free_blocks = 0;
  int64_t total_preemptions = 0;
  bool has_summary = false;
};

// Classifies every chunk of `log->steps` (filled in step order, kinds unset) as the header
// says and fills the log's maxima. `first_token_step[r]` is request r's first sampled step
// (shorter than request_ids or -1: unknown, then the 1-token-chunk rule applies). Shared by
// the parser and by the viewer's own simulations (viz/sim_run.h).
void ClassifyChunks(StepLog* log, std::span<const int64_t> first_token_step);

// Parses a step log. Errors name the file and line: a line that is not a JSON object, a
// record without step/scheduled/preempted/finished/num_free_blocks, a malformed entry,
// steps out of order. At most `max_steps` records (a bound on memory).
Result<StepLog> ParseStepLog(std::string_view text, const std::string& source,
                             int64_t max_steps = 5'000'000);
Result<StepLog> ReadStepLog(const std::string& path);

}  // namespace kvsim::viz
