#include "sim/scheduler/scheduler.h"

#include <algorithm>
#include <cstddef>

#include "core/check.h"

namespace kvsim {
namespace {

// PRIORITY order: smaller (priority, arrival, id) first.
bool HigherPriority(const SimRequest* a, const SimRequest* b) {
  if (a->priority != b->priority) return a->priority < b->priority;
  if (a->arrival_tick != b->arrival_tick) return a->arrival_tick < b->arrival_tick;
  return a->id < b->id;
}

void Preempt(SimRequest* r, SchedulerState& state, SchedulingPolicy policy, IKvAllocator& kv) {
  kv.Free(*r);
  r->status = RequestStatus::kPreempted;
  r->num_computed_tokens = 0;
  r->num_spec_tokens = 0;
  ++r->num_preemptions;
  if (policy == SchedulingPolicy::kFcfs) {
    state.waiting.push_front(r);
  } else {
    state.AddWaiting(r, policy);
  }
}

}  // namespace

void SchedulerState::AddWaiting(SimRequest* r, SchedulingPolicy policy) {
  if (policy == SchedulingPolicy::kFcfs) {
    waiting.push_back(r);
    return;
  }
  auto it = std::upper_bound(waiting.begin(), waiting.end(), r, HigherPriority);
  waiting.insert(it, r);
}

int64_t MambaAlignedSplit(int64_t start, int64_t n, int64_t num_tokens, int64_t block_size,
                          bool eagle, int64_t limit) {
  const int64_t b = block_size;
  int64_t last_cache = num_tokens - num_tokens % b;
  if (eagle) last_cache = std::max<int64_t>(last_cache - b, 0);
  const int64_t end = start + n;
  if (end < last_cache) {
    // The chunk does not reach the last cacheable boundary: it must end on a block boundary.
    int64_t aligned = (start % b != 0) ? std::min(end, (start / b + 1) * b) : end / b * b;
    if (aligned % b != 0) aligned = aligned / b * b;  // a mid-block start that cannot finish
    if (aligned <= start) {
      // Rounding would make the chunk empty. If a block is larger than what a step can ever
      // give, the request would starve, so vLLM keeps the unaligned chunk; otherwise wait.
      return b > limit ? n : 0;
    }
    return aligned - start;
  }
  if (start < last_cache && last_cache < end) return last_cache - start;  // cache the boundary
  return n;  // the tail after the last boundary
}

void Schedule(const SchedulerParams& p, SchedulerState& state, IKvAllocator& kv,
              StepPlan& plan) {
  plan.scheduled.clear();
  plan.preempted.clear();
  plan.num_scheduled_tokens = 0;
  int64_t budget = p.max_num_batched_tokens;
  const bool fcfs = p.policy == SchedulingPolicy::kFcfs;
  // The most tokens one request can ever get in a step (for the Mamba split's exception).
  const int64_t chunk_limit =
      p.long_prefill_token_threshold > 0
          ? std::min(p.long_prefill_token_threshold, p.max_num_batched_tokens)
          : p.max_num_batched_tokens;

  // 1. RUNNING.
  size_t i = 0;
  while (i < state.running.size() && budget > 0) {
    SimRequest* r = state.running[i];
    if (p.async_scheduling && r->num_output_placeholders > 0 &&
        r->num_computed_tokens + 2 - r->num_output_placeholders >=
            r->num_prompt_tokens + r->max_output_tokens) {
      // Its final token is in flight: no further step is needed (vLLM's async skip).
      ++i;
      continue;
    }
    int64_t n = r->num_tokens_with_spec() + r->num_output_placeholders - r->num_computed_tokens;
    if (p.long_prefill_token_threshold > 0) n = std::min(n, p.long_prefill_token_threshold);
    n = std::min(n, budget);
    n = std::min(n, p.max_model_len - 1 - r->num_computed_tokens);
    if (p.mamba_align_split && r->num_output_tokens == 0 && n > 0) {
      n = kv.AlignChunk(*r, r->num_computed_tokens, n, 0, chunk_limit);
    }
    if (n <= 0) {
      ++i;
      continue;
    }
    AllocateArgs args;
    args.num_new_tokens = n;
    args.num_lookahead_tokens = p.num_lookahead_tokens;
    bool ok = false;
    while (true) {
      ok = kv.AllocateSlots(*r, args);
      if (ok) break;
      // Out of blocks: preempt a victim and retry.
      size_t victim_index = state.running.size() - 1;
      if (!fcfs) {
        for (size_t k = 0; k < state.running.size(); ++k) {
          if (HigherPriority(state.running[victim_index], state.running[k])) victim_index = k;
        }
      }
      SimRequest* victim = state.running[victim_index];
      state.running.erase(state.running.begin() + static_cast<std::ptrdiff_t>(victim_index));
      // A victim already scheduled this step gets its budget back (PRIORITY only: with FCFS
      // the victim is always at or after the current position).
      for (auto it = plan.scheduled.begin(); it != plan.scheduled.end(); ++it) {
        if (it->req == victim) {
          budget += it->num_tokens;
          plan.num_scheduled_tokens -= it->num_tokens;
          plan.scheduled.erase(it);
          break;
        }
      }
      if (victim_index < i) --i;
      Preempt(victim, state, p.policy, kv);
      plan.preempted.push_back(victim);
      if (victim == r) break;
    }
    if (!ok) break;
    ScheduledChunk c;
    c.req = r;
    c.num_tokens = n;
    c.num_computed_before = r->num_computed_tokens;
    c.num_spec_tokens = std::max<int64_t>(0, n + r->num_computed_tokens - r->known_tokens());
    plan.scheduled.push_back(c);
    plan.num_scheduled_tokens += n;
    budget -= n;
    ++i;
  }

  // 2. WAITING, only in a step without preemptions.
  if (plan.preempted.empty()) {
    while (!state.waiting.empty() && budget > 0) {
      if (static_cast<int64_t>(state.running.size()) >= p.max_num_seqs) break;
      SimRequest* r = state.waiting.front();
      KVSIM_DCHECK(r->num_computed_tokens == 0);
      const PrefixHitInfo hit_info = kv.FindPrefixHit(*r);
      const int64_t hit = hit_info.tokens;
      KVSIM_CHECK(hit >= 0 && hit < r->num_tokens);
      int64_t n = r->num_tokens - hit;
      if (p.long_prefill_token_threshold > 0) n = std::min(n, p.long_prefill_token_threshold);
      if (!p.enable_chunked_prefill && n > budget) break;
      n = std::min(n, budget);
      if (p.mamba_align_split && r->num_output_tokens == 0) {
        n = kv.AlignChunk(*r, hit, n, hit_info.shared_prefix_tokens, chunk_limit);
        if (n == 0) break;
      }
      AllocateArgs args;
      args.num_new_tokens = n;
      args.num_new_computed_tokens = hit;
      args.num_lookahead_tokens = 0;  // no speculation while prefilling a new admission
      args.full_sequence_must_fit = p.full_sequence_must_fit;
      args.apply_watermark = !state.running.empty();
      if (!kv.AllocateSlots(*r, args)) break;  // head-of-line blocking
      state.waiting.pop_front();
      state.running.push_back(r);
      const bool resumed = r->status == RequestStatus::kPreempted;
      r->status = RequestStatus::kRunning;
      r->num_computed_tokens = hit;
      if (r->num_cached_tokens < 0) r->num_cached_tokens = hit;
      ScheduledChunk c;
      c.req = r;
      c.num_tokens = n;
      c.num_computed_before = hit;
      c.hit_tokens = hit;
      c.new_admission = true;
      c.resumed = resumed;
      plan.scheduled.push_back(c);
      plan.num_scheduled_tokens += n;
      budget -= n;
    }
  }

  // 3. Commit the scheduled tokens; a chunk that reaches the known tokens samples.
  for (ScheduledChunk& c : plan.scheduled) {
    SimRequest* r = c.req;
    r->num_computed_tokens += c.num_tokens;
    c.samples = r->num_computed_tokens >= r->known_tokens();  // drafts lie beyond it
    if (p.async_scheduling && c.samples) ++r->num_output_placeholders;
  }
}

}  // namespace kvsim
