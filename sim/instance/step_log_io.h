// The step log's data and text: the requests `kvsim schedule` reads (REQUESTS.jsonl), the
// record of one step, the run's summary, and their JSON lines (../shared/reference/step-log.md,
// mirrored in docs/step-log.md). Every instance writes the same records — the step clock's
// (sim/instance/step_clock.h) and `kvsim run --step-log`'s (sim/instance/instance_core.h) —
// so they live below both, apart from either driver. Requests in a record are named by their
// index in the caller's list (the step clock's input order, the simulator's request ids).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/block_hash.h"
#include "core/status.h"

namespace kvsim {

// One request of a step-clock input (a line of REQUESTS.jsonl).
struct StepRequest {
  std::string id;
  std::vector<TokenId> tokens;  // prompt token ids, each in [0, 1000000)
  int64_t max_tokens = 1;       // finishes after exactly this many sampled tokens
  int64_t arrival_step = 0;
  int64_t priority = 0;         // PRIORITY policy only; lower is served first
  int64_t line = 0;             // its line in REQUESTS.jsonl, for errors (0: not read from one)
};

inline constexpr TokenId kFirstGeneratedTokenId = 1000000;  // + step that sampled it

// Reads REQUESTS.jsonl; errors name the file and line (and the key), code "invalid_input".
// Prompts must be shorter than `max_model_len` (0 = no bound beyond the global size bound).
Result<std::vector<StepRequest>> ReadStepRequests(const std::string& path, int64_t max_model_len);
// The same from text (`path` names it in errors). `fast` = false parses every line as a JSON
// tree; true (what ReadStepRequests does) first tries a strict fast path for the common shape
// and falls back to the tree, with the same results and errors either way (fuzzed).
Result<std::vector<StepRequest>> ParseStepRequests(std::string_view text, const std::string& path,
                                                   int64_t max_model_len, bool fast = true);

// One step's record. Requests are named by their index in `requests` (the caller's order).
struct StepRecord {
  struct Chunk {
    int32_t request = 0;
    int64_t num_tokens = 0;  // n
    int64_t before = 0;      // tokens computed before this chunk
    int64_t hit = -1;        // prefix hit when taken from WAITING this step, else -1
  };
  int64_t step = 0;
  // The instance of a pool that ran the step ("prefill 0", "decode 1", "dp 2"); empty for a
  // single instance (and then not written).
  std::string instance;
  std::vector<Chunk> scheduled;     // scheduler order: running first, then admissions
  std::vector<int32_t> preempted;   // in preemption order
  std::vector<int32_t> finished;    // sampled their max_tokens-th token this step
  std::vector<int32_t> admitted_new, resumed;  // taken from WAITING, in admission order
  int64_t num_free_blocks = 0;      // right after the decision
  int64_t running = 0;              // running list size after the decision
  int64_t waiting = 0;              // arrived, unfinished, not running
  int64_t num_scheduled_tokens = 0;
  // `kvsim run --step-log` only (-1 = not written): the step's simulated start and end.
  int64_t t_start_ns = -1;
  int64_t t_end_ns = -1;

  // With a CPU tier (step-log.md §8), from the decision ...
  struct KvAdmitted {
    int32_t request = 0;
    int64_t gpu_hit = 0;
    int64_t cpu_hit = 0;
  };
  struct CpuBlocks {
    int32_t request = 0;
    std::vector<int64_t> block_indices;
  };
  struct CpuEvicted {
    int32_t request = 0;  // the request whose store first put the block in the tier
    int64_t block_index = 0;
  };
  bool has_offload = false;
  std::vector<KvAdmitted> kv_admitted;  // admission order
  std::vector<int32_t> loading;         // waiting for a load after the decision, queue order
  std::vector<CpuBlocks> cpu_loads, cpu_stores;
  std::vector<CpuEvicted> cpu_evicted;
  // ... and after the step's outputs are applied.
  int64_t cpu_blocks_used = 0;
  int64_t cpu_blocks_ready = 0;
};

struct StepRequestSummary {
  int64_t hit_tokens = -1;               // at first admission
  std::vector<int64_t> resume_hit_tokens;
  // With a CPU tier: the GPU and CPU parts of the lookup at first admission and at each resume.
  int64_t gpu_hit_tokens = -1;
  int64_t cpu_hit_tokens = -1;
  std::vector<int64_t> resume_gpu_hit_tokens, resume_cpu_hit_tokens;
  int64_t first_token_step = -1;
  int64_t finish_step = -1;
  int32_t num_preemptions = 0;
};

struct StepClockSummary {
  bool has_offload = false;
  int64_t steps = 0;  // records written
  int64_t total_preemptions = 0;
  int64_t last_step = -1;
  std::vector<StepRequestSummary> per_request;  // indexed like the input
};

using StepRecordSink = std::function<void(const StepRecord&)>;

// JSON text of one record / of the summary line (step-log.md §3 and §7), ids from `requests`
// or, for the simulator's numbered requests, their numbers.
std::string StepRecordJson(const StepRecord& record, const std::vector<StepRequest>& requests);
std::string StepRecordJson(const StepRecord& record);
std::string StepSummaryJson(const StepClockSummary& summary,
                            const std::vector<StepRequest>& requests);

}  // namespace kvsim
