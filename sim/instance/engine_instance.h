// EngineInstance: one vLLM instance's scheduling state and the operations every driver needs.
// It owns the prefix-caching KV cache manager (behind the scheduler's IKvAllocator seam), the
// scheduler's queues and params; drivers own the requests (stable addresses) and time.
//
//   Add(r, prompt)        a request arrives: registered with the KV manager, queued in WAITING
//   Decide(plan)          one Schedule() over the queues (sim/scheduler/scheduler.h)
//   ApplyOutputs(plan)    the step's sampled tokens reach the requests: appended (so output
//                         blocks get hashed), requests that reach max_output_tokens (or
//                         max_model_len) finish and free their blocks, in scheduled order
//
// Sync scheduling calls Decide(k) then ApplyOutputs(k). Async scheduling (vLLM's default
// AsyncScheduler) calls Decide(k+1) *before* ApplyOutputs(k): the scheduler counts in-flight
// tokens as output placeholders, and ApplyOutputs also caches the blocks the new tokens fill
// (vLLM caches them when the output arrives, for requests still running), so a finished
// request keeps its blocks and running slot through the next decision.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "core/kv_cache_manager.h"
#include "sim/kv_adapter.h"
#include "sim/scheduler/scheduler.h"

namespace kvsim {

class EngineInstance {
 public:
  EngineInstance(const KvCacheManagerConfig& kv_config, const SchedulerParams& params)
      : mgr_(kv_config), adapter_(&mgr_), params_(params) {}
  EngineInstance(const EngineInstance&) = delete;
  EngineInstance& operator=(const EngineInstance&) = delete;

  // Registers `r` (id, priority, arrival_tick and max_output_tokens set by the caller) with its
  // prompt and queues it in WAITING.
  void Add(SimRequest* r, std::span<const TokenId> prompt) {
    r->num_prompt_tokens = static_cast<int64_t>(prompt.size());
    r->num_tokens = r->num_prompt_tokens;
    r->status = RequestStatus::kWaiting;
    r->kv_handle = mgr_.AddRequest(prompt);
    state_.AddWaiting(r, params_.policy);
  }

  // One scheduling decision into `plan`. Like vLLM's schedule(), it first tells the KV
  // manager a new step starts (a Mamba hit on a state cached in this step then waits a step).
  void Decide(StepPlan& plan) {
    mgr_.NewStepStarts();
    Schedule(params_, state_, adapter_, plan, connector_);
  }

  // A KV connector (the CPU offloading tier) the scheduler consults; null = none.
  void set_connector(IKvConnector* connector) { connector_ = connector; }

  // Applies the outputs of the step `plan` decided, then releases the requests that finished
  // (ApplyTokens followed by ReleaseFinished; drivers that measure the pool between the two
  // call them separately).
  template <class Emit>
  void ApplyOutputs(const StepPlan& plan, Emit&& emit, std::vector<SimRequest*>& finished) {
    const size_t first = finished.size();
    ApplyTokens(plan, emit, finished);
    ReleaseFinished(std::span<SimRequest* const>(finished).subspan(first));
  }

  // For every chunk of `plan` that sampled, `emit(SimRequest&, const ScheduledChunk&,
  // std::vector<TokenId>& tokens)` fills the tokens the step produced for it (one, or more
  // with accepted drafts); they are appended to the request. Requests that reach
  // max_output_tokens (or max_model_len) are marked finished and appended to `finished`, in
  // scheduled order; they still hold their blocks and queue places until ReleaseFinished.
  template <class Emit>
  void ApplyTokens(const StepPlan& plan, Emit&& emit, std::vector<SimRequest*>& finished) {
    for (const ScheduledChunk& c : plan.scheduled) {
      if (!c.samples) continue;
      SimRequest& r = *c.req;
      tokens_.clear();
      emit(r, c, tokens_);
      const int64_t gen = std::min<int64_t>(static_cast<int64_t>(tokens_.size()),
                                            r.max_output_tokens - r.num_output_tokens);
      tokens_.resize(static_cast<size_t>(gen));
      if (params_.async_scheduling) r.num_output_placeholders -= 1;
      r.num_output_tokens += gen;
      r.num_tokens += gen;
      const bool done = r.num_output_tokens >= r.max_output_tokens ||
                        r.num_tokens >= params_.max_model_len;
      if (params_.async_scheduling) {
        // vLLM appends the token, then (for a request still running) caches the blocks it
        // completed, then frees a finished request: its last blocks stay in the prefix cache.
        mgr_.AppendTokens(r.kv_handle, tokens_);
        if (r.status == RequestStatus::kRunning) {
          mgr_.CacheBlocks(r.kv_handle, r.num_computed_tokens - r.num_output_placeholders);
        }
      } else if (!done) {
        mgr_.AppendTokens(r.kv_handle, tokens_);
      }
      if (done) {
        r.status = r.status == RequestStatus::kRunning ? RequestStatus::kFinished
                                                       : RequestStatus::kFinishedPreempted;
        finished.push_back(&r);
      }
    }
  }

  // Finished requests leave RUNNING (or WAITING: preempted while their last token was in
  // flight) and free their blocks, in the given order.
  void ReleaseFinished(std::span<SimRequest* const> finished) {
    if (finished.empty()) return;
    bool any_running = false;
    for (SimRequest* r : finished) {
      if (r->status == RequestStatus::kFinishedPreempted) {
        for (auto* w : {&state_.waiting, &state_.skipped_waiting})
          w->erase(std::remove(w->begin(), w->end(), r), w->end());
        r->status = RequestStatus::kFinished;
      } else {
        any_running = true;
      }
      mgr_.RemoveRequest(r->kv_handle);
      r->kv_handle = -1;
    }
    if (!any_running) return;
    auto& run = state_.running;
    run.erase(std::remove_if(run.begin(), run.end(),
                             [](SimRequest* p) { return p->status == RequestStatus::kFinished; }),
              run.end());
  }

  // Removes a request that is still WAITING and was never admitted (a driver's rejection).
  void Drop(SimRequest* r) {
    for (auto* w : {&state_.waiting, &state_.skipped_waiting})
      w->erase(std::remove(w->begin(), w->end(), r), w->end());
    mgr_.RemoveRequest(r->kv_handle);
    r->kv_handle = -1;
  }

  const SchedulerState& state() const { return state_; }
  const SchedulerParams& params() const { return params_; }
  const KvCacheManager& kv() const { return mgr_; }
  KvCacheManager& mutable_kv() { return mgr_; }
  bool idle() const {
    return state_.running.empty() && state_.waiting.empty() && state_.skipped_waiting.empty();
  }

 private:
  KvCacheManager mgr_;
  KvAdapter adapter_;
  SchedulerParams params_;
  SchedulerState state_;
  IKvConnector* connector_ = nullptr;
  std::vector<TokenId> tokens_;
};

}  // namespace kvsim
