#include "sim/engine.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "sim/instance_builder.h"

namespace kvsim {

Result<std::unique_ptr<Engine>> Engine::Create(const Scenario& sc) {
  auto plan = sc.Plan();
  if (!plan.ok()) return plan.status();
  auto config = BuildInstanceConfig(sc, std::move(plan.value()), InstanceRole::kColocated,
                                    Rng(sc.seed).Fork(0x5bec));
  if (!config.ok()) return config.status();
  std::string note;
  auto wl = MakeWorkload(sc.sim.workload, sc.seed, &note);
  if (!wl.ok()) return wl.status();
  std::unique_ptr<Engine> e(new Engine(sc, std::move(config.value()), std::move(wl.value())));
  e->workload_note_ = note;
  return e;
}

Engine::Engine(const Scenario& sc, InstanceConfig config, std::unique_ptr<IWorkload> workload)
    : sc_(sc),
      core_(std::move(config)),
      workload_(std::move(workload)),
      metrics_(static_cast<Tick>(sc_.sim.metrics.kv_sample_interval_ms * kTicksPerMs)) {
  sc_.tree = ConfigNode();  // the parsed structs are all the engine needs
  workload_desc_ = workload_->Describe();
  vocab_ = workload_->vocab_size();
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
  const RequestId id = next->id;
  // The request reaches the scheduler after intake (HTTP, tokenization); its clock for
  // TTFT and E2E starts at the client's send time, spec.arrival. Open-loop arrivals enter
  // in send order (the next one is pulled when this one enters, so never before now).
  const Tick t = std::max(now_, next->arrival + core_.cost().IntakeNanos(next->num_prompt_tokens));
  Announce(std::move(*next));
  open_loop_id_ = id;  // its arrival pulls the next one (follow-ups do not)
  queue_.Push(t, EventKind::kArrival, static_cast<uint64_t>(id.value()));
}

void Engine::RequestSchedule() {
  if (core_.step_in_flight() || schedule_pending_) return;
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
        const RequestId id{static_cast<int64_t>(e->payload)};
        const bool open_loop = id == open_loop_id_;
        OnArrival(id);
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
  const PrefixCacheStats& st = kv().stats();
  metrics_.Lookups(st.requests, st.query_tokens, st.hit_tokens);
  if (const OffloadDriver* off = core_.offload()) {
    metrics_.OffloadBytes(off->blocks_loaded() * core_.offload_block_bytes(),
                          off->blocks_stored() * core_.offload_block_bytes());
  }
}

void Engine::OnArrival(RequestId id) {
  auto it = arriving_.find(id);
  KVSIM_CHECK(it != arriving_.end());
  auto owned = std::make_unique<Live>();
  Live* l = owned.get();
  l->spec = std::move(it->second);
  arriving_.erase(it);
  --footprint_.pending;
  SimRequest& r = *l;
  r.id = id;
  r.arrival_tick = now_;
  r.num_prompt_tokens = l->spec.num_prompt_tokens;
  r.max_output_tokens = std::max<int64_t>(1, l->spec.max_output_tokens);
  RequestRecord& rec = metrics_.Arrive(id);
  rec.group = l->spec.group;
  rec.turn = l->spec.turn;
  rec.arrival = l->spec.arrival;
  rec.prompt_tokens = r.num_prompt_tokens;
  if (r.num_prompt_tokens < 1 || r.num_prompt_tokens >= core_.inst().params().max_model_len ||
      kv().BlocksNeededFresh(r.num_prompt_tokens) > plan().usable_blocks()) {
    Reject(*l);
    Release(l->spec);
    return;
  }
  // The prompt's ids exist only while the KV manager hashes them (it keeps the hashes and
  // the unfinished last block); the request keeps its recipe.
  workload_->BuildPrompt(l->spec, prompt_buf_);
  core_.inst().Add(l, prompt_buf_);
  live_.emplace(id, std::move(owned));
  footprint_.live_max = std::max(footprint_.live_max, static_cast<int64_t>(live_.size()));
  RequestSchedule();
}

void Engine::Reject(Live& l) {
  RequestRecord& rec = metrics_.record(l.id);
  rec.rejected = true;
  // A rejected request still ends its session/tree branch.
  EndForWorkload(l.spec, 0);
}

void Engine::EndForWorkload(const RequestSpec& spec, int64_t output_tokens) {
  follow_buf_.clear();
  workload_->OnFinish(spec, output_tokens, now_, follow_buf_);
  for (RequestSpec& f : follow_buf_) {
    const RequestId fid = f.id;
    const Tick t = f.arrival + core_.cost().IntakeNanos(f.num_prompt_tokens);
    Announce(std::move(f));
    queue_.Push(t, EventKind::kArrival, static_cast<uint64_t>(fid.value()));
  }
}

void Engine::OnSchedule() {
  using Kind = InstanceCore::ScheduleResult::Kind;
  const InstanceCore::ScheduleResult r = core_.Schedule(now_, *this);
  switch (r.kind) {
    case Kind::kNothing:
      return;
    case Kind::kStarted:
      queue_.Push(r.at, EventKind::kStepEnd);
      return;
    case Kind::kRetryAt:
      schedule_pending_ = true;
      queue_.Push(r.at, EventKind::kSchedule);
      return;
    case Kind::kRejected: {
      const RequestId id = r.rejected->id;
      Live& l = LiveOf(*r.rejected);
      Reject(l);
      Release(l.spec);
      live_.erase(id);
      RequestSchedule();
      return;
    }
  }
}

void Engine::Preempted(SimRequest& r, Tick now) {
  metrics_.Preemption();
  metrics_.record(r.id).preemptions = r.num_preemptions;
  if (trace_) trace_->RequestInstant(r.id, "preempted", now);
}

void Engine::ConnectorAdmitted(const ConnectorAdmission& a, Tick now) {
  if (a.req->num_preemptions > 0) return;  // a resume: first-admission metrics are set
  RequestRecord& rec = metrics_.record(a.req->id);
  rec.cached_tokens = a.gpu_hit_tokens;
  rec.cpu_cached_tokens = a.external_hit_tokens;
  if (a.external_hit_tokens > 0) rec.load_start = now;
}

void Engine::StepLaunched(const StepPlan& step, Tick start, Tick end) {
  int64_t admitted = 0;
  for (const ScheduledChunk& c : step.scheduled) {
    if (!c.new_admission) continue;
    ++admitted;
    RequestRecord& rec = metrics_.record(c.req->id);
    if (rec.first_scheduled < 0) {
      rec.first_scheduled = start;
      if (!core_.offload()) rec.cached_tokens = c.hit_tokens;  // with a tier: at its lookup
      if (trace_) trace_->RequestPhase(c.req->id, "queued", rec.arrival, start);
    }
  }
  metrics_.Computed(step.num_scheduled_tokens);
  if (trace_) {
    trace_->Step(start, end, step.num_scheduled_tokens, static_cast<int64_t>(step.scheduled.size()),
                 admitted, static_cast<int64_t>(step.preempted.size()));
  }
}

void Engine::Tokens(SimRequest& r, int64_t n, std::vector<TokenId>& tokens, Tick seen) {
  Live& l = LiveOf(r);
  for (int64_t k = 0; k < n; ++k) {
    tokens.push_back(OutputToken(l.spec.output_seed, r.num_output_tokens + k, vocab_));
  }
  RequestRecord& rec = metrics_.record(r.id);
  if (rec.first_token < 0) {
    rec.first_token = seen;
    if (trace_) trace_->RequestPhase(r.id, "prefill", rec.first_scheduled, now_);
  }
  metrics_.Emission(l.last_emit, seen);
  l.last_emit = seen;
}

void Engine::StepEnded(Tick start, Tick now, const EngineInstance& inst, int64_t drafts,
                       int64_t accepted) {
  metrics_.SpecDrafts(drafts, accepted);
  const SchedulerState& state = inst.state();
  metrics_.StepEnd(start, now, inst.kv().usage(), static_cast<int64_t>(state.running.size()),
                   static_cast<int64_t>(state.waiting.size()));
  if (trace_ && !metrics_.kv_series().empty() && metrics_.kv_series().back().tick == now) {
    const KvSample& s = metrics_.kv_series().back();
    trace_->Counters(now, s.usage, s.running, s.waiting);
  }
}

void Engine::OnStepEnd() {
  finished_buf_.clear();
  core_.EndStep(now_, *this, finished_buf_);
  if (const OffloadDriver* off = core_.offload()) {
    // The tier once the finished requests' last stores are known.
    const int64_t cpu_blocks = off->connector().tier().num_blocks();
    metrics_.CpuTierSample(cpu_blocks > 0 ? static_cast<double>(off->num_cpu_blocks_used()) /
                                                static_cast<double>(cpu_blocks)
                                          : 0.0);
  }
  for (SimRequest* p : finished_buf_) Finish(LiveOf(*p));
  if (const std::optional<Tick> end = core_.Continue(now_, *this)) {
    queue_.Push(*end, EventKind::kStepEnd);
    return;
  }
  RequestSchedule();
}

void Engine::Finish(Live& l) {
  const RequestId id = l.id;
  RequestRecord& rec = metrics_.record(id);
  rec.finish = l.last_emit;
  rec.output_tokens = l.num_output_tokens;
  rec.preemptions = l.num_preemptions;
  if (trace_) trace_->RequestPhase(id, "decode", rec.first_token, now_);
  EndForWorkload(l.spec, l.num_output_tokens);
  Release(l.spec);
  live_.erase(id);
}

void Engine::Announce(RequestSpec&& spec) {
  ++footprint_.pending;
  footprint_.pending_max = std::max(footprint_.pending_max, footprint_.pending);
  footprint_.spec_bytes += spec.bytes();
  footprint_.spec_bytes_max = std::max(footprint_.spec_bytes_max, footprint_.spec_bytes);
  const RequestId id = spec.id;
  arriving_.emplace(id, std::move(spec));
}

void Engine::Release(const RequestSpec& spec) { footprint_.spec_bytes -= spec.bytes(); }

RunSummary Engine::Summary() const {
  const int64_t total = plan().total_bytes();
  const int64_t pad = static_cast<int64_t>(plan().padding_fraction() * static_cast<double>(total));
  return metrics_.Summarize(now_, total, pad);
}

}  // namespace kvsim
