// TraceWorkload (workload.kind: trace): requests with timestamps from a file.
//   mooncake / tokens   JSONL read by sim/trace/request_trace.h (RequestTrace): Mooncake
//                       hash_ids per `block_tokens` block, or explicit token ids; timestamps
//                       in milliseconds;
//   azure               Azure LLM inference trace CSV (TIMESTAMP, ContextTokens,
//                       GeneratedTokens): arrivals and lengths only. Prompts are random
//                       tokens (no sharing), behind the optional synthetic system prompt.
// Arrival = (timestamp − first timestamp) × trace.time_scale. workload.num_requests and
// workload.duration_s cap the replay. Relative paths are looked up in the scenario's
// directory, the working directory, $KVSIM_TRACE_DIR, /work/shared/data/traces and the
// built-in scenarios/traces/.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sim/trace/request_trace.h"
#include "sim/workload/i_workload.h"
#include "sim/workload/workload_config.h"

namespace kvsim {

// One request of a trace as the workload replays it.
struct TraceArrival {
  double time_s = 0;
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 1;
  size_t index = 0;  // record index in the source (for token lookup)
};

// Finds a trace file as described above; empty when not found. `tried` lists the places.
std::string FindTraceFile(const std::string& path, const std::string& scenario_dir,
                          std::vector<std::string>* tried);

// Parses an Azure CSV (text) into arrivals; errors name `name`, the line and the column.
// Columns are found by their header names (TIMESTAMP, ContextTokens, GeneratedTokens; others
// are ignored); timestamps must not go back in time; ContextTokens is at most
// `max_prompt_tokens` (`max_why` says where that bound comes from).
Result<std::vector<TraceArrival>> ParseAzureCsv(
    const std::string& text, const std::string& name,
    int64_t max_prompt_tokens = kMaxTracePromptTokens,
    const std::string& max_why = "kvsim's bound on one prompt");

class TraceSource;  // the loaded file (defined in the .cc)

class TraceWorkload : public IWorkload {
 public:
  static Result<std::unique_ptr<IWorkload>> Open(const WorkloadConfig& config, uint64_t seed,
                                                 const std::string& path);
  ~TraceWorkload() override;
  std::optional<RequestSpec> Next() override;
  std::string Describe() const override;
  int64_t vocab_size() const override { return config_.vocab_size; }

 protected:
  void AppendStored(const PromptPart& part, std::vector<TokenId>& out) const override;

 private:
  TraceWorkload(const WorkloadConfig& config, uint64_t seed);
  WorkloadConfig config_;
  std::string path_;
  std::string format_;
  std::unique_ptr<TraceSource> source_;
  std::vector<TraceArrival> arrivals_;
  std::vector<std::vector<TokenId>> system_prompts_;
  Rng tokens_;
  Rng sys_pick_;
  size_t next_ = 0;
  int64_t created_ = 0;
};

}  // namespace kvsim
