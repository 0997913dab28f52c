// EngineInstance: one vLLM instance's scheduling state and the operations every driver needs.
// It owns the prefix-caching KV cache manager (behind the scheduler's IKvAllocator seam), the
// scheduler's queues and params; drivers own the requests (stable addresses) and time. The
// single Engine (sim/engine.h) drives one colocated instance; a P/D cluster
// (sim/cluster/cluster_sim.h) drives prefill and decode instances through the same class.
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
//
// Roles and the step cycle (InstanceCore, sim/instance/instance_core.h, drives them):
//   Admit(r, prompt)      colocated/prefill: Add (a prefill request has max_tokens = 1, as
//                         vLLM's P/D proxy sends it); decode: registered with the KV manager
//                         and queued for blocks to receive the prompt's KV into
//   ReserveIncoming()     decode: the head of that queue gets blocks for its whole prompt
//                         (less its own prefix hit), or waits (FIFO, head-of-line)
//   ResumeWithKv(r)       decode: the transferred KV is usable; r joins RUNNING with every
//                         prompt token but the last computed (vLLM replays it for logits)
//   Decide(plan)          one decision
//   ApplyStepOutputs(...) drafts verified (set_drafts), the step's tokens applied, the next
//                         step's drafts set
//   ReleaseOrHoldFinished finished requests leave RUNNING and free their blocks, except on
//                         a prefill instance, where they keep them until Release(r) (the
//                         decoder has read them)
//   RejectStuckHead()     after a decision that ran nothing: the head that never will run
// Blocks held for a transfer (a prefill's finished prompts, a decoder's reservations) come
// back without this instance running a step.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <span>
#include <string_view>
#include <vector>

#include "core/check.h"
#include "core/kv_cache_manager.h"
#include "sim/engine_common.h"
#include "sim/kv_adapter.h"
#include "sim/scheduler/scheduler.h"
#include "sim/workload/rng.h"

namespace kvsim {

// What an instance serves. The Engine's one instance is colocated; a P/D cluster has a pool
// of each of the other two.
enum class InstanceRole : uint8_t {
  kColocated,  // prefills and decodes its own requests
  kPrefill,    // runs prompts (max_tokens = 1) and holds their KV until a decoder reads it
  kDecode,     // receives a prompt's KV, then decodes
};

constexpr std::string_view InstanceRoleName(InstanceRole r) {
  switch (r) {
    case InstanceRole::kColocated: return "colocated";
    case InstanceRole::kPrefill: return "prefill";
    case InstanceRole::kDecode: return "decode";
  }
  return "?";
}

class EngineInstance {
 public:
  EngineInstance(const KvCacheManagerConfig& kv_config, const SchedulerParams& params,
                 InstanceRole role = InstanceRole::kColocated)
      : mgr_(kv_config), adapter_(&mgr_), params_(params), role_(role) {}
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

  // [latest] the admission watermark in blocks (int(watermark · num_gpu_blocks); 0 = off).
  void set_watermark_blocks(int64_t n) { adapter_.set_watermark_blocks(n); }

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
      // With a connector, vLLM's _connector_finished frees the out-of-window (sliding
      // window, old Mamba state) blocks first, then the rest of the table.
      if (connector_ != nullptr) mgr_.RemoveSkippedBlocks(r->kv_handle, r->num_computed_tokens);
      mgr_.RemoveRequest(r->kv_handle);
      r->kv_handle = kNoRequestHandle;
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
    r->kv_handle = kNoRequestHandle;
  }

  // ---- Roles and the step cycle (see the header comment). ----

  // A request arrives at this instance (its id, priority, arrival_tick and max_output_tokens
  // set by the caller). Colocated and prefill: queued in WAITING (prefill: one output token,
  // the one vLLM's P/D proxy asks for and discards). Decode: its prompt's KV will arrive;
  // registered with the KV manager (so the prefix cache can be asked what it already holds)
  // and queued for blocks to receive into.
  void Admit(SimRequest* r, std::span<const TokenId> prompt) {
    if (role_ == InstanceRole::kPrefill) r->max_output_tokens = 1;
    if (role_ != InstanceRole::kDecode) {
      Add(r, prompt);
      return;
    }
    r->num_prompt_tokens = static_cast<int64_t>(prompt.size());
    r->num_tokens = r->num_prompt_tokens;
    r->status = RequestStatus::kWaitingForRemoteKvs;
    r->kv_handle = mgr_.AddRequest(prompt);
    incoming_.push_back(r);
  }

  // Decode: reserves blocks for the oldest admitted request still waiting for them — its
  // whole prompt, less the prefix this instance's cache already holds (not transferred) —
  // and returns it, with that hit in r->num_cached_tokens. Null when the queue is empty or
  // its head must wait: a sequence slot (running + waiting + reserved reach max_num_seqs) or
  // blocks (FIFO: head-of-line, like vLLM's waiting queue). Reserved blocks are cached at
  // once, not after the load (a deviation docs/pd.md lists).
  SimRequest* ReserveIncoming() {
    if (incoming_.empty()) return nullptr;
    if (static_cast<int64_t>(state_.running.size() + state_.waiting.size()) + reserved_ >=
        params_.max_num_seqs) {
      return nullptr;
    }
    SimRequest* r = incoming_.front();
    const int64_t n = r->num_prompt_tokens;
    const PrefixHit hit = mgr_.GetComputedBlocks(r->kv_handle, 0);
    if (!mgr_.AllocateSlots(r->kv_handle, 0, n - hit.num_tokens, hit.num_tokens, 0, true)) {
      return nullptr;
    }
    incoming_.pop_front();
    ++reserved_;
    r->num_cached_tokens = hit.num_tokens;
    return r;
  }

  // Decode: the reserved request's KV is usable. Every prompt token is in the cache; vLLM
  // replays the last one for its logits, so the next step computes one token and samples.
  void ResumeWithKv(SimRequest* r) {
    KVSIM_CHECK(reserved_ > 0 && r->status == RequestStatus::kWaitingForRemoteKvs);
    --reserved_;
    r->num_computed_tokens = r->num_prompt_tokens - 1;
    r->status = RequestStatus::kRunning;
    state_.running.push_back(r);
  }

  // Speculative decoding: every decode step of a running request carries
  // `num_speculative_tokens` drafts (none past its max_output_tokens), each accepted with
  // `acceptance_rate`, drawn from `rng`. Without a call, the instance never drafts.
  void set_drafts(int64_t num_speculative_tokens, double acceptance_rate, Rng rng) {
    num_spec_ = num_speculative_tokens;
    acceptance_rate_ = acceptance_rate;
    accept_rng_ = rng;
  }

  // The outputs of `plan`'s step, for a driver that keeps its own plans (the Engine's async
  // pair). For each chunk that samples, in scheduled order: its drafts are verified (only a
  // chunk that carries drafts draws from the acceptance stream; the rejected ones are rolled
  // back), then `emit(SimRequest&, const ScheduledChunk&, int64_t n, std::vector<TokenId>&
  // tokens)` fills the n tokens the step produced for it (1 + accepted drafts, capped at
  // max_output_tokens). Requests still running get the next step's drafts. Finished requests
  // are appended to `finished` in scheduled order and leave RUNNING; their blocks are the
  // driver's to free (ReleaseFinished).
  template <class Emit>
  void ApplyStepOutputs(const StepPlan& plan, Emit&& emit, std::vector<SimRequest*>& finished) {
    ApplyTokens(
        plan,
        [&](SimRequest& r, const ScheduledChunk& c, std::vector<TokenId>& tokens) {
          int64_t accepted = 0;
          if (c.num_spec_tokens > 0) {
            accepted = VerifyDrafts(r, c.num_spec_tokens, acceptance_rate_, accept_rng_);
            drafts_scheduled_ += c.num_spec_tokens;
            drafts_accepted_ += accepted;
          }
          emit(r, c, std::min<int64_t>(1 + accepted, r.max_output_tokens - r.num_output_tokens),
               tokens);
          r.num_spec_tokens = 0;
        },
        finished);
    if (num_spec_ > 0) {
      for (const ScheduledChunk& c : plan.scheduled) {
        SimRequest& r = *c.req;
        if (c.samples && r.status != RequestStatus::kFinished) {
          r.num_spec_tokens = NextStepDrafts(r, num_spec_);
        }
      }
    }
  }

  // The requests of a step that finished (ApplyStepOutputs' `finished`) leave RUNNING: they
  // free their blocks, except on a prefill instance, where they keep them until Release(r)
  // (the decoder has read them).
  void ReleaseOrHoldFinished(std::span<SimRequest* const> finished) {
    if (role_ == InstanceRole::kPrefill) {
      HoldFinished(finished);
    } else {
      ReleaseFinished(finished);
    }
  }

  // The rule that keeps a run from hanging, for every driver. Call it after a decision that
  // scheduled nothing. When nothing runs and no blocks will come back without a step (none
  // held for a transfer), the cache is as empty as it will get, so the head of the waiting
  // queue (skipped-waiting first, the order the scheduler serves them) can never be
  // admitted: it is dropped (as Drop) and returned for the driver to reject. Null when some
  // request runs, none waits, or blocks held for a transfer may still come back (a prefill
  // instance's prompts not yet read, a decoder's reservations). A colocated instance holds
  // none, so for the Engine the rule is "nothing runs and a request waits".
  SimRequest* RejectStuckHead() {
    if (!state_.running.empty() || state_.num_waiting() == 0 || holds_for_transfers()) {
      return nullptr;
    }
    SimRequest* head =
        !state_.skipped_waiting.empty() ? state_.skipped_waiting.front() : state_.waiting.front();
    Drop(head);
    return head;
  }

  // Prefill: a decoder has read r's KV; its blocks are freed (they stay in the prefix cache).
  void Release(SimRequest* r) {
    KVSIM_CHECK(role_ == InstanceRole::kPrefill && held_ > 0);
    --held_;
    mgr_.RemoveRequest(r->kv_handle);
    r->kv_handle = kNoRequestHandle;
  }

  InstanceRole role() const { return role_; }
  // Decode: admitted requests waiting for blocks, and reservations whose KV is not usable yet.
  int64_t num_incoming_waiting() const { return static_cast<int64_t>(incoming_.size()); }
  int64_t num_incoming_reserved() const { return reserved_; }
  // Prefill: finished prompts whose KV no decoder has read yet.
  int64_t num_held() const { return held_; }
  // Blocks that will come back without this instance running a step.
  bool holds_for_transfers() const { return held_ > 0 || reserved_ > 0; }
  // Drafts verified by ApplyStepOutputs so far, and how many of them were accepted.
  int64_t drafts_scheduled() const { return drafts_scheduled_; }
  int64_t drafts_accepted() const { return drafts_accepted_; }

  const SchedulerState& state() const { return state_; }
  const SchedulerParams& params() const { return params_; }
  const KvCacheManager& kv() const { return mgr_; }
  KvCacheManager& mutable_kv() { return mgr_; }
  bool idle() const {
    return state_.running.empty() && state_.waiting.empty() && state_.skipped_waiting.empty();
  }

 private:
  // Prefill: finished requests leave RUNNING and keep their blocks for the decoder.
  void HoldFinished(std::span<SimRequest* const> finished) {
    if (finished.empty()) return;
    held_ += static_cast<int64_t>(finished.size());
    auto& run = state_.running;
    run.erase(std::remove_if(run.begin(), run.end(),
                             [](SimRequest* p) { return p->status == RequestStatus::kFinished; }),
              run.end());
  }

  KvCacheManager mgr_;
  KvAdapter adapter_;
  SchedulerParams params_;
  SchedulerState state_;
  IKvConnector* connector_ = nullptr;
  std::vector<TokenId> tokens_;
  InstanceRole role_ = InstanceRole::kColocated;
  // Decode: admitted, waiting for blocks to receive into (FIFO); and reserved, KV in flight.
  std::deque<SimRequest*> incoming_;
  int64_t reserved_ = 0;
  int64_t held_ = 0;      // prefill: finished, KV not read by a decoder yet
  int64_t num_spec_ = 0;  // drafts per decode step (set_drafts)
  double acceptance_rate_ = 0;
  Rng accept_rng_{0};
  int64_t drafts_scheduled_ = 0, drafts_accepted_ = 0;
};

}  // namespace kvsim
