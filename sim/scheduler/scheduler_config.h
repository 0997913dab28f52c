// SchedulerConfig and SchedulerExtras: the scheduler's settings as a scenario gives them in
// its `scheduler:` section. SchedulerConfig holds vLLM's SchedulerConfig budgets (tokens and
// sequences per step); SchedulerExtras the switches around them (chunked prefill, policy,
// async scheduling, watermark). The scheduler owns these structs; the scenario loader
// (sim/scenario/scenario_loader.cc, sim/scenario/sim_sections.cc) only fills them, where each
// key's help text lives, and the instance builder (sim/instance_builder.h) turns them into
// the SchedulerParams of one instance (sim/scheduler/scheduler.h).
#pragma once

#include <cstdint>
#include <string>

namespace kvsim {

struct SchedulerConfig {
  int64_t max_num_batched_tokens = 8192;
  int64_t max_num_seqs = 1024;
};

struct SchedulerExtras {
  int64_t long_prefill_token_threshold = 0;
  bool enable_chunked_prefill = true;
  std::string policy = "fcfs";
  bool full_sequence_must_fit = true;
  // vLLM's default engine; off by default here (its fitted step times match measured runs
  // better sync, README). Single-engine runs only: P/D instances and drafts run sync.
  bool async_scheduling = false;
  // [latest] SchedulerConfig.watermark: a waiting request is admitted only if
  // int(watermark · num_gpu_blocks) blocks stay free beyond it while others run (0 = off).
  double watermark = 0;
};

}  // namespace kvsim
