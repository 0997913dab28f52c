// The vLLM v1 scheduler as a pure step function (reference §6; vllm/v1/core/sched/
// scheduler.py). Schedule() takes the queues and budgets, asks an IKvAllocator for blocks
// and returns the step's plan: which requests run, how many tokens each, who was preempted.
// It never touches time or the event queue; the engine applies the plan, prices it with the
// cost model and schedules the step's end. Because the allocator is an interface, tests are
// tables of hand-worked cases (tests/sim/scheduler_test.cc).
//
// One step, as vLLM does it:
//  1. RUNNING requests in order: n = min(wanted, long_prefill_threshold, budget,
//     max_model_len − 1 − computed); Mamba `align` split; skip when 0; allocate with
//     lookahead slots; on failure preempt (FCFS: the last running request; PRIORITY: the
//     largest (priority, arrival)), refunding a victim already scheduled this step, until the
//     allocation succeeds or the victim is the request itself (then stop the running pass).
//  2. WAITING requests, only when nothing was preempted this step, while budget remains and
//     fewer than max_num_seqs run: prefix lookup, n = min(remaining prompt, threshold,
//     budget) (no chunked prefill: stop if it does not fit), Mamba split, allocate with the
//     full-prompt check; on failure stop (head-of-line blocking); on success the request
//     joins RUNNING with num_computed_tokens = hit.
//  3. num_computed_tokens += n for every scheduled request; a chunk that reaches the request's
//     known tokens samples (async: it adds an output placeholder).
// Preemption is by recompute: blocks freed, num_computed_tokens = 0, drafts dropped, the
// request goes to the front of WAITING (FCFS) or back into priority order.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "sim/scheduler/i_kv_allocator.h"
#include "sim/scheduler/sim_request.h"

namespace kvsim {

enum class SchedulingPolicy : uint8_t { kFcfs, kPriority };

struct SchedulerParams {
  int64_t max_num_batched_tokens = 8192;  // token budget per step
  int64_t max_num_seqs = 1024;            // running requests at most
  int64_t max_model_len = 1 << 30;
  int64_t long_prefill_token_threshold = 0;  // 0 = off
  bool enable_chunked_prefill = true;
  SchedulingPolicy policy = SchedulingPolicy::kFcfs;
  // Speculative decoding: lookahead slots allocated beyond the scheduled tokens of running
  // requests (num_speculative_tokens, +1 for DFlash). New admissions get none.
  int64_t num_lookahead_tokens = 0;
  // Ask the allocator to align prefill chunks (the model has Mamba layers in `align` mode).
  bool mamba_align_split = false;
  // The full-prompt admission check (scheduler_reserve_full_isl).
  bool full_sequence_must_fit = true;
  // Async scheduling (vLLM's AsyncScheduler): step k+1 is decided before step k's outputs
  // are applied. A running request then wants its in-flight tokens too
  // (num_output_placeholders), and one whose final token is in flight is skipped.
  bool async_scheduling = false;
};

struct SchedulerState {
  std::vector<SimRequest*> running;  // admission order
  std::deque<SimRequest*> waiting;   // FCFS order (PRIORITY: kept sorted)

  // Adds a new request to WAITING (FCFS: at the back; PRIORITY: in priority order).
  void AddWaiting(SimRequest* r, SchedulingPolicy policy);
};

struct ScheduledChunk {
  SimRequest* req = nullptr;
  int64_t num_tokens = 0;           // tokens computed this step
  int64_t num_computed_before = 0;  // context already in the cache (incl. this step's hit)
  int64_t num_spec_tokens = 0;      // drafts among num_tokens
  int64_t hit_tokens = 0;           // prefix hit at admission (0 for running requests)
  bool new_admission = false;
  bool resumed = false;             // admitted from WAITING after a preemption
  bool samples = false;             // the chunk reaches the known tokens: one token is sampled
};

struct StepPlan {
  std::vector<ScheduledChunk> scheduled;  // running requests first, then admissions
  std::vector<SimRequest*> preempted;
  int64_t num_scheduled_tokens = 0;
  bool empty() const { return scheduled.empty(); }
};

// Mamba `align` split (reference §6), the rule allocators apply in AlignChunk: the tokens to schedule for a prefill chunk that starts
// at `start` (computed + hit) and wants `n`, for a request of `num_tokens` tokens and block B.
// `limit` is the most the step could give this request (for the empty-chunk exception).
int64_t MambaAlignedSplit(int64_t start, int64_t n, int64_t num_tokens, int64_t block_size,
                          bool eagle, int64_t limit);

// One scheduler step. Mutates `state` and the requests' counters, calls `kv`, fills `plan`
// (cleared first; its vectors keep their capacity, so the engine's steps do not allocate).
void Schedule(const SchedulerParams& params, SchedulerState& state, IKvAllocator& kv,
              StepPlan& plan);
inline StepPlan Schedule(const SchedulerParams& params, SchedulerState& state,
                         IKvAllocator& kv) {
  StepPlan plan;
  Schedule(params, state, kv, plan);
  return plan;
}

}  // namespace kvsim
