// ScheduleOptions: `kvsim schedule`'s flags (step-log.md §1 and §8) as one struct, and the step
// clock's configuration they make, with the checks and messages both the command
// (apps/kvsim/cmd_schedule.cc) and the viewer's Steps panel (viz/sim_run.h) give. Errors have
// code "bad_flags" and name the flag.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "sim/instance/step_clock.h"

namespace kvsim {

struct ScheduleOptions {
  std::string requests;  // REQUESTS.jsonl
  int64_t block_size = 16;
  int64_t num_gpu_blocks = 0;  // required (≥ 2)
  // A second KV cache group beside full attention, as `kvsim replay --hybrid` takes it:
  // mamba-align | mamba-all | swa:W (empty = full attention only).
  std::string hybrid;
  int64_t max_num_batched_tokens = 8192;
  int64_t max_num_seqs = 256;
  int64_t long_prefill_token_threshold = 0;  // 0 = off
  int64_t max_model_len = 0;                 // 0 = no limit
  bool prefix_caching = true;
  bool chunked_prefill = true;
  bool async_scheduling = false;
  bool reserve_full_isl = true;
  std::string policy = "fcfs";       // fcfs | priority
  std::string semantics = "latest";  // classic | latest (--vllm-semantics)
  double watermark = 0;              // [latest] SchedulerConfig.watermark, a fraction
  // The CPU offloading tier; 0 CPU blocks = none.
  int64_t num_cpu_blocks = 0;
  int64_t offload_block_size = 0;       // 0 = the GPU block size
  std::string eviction_policy = "lru";  // lru | arc
  int64_t store_threshold = 0;
  std::string xfer_timing = "instant";  // instant | next-step

  // The equivalent `kvsim schedule` command line (flags at their defaults left out).
  std::string CommandLine() const;
  bool operator==(const ScheduleOptions&) const = default;
};

// The step clock's configuration for `o`. `max_blocks` bounds --num-gpu-blocks and
// --num-cpu-blocks (the command allows 2^30; the viewer, which keeps a cell per block and
// step, less); the message names the bound.
Result<StepClockConfig> MakeStepClockConfig(const ScheduleOptions& o,
                                            int64_t max_blocks = int64_t{1} << 30);

}  // namespace kvsim
