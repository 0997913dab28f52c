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

// [latest] _inflight_prefill_reserved_blocks, during the waiting pass: the blocks that
// requests loading from a connector and running requests still prefilling (admitted with a
// partial chunk, this step or earlier) need for their whole sequence.
int64_t InflightPrefillReservedBlocks(const SchedulerState& state, const StepPlan& plan,
                                      const std::vector<SimRequest*>& set_aside,
                                      IKvAllocator& kv) {
  int64_t reserved = 0;
  for (SimRequest* r : state.skipped_waiting)
    if (r->status == RequestStatus::kWaitingForRemoteKvs) reserved += kv.RemainingBlocks(*r);
  for (SimRequest* r : set_aside)
    if (r->status == RequestStatus::kWaitingForRemoteKvs) reserved += kv.RemainingBlocks(*r);
  for (SimRequest* r : state.running) {
    bool prefilling = r->is_prefill_chunk;
    for (const ScheduledChunk& c : plan.scheduled) {
      if (c.req == r && c.new_admission) {
        prefilling = c.num_computed_before + c.num_tokens < r->known_tokens();
        break;
      }
    }
    if (prefilling) reserved += kv.RemainingBlocks(*r);
  }
  return reserved;
}

}  // namespace

const std::deque<SimRequest*>* SchedulerState::NextWaitingQueue(SchedulingPolicy policy) const {
  if (skipped_waiting.empty()) return waiting.empty() ? nullptr : &waiting;
  if (waiting.empty() || policy == SchedulingPolicy::kFcfs) return &skipped_waiting;
  return HigherPriority(waiting.front(), skipped_waiting.front()) ? &waiting : &skipped_waiting;
}

void SchedulerState::AddWaiting(SimRequest* r, SchedulingPolicy policy) {
  if (policy == SchedulingPolicy::kFcfs) {
    waiting.push_back(r);
    return;
  }
  auto it = std::upper_bound(waiting.begin(), waiting.end(), r, HigherPriority);
  waiting.insert(it, r);
}

void Schedule(const SchedulerParams& p, SchedulerState& state, IKvAllocator& kv,
              StepPlan& plan, IKvConnector* connector) {
  plan.scheduled.clear();
  plan.preempted.clear();
  plan.connector_admitted.clear();
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
    // The allocator decides whether the chunk is still a prefill (classic: no output yet;
    // [latest] also a resumed request replaying its outputs).
    if (p.mamba_align_split && n > 0) {
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
      // the victim is always at or after the current position), and the position moves back
      // with it. A victim before the position that was *not* scheduled (async: its final
      // token in flight) still shifts the list, so, as in vLLM, the request after the current
      // one is not visited this step.
      for (auto it = plan.scheduled.begin(); it != plan.scheduled.end(); ++it) {
        if (it->req == victim) {
          budget += it->num_tokens;
          plan.num_scheduled_tokens -= it->num_tokens;
          plan.scheduled.erase(it);
          --i;
          break;
        }
      }
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
    // Requests set aside in this step, in the order they were visited; they go back to the
    // front of skipped-waiting (vLLM's step_skipped_waiting, merged by prepend_requests).
    std::vector<SimRequest*> set_aside;
    while ((!state.waiting.empty() || !state.skipped_waiting.empty()) && budget > 0) {
      if (static_cast<int64_t>(state.running.size()) >= p.max_num_seqs) break;
      std::deque<SimRequest*>& queue = *state.NextWaitingQueue(p.policy);
      SimRequest* r = queue.front();
      if (r->status == RequestStatus::kWaitingForRemoteKvs) {
        if (connector == nullptr || !connector->LoadFinished(*r)) {
          queue.pop_front();
          set_aside.push_back(r);
          continue;
        }
        // Promotion (_update_waiting_for_remote_kv): the loaded blocks join the prefix cache;
        // a load that covered every token leaves one to recompute, to sample from.
        kv.CacheBlocks(*r, r->num_computed_tokens);
        if (r->num_computed_tokens == r->num_tokens) r->num_computed_tokens = r->num_tokens - 1;
        r->status = r->num_preemptions > 0 ? RequestStatus::kPreempted : RequestStatus::kWaiting;
      }
      int64_t local_hit = 0;        // tokens found in the GPU prefix cache now
      int64_t external = 0;         // the connector's tokens beyond them
      int64_t shared_prefix = 0;
      int64_t computed = r->num_computed_tokens;  // > 0 only for a promoted load
      const bool looked_up = computed == 0;
      if (looked_up) {
        const PrefixHitInfo hit_info = kv.FindPrefixHit(*r);
        local_hit = hit_info.tokens;
        shared_prefix = hit_info.shared_prefix_tokens;
        KVSIM_CHECK(local_hit >= 0 && local_hit < r->num_tokens);
        if (connector != nullptr) {
          const ExternalHit ext = connector->MatchedTokens(*r, local_hit);
          if (ext.deferred) {
            queue.pop_front();
            set_aside.push_back(r);
            continue;
          }
          external = ext.tokens;
          KVSIM_CHECK(external >= 0 && local_hit + external <= r->num_tokens);
        }
        computed = local_hit + external;
      }
      const bool load_async = external > 0;
      int64_t n = 0;
      if (!load_async) {
        n = r->num_tokens - computed;
        if (p.long_prefill_token_threshold > 0) n = std::min(n, p.long_prefill_token_threshold);
        if (!p.enable_chunked_prefill && n > budget) break;
        n = std::min(n, budget);
        if (p.mamba_align_split) {
          n = kv.AlignChunk(*r, computed, n, shared_prefix, chunk_limit);
          if (n == 0) break;
        }
      }
      AllocateArgs args;
      args.num_new_tokens = n;
      args.num_new_computed_tokens = local_hit;
      args.num_external_computed_tokens = external;
      args.delay_cache_blocks = load_async;
      args.num_lookahead_tokens = 0;  // no speculation while prefilling a new admission
      args.full_sequence_must_fit = p.full_sequence_must_fit;
      args.apply_watermark = !state.running.empty();
      if (load_async && p.reserve_for_inflight_prefills) {
        args.reserved_blocks = InflightPrefillReservedBlocks(state, plan, set_aside, kv);
      }
      if (!kv.AllocateSlots(*r, args)) break;  // head-of-line blocking
      if (connector != nullptr) {
        connector->AfterAlloc(*r, local_hit, external);
        if (looked_up) plan.connector_admitted.push_back({r, local_hit, external});
      }
      queue.pop_front();
      if (load_async) {
        r->status = RequestStatus::kWaitingForRemoteKvs;
        r->num_computed_tokens = computed;
        set_aside.push_back(r);
        continue;
      }
      state.running.push_back(r);
      const bool resumed = r->status == RequestStatus::kPreempted;
      r->status = RequestStatus::kRunning;
      r->num_computed_tokens = computed;
      if (r->num_cached_tokens < 0) r->num_cached_tokens = computed;
      ScheduledChunk c;
      c.req = r;
      c.num_tokens = n;
      c.num_computed_before = computed;
      c.hit_tokens = computed;
      c.new_admission = true;
      c.resumed = resumed;
      plan.scheduled.push_back(c);
      plan.num_scheduled_tokens += n;
      budget -= n;
    }
    if (!set_aside.empty()) {
      if (fcfs) {
        state.skipped_waiting.insert(state.skipped_waiting.begin(), set_aside.begin(),
                                     set_aside.end());
      } else {
        for (SimRequest* r : set_aside) {
          auto it = std::upper_bound(state.skipped_waiting.begin(), state.skipped_waiting.end(),
                                     r, HigherPriority);
          state.skipped_waiting.insert(it, r);
        }
      }
    }
  }

  // 3. Commit the scheduled tokens; a chunk that reaches the known tokens samples.
  for (ScheduledChunk& c : plan.scheduled) {
    SimRequest* r = c.req;
    r->num_computed_tokens += c.num_tokens;
    c.samples = r->num_computed_tokens >= r->known_tokens();  // drafts lie beyond it
    r->is_prefill_chunk = r->num_computed_tokens < r->known_tokens();
    if (p.async_scheduling && c.samples) ++r->num_output_placeholders;
  }
}

}  // namespace kvsim
