#include "sim/engine.h"

#include <algorithm>

#include "sim/engine_common.h"

namespace kvsim {

Result<std::unique_ptr<Engine>> Engine::Create(const Scenario& sc) {
  auto plan = sc.Plan();
  if (!plan.ok()) return plan.status();
  if (plan->num_blocks < 2) {
    return Status::Error("no_kv_memory",
                         sc.source + ": the KV cache has no usable blocks; set "
                                     "cache.kv_memory_bytes or cache.num_gpu_blocks");
  }
  auto kvc = EngineKvConfig(sc, plan.value());
  if (!kvc.ok()) return kvc.status();
  std::string note;
  auto wl = MakeWorkload(sc.sim.workload, sc.seed, &note);
  if (!wl.ok()) return wl.status();
  std::unique_ptr<Engine> e(
      new Engine(sc, std::move(plan.value()), kvc.value(), std::move(wl.value())));
  e->workload_note_ = note;
  return e;
}

Engine::Engine(const Scenario& sc, KvCachePlan plan, const KvCacheManagerConfig& kv_config,
               std::unique_ptr<IWorkload> workload)
    : sc_(sc),
      plan_(std::move(plan)),
      mgr_(kv_config),
      adapter_(&mgr_),
      cost_(sc_.model, plan_, sc_.sim.hardware),
      workload_(std::move(workload)),
      metrics_(static_cast<Tick>(sc_.sim.metrics.kv_sample_interval_ms * kTicksPerMs)),
      accept_rng_(Rng(sc_.seed).Fork(0x5bec)) {
  sc_.tree = ConfigNode();  // the parsed structs are all the engine needs
  workload_desc_ = workload_->Describe();
  num_spec_ = sc_.cache.num_speculative_tokens;
  params_ = EngineSchedulerParams(sc_, plan_, kv_config, num_spec_);
  if (sc_.sim.run.max_sim_seconds > 0) {
    stop_at_ = static_cast<Tick>(sc_.sim.run.max_sim_seconds * kTicksPerSecond);
  }
}

Engine::~Engine() = default;

void Engine::PullOpenLoop() {
  if (open_loop_done_) return;
  std::optional<RequestSpec> next = workload_->Next();
  if (!next) {
    open_loop_done_ = true;
    return;
  }
  const int64_t id = next->id;
  // The request reaches the scheduler after intake (HTTP, tokenization); its clock for
  // TTFT and E2E starts at the client's send time, spec.arrival. Open-loop arrivals enter
  // in send order (the next one is pulled when this one enters, so never before now).
  const Tick t = std::max(now_, next->arrival +
                                    cost_.IntakeNanos(static_cast<int64_t>(next->prompt.size())));
  arriving_.emplace(id, std::move(*next));
  queue_.Push(t, EventKind::kArrival, static_cast<uint64_t>(id) | (uint64_t{1} << 63));
}

void Engine::RequestSchedule() {
  if (step_in_flight_ || schedule_pending_) return;
  schedule_pending_ = true;
  queue_.Push(now_, EventKind::kSchedule);
}

void Engine::Run() {
  PullOpenLoop();
  while (auto e = queue_.Pop()) {
    if (stop_at_ >= 0 && e->tick > stop_at_) {
      now_ = stop_at_;
      break;
    }
    now_ = e->tick;
    switch (e->kind) {
      case EventKind::kArrival: {
        const bool open_loop = (e->payload >> 63) != 0;
        OnArrival(static_cast<int64_t>(e->payload & ~(uint64_t{1} << 63)));
        if (open_loop) PullOpenLoop();
        break;
      }
      case EventKind::kSchedule:
        schedule_pending_ = false;
        OnSchedule();
        break;
      case EventKind::kStepEnd:
        OnStepEnd();
        break;
      case EventKind::kKvReady:
      case EventKind::kWireStart:
        KVSIM_CHECK_MSG(false, "a P/D transfer event in a single engine");
        break;
    }
  }
  metrics_.Lookups(mgr_.stats().requests, mgr_.stats().query_tokens, mgr_.stats().hit_tokens);
}

void Engine::OnArrival(int64_t id) {
  auto it = arriving_.find(id);
  KVSIM_CHECK(it != arriving_.end());
  auto l = std::make_unique<Live>();
  l->spec = std::move(it->second);
  arriving_.erase(it);
  SimRequest& r = l->req;
  r.id = id;
  r.arrival_tick = now_;
  r.num_prompt_tokens = static_cast<int64_t>(l->spec.prompt.size());
  r.num_tokens = r.num_prompt_tokens;
  r.max_output_tokens = std::max<int64_t>(1, l->spec.max_output_tokens);
  RequestRecord& rec = metrics_.Arrive(id);
  rec.group = l->spec.group;
  rec.turn = l->spec.turn;
  rec.arrival = l->spec.arrival;
  rec.prompt_tokens = r.num_prompt_tokens;
  if (static_cast<size_t>(id) >= live_.size()) live_.resize(static_cast<size_t>(id) + 1);
  if (r.num_prompt_tokens < 1 || r.num_prompt_tokens >= params_.max_model_len ||
      mgr_.BlocksNeededFresh(r.num_prompt_tokens) > plan_.usable_blocks()) {
    Reject(*l);
    return;
  }
  r.kv_handle = mgr_.AddRequest(l->spec.prompt);
  state_.AddWaiting(&l->req, params_.policy);
  live_[static_cast<size_t>(id)] = std::move(l);
  RequestSchedule();
}

void Engine::Reject(Live& l) {
  RequestRecord& rec = metrics_.record(l.req.id);
  rec.rejected = true;
  // A rejected request still ends its session/tree branch.
  EndForWorkload(l.spec, 0);
}

void Engine::EndForWorkload(const RequestSpec& spec, int64_t output_tokens) {
  follow_buf_.clear();
  workload_->OnFinish(spec, output_tokens, now_, follow_buf_);
  for (RequestSpec& f : follow_buf_) {
    const int64_t fid = f.id;
    const Tick t = f.arrival + cost_.IntakeNanos(static_cast<int64_t>(f.prompt.size()));
    arriving_.emplace(fid, std::move(f));
    queue_.Push(t, EventKind::kArrival, static_cast<uint64_t>(fid));
  }
}

void Engine::OnSchedule() {
  if (step_in_flight_) return;
  if (state_.running.empty() && state_.waiting.empty()) return;
  Schedule(params_, state_, adapter_, step_);
  for (SimRequest* p : step_.preempted) {
    metrics_.Preemption();
    metrics_.record(p->id).preemptions = p->num_preemptions;
    if (trace_) trace_->RequestInstant(p->id, "preempted", now_);
  }
  if (step_.empty()) {
    if (state_.running.empty() && !state_.waiting.empty()) {
      // Nothing runs and the head of the queue still cannot be admitted: it never will be
      // (the cache is as empty as it gets). Reject it so the run cannot hang.
      SimRequest* head = state_.waiting.front();
      state_.waiting.pop_front();
      Live& l = *live_[static_cast<size_t>(head->id)];
      mgr_.RemoveRequest(head->kv_handle);
      Reject(l);
      live_[static_cast<size_t>(head->id)].reset();
      RequestSchedule();
      return;
    }
    KVSIM_CHECK_MSG(state_.running.empty(), "running requests but an empty step");
    return;
  }
  cost_.Begin();
  int64_t admitted = 0;
  for (const ScheduledChunk& c : step_.scheduled) {
    cost_.Add(c.num_tokens, c.num_computed_before);
    if (c.new_admission) {
      ++admitted;
      RequestRecord& rec = metrics_.record(c.req->id);
      if (rec.first_scheduled < 0) {
        rec.first_scheduled = now_;
        rec.cached_tokens = c.hit_tokens;
        if (trace_) trace_->RequestPhase(c.req->id, "queued", rec.arrival, now_);
      }
    }
  }
  const Tick dt = cost_.StepNanos();
  metrics_.Computed(step_.num_scheduled_tokens);
  if (trace_) {
    trace_->Step(now_, now_ + dt, step_.num_scheduled_tokens,
                 static_cast<int64_t>(step_.scheduled.size()), admitted,
                 static_cast<int64_t>(step_.preempted.size()));
  }
  step_start_ = now_;
  step_in_flight_ = true;
  queue_.Push(now_ + dt, EventKind::kStepEnd);
}

void Engine::OnStepEnd() {
  step_in_flight_ = false;
  bool any_finished = false;
  const int64_t vocab = workload_->vocab_size();
  // Tokens reach the user after the output processor has handled the step's outputs.
  int64_t emitting = 0;
  for (const ScheduledChunk& c : step_.scheduled) {
    if (c.req->num_computed_tokens >= c.req->num_tokens) ++emitting;
  }
  const Tick seen = now_ + cost_.OutputNanos(emitting);
  for (const ScheduledChunk& c : step_.scheduled) {
    SimRequest& r = *c.req;
    if (r.num_computed_tokens < r.num_tokens) continue;  // a prefill chunk mid-prompt
    // Verify the drafts: accepted left to right until the first rejection.
    int64_t accepted = 0;
    if (c.num_spec_tokens > 0) {
      accepted = VerifyDrafts(r, c.num_spec_tokens, sc_.sim.spec.acceptance_rate, accept_rng_);
      metrics_.SpecDrafts(c.num_spec_tokens, accepted);
    }
    const int64_t gen = std::min<int64_t>(1 + accepted, r.max_output_tokens - r.num_output_tokens);
    Live& l = *live_[static_cast<size_t>(r.id)];
    token_buf_.clear();
    for (int64_t k = 0; k < gen; ++k) {
      token_buf_.push_back(OutputToken(l.spec.output_seed, r.num_output_tokens + k, vocab));
    }
    RequestRecord& rec = metrics_.record(r.id);
    if (rec.first_token < 0) {
      rec.first_token = seen;
      if (trace_) trace_->RequestPhase(r.id, "prefill", rec.first_scheduled, now_);
    }
    metrics_.Emission(l.last_emit, seen);
    l.last_emit = seen;
    r.num_output_tokens += gen;
    r.num_tokens += gen;
    r.num_spec_tokens = 0;
    if (r.num_output_tokens >= r.max_output_tokens || r.num_tokens >= params_.max_model_len) {
      r.status = RequestStatus::kFinished;
      any_finished = true;
      continue;
    }
    mgr_.AppendTokens(r.kv_handle, token_buf_);
    if (num_spec_ > 0) r.num_spec_tokens = NextStepDrafts(r, num_spec_);
  }
  metrics_.StepEnd(step_start_, now_, mgr_.usage(), static_cast<int64_t>(state_.running.size()),
                   static_cast<int64_t>(state_.waiting.size()));
  if (trace_ && !metrics_.kv_series().empty() && metrics_.kv_series().back().tick == now_) {
    const KvSample& s = metrics_.kv_series().back();
    trace_->Counters(now_, s.usage, s.running, s.waiting);
  }
  if (any_finished) {
    auto& run = state_.running;
    std::vector<SimRequest*> done;
    run.erase(std::remove_if(run.begin(), run.end(),
                             [&](SimRequest* p) {
                               if (p->status != RequestStatus::kFinished) return false;
                               done.push_back(p);
                               return true;
                             }),
              run.end());
    for (SimRequest* p : done) Finish(*live_[static_cast<size_t>(p->id)]);
  }
  step_.scheduled.clear();
  step_.preempted.clear();
  RequestSchedule();
}

void Engine::Finish(Live& l) {
  const int64_t id = l.req.id;
  RequestRecord& rec = metrics_.record(id);
  rec.finish = l.last_emit;
  rec.output_tokens = l.req.num_output_tokens;
  rec.preemptions = l.req.num_preemptions;
  if (trace_) trace_->RequestPhase(id, "decode", rec.first_token, now_);
  mgr_.RemoveRequest(l.req.kv_handle);
  EndForWorkload(l.spec, l.req.num_output_tokens);
  live_[static_cast<size_t>(id)].reset();
}

RunSummary Engine::Summary() const {
  const int64_t total = plan_.total_bytes();
  const int64_t pad = static_cast<int64_t>(plan_.padding_fraction() * static_cast<double>(total));
  return metrics_.Summarize(now_, total, pad);
}

}  // namespace kvsim
