#include "sim/engine.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "sim/instance_builder.h"

namespace kvsim {

Result<std::unique_ptr<Engine>> Engine::Create(const Scenario& sc) {
  auto plan = sc.Plan();
  if (!plan.ok()) return plan.status();
  // Every DP rank is the same instance with its own acceptance stream (rank 0's is the one a
  // single engine has always had).
  std::vector<InstanceConfig> ranks;
  const int64_t dp = DpRanks(sc);
  for (int64_t r = 0; r < dp; ++r) {
    auto config = BuildInstanceConfig(sc, plan.value(), InstanceRole::kColocated,
                                      Rng(sc.seed).Fork(0x5bec + static_cast<uint64_t>(r) * 0x10000));
    if (!config.ok()) return config.status();
    ranks.push_back(std::move(config.value()));
  }
  std::string note;
  auto wl = MakeWorkload(sc.sim.workload, sc.seed, &note);
  if (!wl.ok()) return wl.status();
  std::unique_ptr<Engine> e(new Engine(sc, std::move(ranks), std::move(wl.value())));
  e->workload_note_ = note;
  return e;
}

Engine::Engine(const Scenario& sc, std::vector<InstanceConfig> ranks,
               std::unique_ptr<IWorkload> workload)
    : sc_(sc),
      workload_(std::move(workload)),
      metrics_(static_cast<Tick>(sc_.sim.metrics.kv_sample_interval_ms * kTicksPerMs)) {
  sc_.tree = ConfigNode();  // the parsed structs are all the engine needs
  // An MoE model's DP ranks step together (vLLM's DPEngineCoreProc); a dense model's are
  // independent engines. Only the former publish their request counts to the balancer.
  const bool moe = sc_.model.compute.num_experts > 0 ||
                   (sc_.model.compute.num_active_params > 0 &&
                    sc_.model.compute.num_active_params < sc_.model.compute.num_params);
  const int n = static_cast<int>(ranks.size());
  lock_step_ = n > 1 && moe;
  if (n > 1) balancer_.emplace(n, lock_step_ ? 100 * kTicksPerMs : 0);
  for (int r = 0; r < n; ++r) {
    ranks_.push_back(std::make_unique<Rank>(this, r, std::move(ranks[static_cast<size_t>(r)])));
  }
  workload_desc_ = workload_->Describe();
  vocab_ = workload_->vocab_size();
  if (sc_.sim.run.max_sim_seconds > 0) {
    stop_at_ = static_cast<Tick>(sc_.sim.run.max_sim_seconds * kTicksPerSecond);
  }
}

void Engine::SetStepLog(const StepRecordSink* sink) {
  for (const auto& r : ranks_) {
    r->core.SetStepLog(sink, ranks_.size() > 1 ? "dp " + std::to_string(r->rank) : std::string());
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
  const Tick t = std::max(now_, next->arrival + core(0).cost().IntakeNanos(next->num_prompt_tokens));
  Announce(std::move(*next));
  open_loop_id_ = id;  // its arrival pulls the next one (follow-ups do not)
  queue_.Push(t, EventKind::kArrival, static_cast<uint64_t>(id.value()));
}

void Engine::RequestSchedule(int rank) {
  if (lock_step_) {
    if (pool_in_flight_ || pool_schedule_pending_) return;
    pool_schedule_pending_ = true;
    queue_.Push(now_, EventKind::kSchedule, kPool);
    return;
  }
  Rank& r = *ranks_[static_cast<size_t>(rank)];
  if (r.core.step_in_flight() || r.schedule_pending) return;
  r.schedule_pending = true;
  queue_.Push(now_, EventKind::kSchedule, static_cast<uint64_t>(rank));
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
        if (e->payload == kPool) {
          OnPoolSchedule();
        } else {
          OnSchedule(static_cast<int>(e->payload));
        }
        break;
      case EventKind::kStepEnd:
        if (e->payload == kPool) {
          OnPoolStepEnd();
        } else {
          OnStepEnd(static_cast<int>(e->payload));
        }
        break;
      case EventKind::kKvReady:
      case EventKind::kWireStart:
        KVSIM_CHECK_MSG(false, "a P/D transfer event in a single engine");
        break;
    }
  }
  PrefixCacheStats st;
  int64_t loaded = 0, stored = 0;
  for (const auto& r : ranks_) {
    const PrefixCacheStats& s = r->core.inst().kv().stats();
    st.requests += s.requests;
    st.query_tokens += s.query_tokens;
    st.hit_tokens += s.hit_tokens;
    if (const OffloadDriver* off = r->core.offload()) {
      loaded += off->blocks_loaded() * r->core.offload_block_bytes();
      stored += off->blocks_stored() * r->core.offload_block_bytes();
    }
  }
  metrics_.Lookups(st.requests, st.query_tokens, st.hit_tokens);
  if (offload()) metrics_.OffloadBytes(loaded, stored);
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
  if (r.num_prompt_tokens < 1 || r.num_prompt_tokens >= core0().inst().params().max_model_len ||
      kv().BlocksNeededFresh(r.num_prompt_tokens) > plan().usable_blocks()) {
    Reject(*l);
    Release(l->spec);
    return;
  }
  // The prompt's ids exist only while the KV manager hashes them (it keeps the hashes and
  // the unfinished last block); the request keeps its recipe.
  workload_->BuildPrompt(l->spec, prompt_buf_);
  l->rank = PickRank(now_);
  core(l->rank).inst().Add(l, prompt_buf_);
  live_.emplace(id, std::move(owned));
  footprint_.live_max = std::max(footprint_.live_max, static_cast<int64_t>(live_.size()));
  RequestSchedule(l->rank);
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
    const Tick t = f.arrival + core(0).cost().IntakeNanos(f.num_prompt_tokens);
    Announce(std::move(f));
    queue_.Push(t, EventKind::kArrival, static_cast<uint64_t>(fid.value()));
  }
}

int Engine::PickRank(Tick now) {
  if (!balancer_) return 0;
  return balancer_->Pick(now, [&](int rank) {
    const SchedulerState& st = core(rank).inst().state();
    return std::pair<int64_t, int64_t>(st.num_waiting(), static_cast<int64_t>(st.running.size()));
  });
}

void Engine::RejectHead(SimRequest* head) {
  const RequestId id = head->id;
  Live& l = LiveOf(*head);
  Reject(l);
  Release(l.spec);
  live_.erase(id);
}

void Engine::OnSchedule(int rank) {
  using Kind = InstanceCore::ScheduleResult::Kind;
  Rank& rk = *ranks_[static_cast<size_t>(rank)];
  rk.schedule_pending = false;
  const InstanceCore::ScheduleResult r = rk.core.Schedule(now_, rk);
  switch (r.kind) {
    case Kind::kNothing:
    case Kind::kDecided:
      return;
    case Kind::kStarted:
      queue_.Push(r.at, EventKind::kStepEnd, static_cast<uint64_t>(rank));
      return;
    case Kind::kRetryAt:
      rk.schedule_pending = true;
      queue_.Push(r.at, EventKind::kSchedule, static_cast<uint64_t>(rank));
      return;
    case Kind::kRejected:
      RejectHead(r.rejected);
      RequestSchedule(rank);
      return;
  }
}

void Engine::OnPoolSchedule() {
  using Kind = InstanceCore::ScheduleResult::Kind;
  pool_schedule_pending_ = false;
  if (pool_in_flight_) return;
  std::vector<std::pair<int, bool>> launch;  // (rank, async next) to launch
  Tick retry = -1;
  bool rejected = false;
  for (const auto& rk : ranks_) {
    const InstanceCore::ScheduleResult r = rk->core.Decide(now_, *rk);
    if (r.kind == Kind::kDecided) launch.emplace_back(rk->rank, false);
    if (r.kind == Kind::kRetryAt) retry = retry < 0 ? r.at : std::min(retry, r.at);
    if (r.kind == Kind::kRejected) {
      RejectHead(r.rejected);
      rejected = true;
    }
  }
  if (!launch.empty()) {
    LaunchPool(launch);
    return;
  }
  if (rejected) {
    RequestSchedule(0);
  } else if (retry >= 0) {
    pool_schedule_pending_ = true;
    queue_.Push(retry, EventKind::kSchedule, kPool);
  }
}

void Engine::LaunchPool(const std::vector<std::pair<int, bool>>& launch) {
  int64_t total = 0;
  for (const auto& [rank, next] : launch) {
    total += next ? core(rank).next_tokens() : core(rank).decided_tokens();
  }
  Tick end = now_;
  std::vector<int> launched;
  for (const auto& [rank, next] : launch) {
    InstanceCore& c = core(rank);
    c.set_peer_tokens(total - (next ? c.next_tokens() : c.decided_tokens()));
    if (next) {
      const std::optional<Tick> e = c.Continue(now_, *ranks_[static_cast<size_t>(rank)]);
      if (!e) continue;  // an empty decision: nothing to run
      end = std::max(end, *e);
    } else {
      end = std::max(end, c.Launch(now_, *ranks_[static_cast<size_t>(rank)]));
    }
    launched.push_back(rank);
    ranks_[static_cast<size_t>(rank)]->in_pool_step = true;
  }
  if (launched.empty()) {
    RequestSchedule(0);
    return;
  }
  // The ranks without a batch run a dummy one; the experts' collectives make every rank
  // wait for the slowest.
  for (const auto& rk : ranks_) {
    if (!rk->in_pool_step) end = std::max(end, now_ + rk->core.DummyStepNanos(total));
  }
  for (int rank : launched) core(rank).ExtendStep(end);
  pool_in_flight_ = true;
  queue_.Push(end, EventKind::kStepEnd, kPool);
}

void Engine::OnPoolStepEnd() {
  using Kind = InstanceCore::ScheduleResult::Kind;
  pool_in_flight_ = false;
  for (const auto& rk : ranks_) {
    if (!rk->in_pool_step) continue;
    rk->in_pool_step = false;
    EndRankStep(*rk);
  }
  // Async: the steps decided while this one ran launch now, with the ranks that had none
  // deciding at once; sync: every rank decides at the next kSchedule (this tick).
  std::vector<std::pair<int, bool>> launch;
  bool any_next = false;
  for (const auto& rk : ranks_) {
    InstanceCore& c = rk->core;
    if (c.next_tokens() > 0) {
      launch.emplace_back(rk->rank, true);
      any_next = true;
    } else if (c.next_tokens() == 0) {
      (void)c.Continue(now_, *rk);  // an empty decision: its record, nothing to run
    }
  }
  if (any_next) {
    for (const auto& rk : ranks_) {
      if (rk->core.next_tokens() >= 0 || rk->core.idle()) continue;
      const InstanceCore::ScheduleResult r = rk->core.Decide(now_, *rk);
      if (r.kind == Kind::kDecided) launch.emplace_back(rk->rank, false);
      if (r.kind == Kind::kRejected) RejectHead(r.rejected);
    }
    LaunchPool(launch);
    return;
  }
  RequestSchedule(0);
}

void Engine::EndRankStep(Rank& r) {
  finished_buf_.clear();
  r.core.EndStep(now_, r, finished_buf_);
  if (const OffloadDriver* off = r.core.offload()) {
    // The tier once the finished requests' last stores are known.
    const int64_t cpu_blocks = off->connector().tier().num_blocks();
    metrics_.CpuTierSample(cpu_blocks > 0 ? static_cast<double>(off->num_cpu_blocks_used()) /
                                                static_cast<double>(cpu_blocks)
                                          : 0.0);
  }
  for (SimRequest* p : finished_buf_) Finish(LiveOf(*p));
}

void Engine::OnStepEnd(int rank) {
  Rank& r = *ranks_[static_cast<size_t>(rank)];
  EndRankStep(r);
  if (const std::optional<Tick> end = r.core.Continue(now_, r)) {
    queue_.Push(*end, EventKind::kStepEnd, static_cast<uint64_t>(rank));
    return;
  }
  RequestSchedule(rank);
}

void Engine::OnPreempted(SimRequest& r, Tick now) {
  metrics_.Preemption();
  metrics_.record(r.id).preemptions = r.num_preemptions;
  if (trace_) trace_->RequestInstant(r.id, "preempted", now);
}

void Engine::OnConnectorAdmitted(const ConnectorAdmission& a, Tick now) {
  if (a.req->num_preemptions > 0) return;  // a resume: first-admission metrics are set
  RequestRecord& rec = metrics_.record(a.req->id);
  rec.cached_tokens = a.gpu_hit_tokens;
  rec.cpu_cached_tokens = a.external_hit_tokens;
  if (a.external_hit_tokens > 0) rec.load_start = now;
}

void Engine::OnStepLaunched(const StepPlan& step, Tick start, Tick end) {
  int64_t admitted = 0;
  for (const ScheduledChunk& c : step.scheduled) {
    if (!c.new_admission) continue;
    ++admitted;
    RequestRecord& rec = metrics_.record(c.req->id);
    if (rec.first_scheduled < 0) {
      rec.first_scheduled = start;
      if (!offload()) rec.cached_tokens = c.hit_tokens;  // with a tier: at its lookup
      if (trace_) trace_->RequestPhase(c.req->id, "queued", rec.arrival, start);
    }
  }
  metrics_.Computed(step.num_scheduled_tokens);
  if (trace_) {
    trace_->Step(start, end, step.num_scheduled_tokens, static_cast<int64_t>(step.scheduled.size()),
                 admitted, static_cast<int64_t>(step.preempted.size()));
  }
}

void Engine::OnTokens(SimRequest& r, int64_t n, std::vector<TokenId>& tokens, Tick seen) {
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

void Engine::OnStepEnded(Tick start, Tick now, int64_t drafts, int64_t accepted) {
  metrics_.SpecDrafts(drafts, accepted);
  // With DP ranks: the pools' mean usage (equal pools) and the ranks' queues together.
  double usage = 0;
  int64_t running = 0, waiting = 0;
  for (const auto& r : ranks_) {
    usage += r->core.inst().kv().usage();
    running += static_cast<int64_t>(r->core.inst().state().running.size());
    waiting += static_cast<int64_t>(r->core.inst().state().waiting.size());
  }
  if (ranks_.size() > 1) usage /= static_cast<double>(ranks_.size());
  metrics_.StepEnd(start, now, usage, running, waiting);
  if (trace_ && !metrics_.kv_series().empty() && metrics_.kv_series().back().tick == now) {
    const KvSample& s = metrics_.kv_series().back();
    trace_->Counters(now, s.usage, s.running, s.waiting);
  }
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
  const int64_t total = plan().total_bytes() * num_ranks();
  const int64_t pad = static_cast<int64_t>(plan().padding_fraction() * static_cast<double>(total));
  return metrics_.Summarize(now_, total, pad);
}

}  // namespace kvsim
