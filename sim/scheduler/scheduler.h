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
//     fewer than max_num_seqs run, taking the head of skipped-waiting before WAITING (FCFS):
//     a request whose connector load is still in flight, or whose connector lookup is
//     deferred, is set aside for this step; a finished load is promoted (its loaded blocks
//     cached, a full hit recomputes its last token) and scheduled from there. Otherwise:
//     prefix lookup (+ the connector's hit e), n = min(remaining prompt, threshold, budget)
//     (no chunked prefill: stop if it does not fit), Mamba split, allocate with the
//     full-prompt check; on failure stop (head-of-line blocking); e > 0: the request waits
//     for its load (not scheduled, no budget); else it joins RUNNING with
//     num_computed_tokens = hit.
//  3. num_computed_tokens += n for every scheduled request; a chunk that reaches the request's
//     known tokens samples (async: it adds an output placeholder).
// Preemption is by recompute: blocks freed, num_computed_tokens = 0, drafts dropped, the
// request goes to the front of WAITING (FCFS) or back into priority order.
#pragma once

#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "sim/scheduler/i_kv_allocator.h"
#include "sim/scheduler/i_kv_connector.h"
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
  // [latest] with a connector: an admission that starts an asynchronous load must leave the
  // blocks in-flight prefills still need free (_inflight_prefill_reserved_blocks).
  bool reserve_for_inflight_prefills = false;
};

struct SchedulerState {
  std::vector<SimRequest*> running;  // admission order
  std::deque<SimRequest*> waiting;   // FCFS order (PRIORITY: kept sorted)
  // vLLM's skipped_waiting: requests set aside by an earlier step (a connector lookup that was
  // deferred, a load in flight). FCFS serves it before `waiting`; PRIORITY compares the heads.
  // Requests skipped in a step go to its front, in the order they were skipped.
  std::deque<SimRequest*> skipped_waiting;

  // Adds a new request to WAITING (FCFS: at the back; PRIORITY: in priority order).
  void AddWaiting(SimRequest* r, SchedulingPolicy policy);
  // The queue whose head the waiting pass considers next (_select_waiting_queue_for_scheduling):
  // FCFS serves skipped-waiting first; PRIORITY takes the higher-priority head. Null when both
  // are empty.
  const std::deque<SimRequest*>* NextWaitingQueue(SchedulingPolicy policy) const;
  std::deque<SimRequest*>* NextWaitingQueue(SchedulingPolicy policy) {
    return const_cast<std::deque<SimRequest*>*>(std::as_const(*this).NextWaitingQueue(policy));
  }
  int64_t num_waiting() const {
    return static_cast<int64_t>(waiting.size() + skipped_waiting.size());
  }
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

// A request allocated after a connector lookup in this step (new or resumed), in admission
// order: `external_hit_tokens` > 0 means it now waits for its load and is not in `scheduled`.
struct ConnectorAdmission {
  SimRequest* req = nullptr;
  int64_t gpu_hit_tokens = 0;
  int64_t external_hit_tokens = 0;
};

struct StepPlan {
  std::vector<ScheduledChunk> scheduled;  // running requests first, then admissions
  std::vector<SimRequest*> preempted;
  std::vector<ConnectorAdmission> connector_admitted;  // only with a connector
  int64_t num_scheduled_tokens = 0;
  bool empty() const { return scheduled.empty(); }
};

// One scheduler step. Mutates `state` and the requests' counters, calls `kv` (and
// `connector`, when given), fills `plan` (cleared first; its vectors keep their capacity, so
// the engine's steps do not allocate).
void Schedule(const SchedulerParams& params, SchedulerState& state, IKvAllocator& kv,
              StepPlan& plan, IKvConnector* connector = nullptr);
inline StepPlan Schedule(const SchedulerParams& params, SchedulerState& state,
                         IKvAllocator& kv) {
  StepPlan plan;
  Schedule(params, state, kv, plan);
  return plan;
}

}  // namespace kvsim
