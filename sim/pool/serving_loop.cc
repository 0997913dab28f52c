#include "sim/pool/serving_loop.h"

#include <algorithm>
#include <limits>

#include "core/check.h"

namespace kvsim {

ServingLoop::ServingLoop(std::unique_ptr<IWorkload> workload, Tick stop_at)
    : workload_(std::move(workload)), stop_at_(stop_at) {
  vocab_ = workload_->vocab_size();
}

ServingLoop::~ServingLoop() = default;

int ServingLoop::AddPool(std::vector<InstanceConfig> configs, std::vector<std::string> tags,
                         bool lock_step, Tick publish_interval) {
  KVSIM_CHECK(!configs.empty() && tags.size() == configs.size());
  Pool p;
  p.first = num_instances();
  p.count = static_cast<int>(configs.size());
  p.lock_step = lock_step && p.count > 1;
  if (p.count > 1) p.balancer.emplace(p.count, publish_interval);
  const int pool = num_pools();
  for (size_t k = 0; k < configs.size(); ++k) {
    members_.push_back(
        std::make_unique<Member>(this, num_instances(), pool, std::move(configs[k])));
  }
  tags_.insert(tags_.end(), std::make_move_iterator(tags.begin()),
               std::make_move_iterator(tags.end()));
  pools_.push_back(std::move(p));
  return pool;
}

void ServingLoop::SetStepLog(const StepRecordSink* sink) {
  for (const auto& m : members_) m->core.SetStepLog(sink, tags_[static_cast<size_t>(m->id)]);
}

void ServingLoop::Member::Tokens(SimRequest& r, int64_t n, std::vector<TokenId>& tokens,
                                 Tick seen) {
  LiveRequest& l = LiveOf(r);
  for (int64_t k = 0; k < n; ++k) {
    tokens.push_back(OutputToken(l.spec->output_seed, r.num_output_tokens + k, loop->vocab_));
  }
  loop->deployment_->Emitted(id, l, seen);
}

void ServingLoop::Admit(int i, LiveRequest* r, const std::vector<TokenId>& prompt) {
  Member& m = *members_[static_cast<size_t>(i)];
  r->instance = i;
  m.core.inst().Admit(r, prompt);
  // The CPU tier's protocol as kvsim schedule drives it: latest tracks a request from its
  // arrival, not from its first lookup.
  if (OffloadDriver* tier = m.core.mutable_offload()) tier->RequestAdded(*r);
  ++m.usage.requests;
}

bool ServingLoop::PromptFits(int pool, int64_t n) const {
  const InstanceCore& c = core(pool_first(pool));
  return n >= 1 && n < c.inst().params().max_model_len &&
         c.inst().kv().BlocksNeededFresh(n) <= c.plan().usable_blocks();
}

InstanceSummary ServingLoop::Summarize(int i, Tick span) const {
  const Member& m = *members_[static_cast<size_t>(i)];
  InstanceSummary s;
  s.name = tags_[static_cast<size_t>(i)];
  s.requests = m.usage.requests;
  s.steps = m.core.steps();
  s.preemptions = m.core.preemptions();
  const PrefixCacheStats& st = m.core.inst().kv().stats();
  s.lookups = st.requests;
  s.query_tokens = st.query_tokens;
  s.hit_tokens = st.hit_tokens;
  s.hit_rate = st.query_tokens > 0
                   ? static_cast<double>(st.hit_tokens) / static_cast<double>(st.query_tokens)
                   : 0.0;
  s.kv_usage_mean = m.usage.area / static_cast<double>(std::max<Tick>(1, span));
  s.kv_usage_max = m.usage.max;
  return s;
}

const std::vector<TokenId>& ServingLoop::PromptOf(const RequestSpec& spec) {
  workload_->BuildPrompt(spec, prompt_buf_);
  return prompt_buf_;
}

void ServingLoop::Announce(RequestSpec&& spec, Tick at) {
  ++footprint_.pending;
  footprint_.pending_max = std::max(footprint_.pending_max, footprint_.pending);
  footprint_.spec_bytes += spec.bytes();
  footprint_.spec_bytes_max = std::max(footprint_.spec_bytes_max, footprint_.spec_bytes);
  const RequestId id = spec.id;
  specs_.insert_or_assign(id, std::move(spec));
  queue_.Push(at, EventKind::kArrival, static_cast<uint64_t>(id.value()));
}

void ServingLoop::PullOpenLoop() {
  if (open_loop_done_) return;
  std::optional<RequestSpec> next = workload_->Next();
  if (!next) {
    open_loop_done_ = true;
    return;
  }
  // The request reaches the scheduler after intake (HTTP, tokenization); its clock for TTFT
  // and E2E starts at the client's send time, spec.arrival. Open-loop arrivals enter in send
  // order (the next one is pulled when this one enters, so never before now).
  const Tick t =
      std::max(now_, next->arrival + core(0).cost().IntakeNanos(next->num_prompt_tokens));
  open_loop_next_ = next->id;
  Announce(std::move(*next), t);
}

void ServingLoop::End(RequestId id, int64_t output_tokens) {
  auto it = specs_.find(id);
  KVSIM_CHECK(it != specs_.end());
  follow_buf_.clear();
  workload_->OnFinish(it->second, output_tokens, now_, follow_buf_);
  for (RequestSpec& f : follow_buf_) {
    const Tick t = f.arrival + core(0).cost().IntakeNanos(f.num_prompt_tokens);
    Announce(std::move(f), t);
  }
  // Found again: the follow-ups' insertions may have rehashed the map.
  it = specs_.find(id);
  footprint_.spec_bytes -= it->second.bytes();
  specs_.erase(it);
}

void ServingLoop::PushRequestEvent(Tick t, EventKind kind, RequestId id) {
  KVSIM_CHECK(kind != EventKind::kSchedule && kind != EventKind::kStepEnd &&
              kind != EventKind::kArrival && id.value() >= 0);
  queue_.Push(t, kind, static_cast<uint64_t>(id.value()));
}

void ServingLoop::RequestSchedule(int i) {
  Member& m = *members_[static_cast<size_t>(i)];
  Pool& p = pools_[static_cast<size_t>(m.pool)];
  if (p.lock_step) {
    if (p.in_flight || p.schedule_pending) return;
    p.schedule_pending = true;
    queue_.Push(now_, EventKind::kSchedule, kPoolBit | static_cast<uint64_t>(m.pool));
    return;
  }
  if (m.core.step_in_flight() || m.schedule_pending) return;
  m.schedule_pending = true;
  queue_.Push(now_, EventKind::kSchedule, static_cast<uint64_t>(i));
}

int ServingLoop::PickInstance(int pool) {
  Pool& p = pools_[static_cast<size_t>(pool)];
  if (!p.balancer) return p.first;
  return p.first + p.balancer->Pick(now_, [&](int rank) {
    const SchedulerState& st = core(p.first + rank).inst().state();
    return std::pair<int64_t, int64_t>(st.num_waiting(), static_cast<int64_t>(st.running.size()));
  });
}

void ServingLoop::Run() {
  KVSIM_CHECK(deployment_ != nullptr && !members_.empty());
  PullOpenLoop();
  for (;;) {
    std::optional<Event> e;
    if (external_ != nullptr) {
      const std::optional<Tick> done = external_->NextCompletion();
      const std::optional<Event> next = queue_.Peek();
      if (!done && !next) break;
      const Tick t_ev = next ? next->tick : std::numeric_limits<Tick>::max();
      const Tick t = done ? std::min(*done, t_ev) : t_ev;
      if (stop_at_ >= 0 && t > stop_at_) {
        now_ = stop_at_;
        external_->AdvanceTo(now_);
        break;
      }
      now_ = t;
      external_->AdvanceTo(now_);
      // What completes at t (bytes delivered) goes before any event of tick t.
      if (done && *done <= t_ev) {
        external_->Fire();
        continue;
      }
      e = queue_.Pop();
    } else {
      e = queue_.Pop();
      if (!e) break;
      if (stop_at_ >= 0 && e->tick > stop_at_) {
        now_ = stop_at_;
        break;
      }
      now_ = e->tick;
    }
    switch (e->kind) {
      case EventKind::kArrival: {
        const RequestId id{static_cast<int64_t>(e->payload)};
        const bool open_loop = open_loop_next_ == id;
        if (open_loop) open_loop_next_.reset();
        OnArrival(id);
        if (open_loop) PullOpenLoop();
        break;
      }
      case EventKind::kSchedule:
        if (e->payload & kPoolBit) {
          OnPoolSchedule(static_cast<int>(e->payload & ~kPoolBit));
        } else {
          OnSchedule(static_cast<int>(e->payload));
        }
        break;
      case EventKind::kStepEnd:
        if (e->payload & kPoolBit) {
          OnPoolStepEnd(static_cast<int>(e->payload & ~kPoolBit));
        } else {
          OnStepEnd(static_cast<int>(e->payload));
        }
        break;
      case EventKind::kKvReady:
      case EventKind::kWireStart:
        deployment_->RequestEvent(e->kind, RequestId{static_cast<int64_t>(e->payload)});
        break;
    }
  }
}

void ServingLoop::OnArrival(RequestId id) {
  --footprint_.pending;
  deployment_->Arrived(id);
  // Specs held beyond the announced ones are the requests in flight.
  footprint_.live_max =
      std::max(footprint_.live_max, static_cast<int64_t>(specs_.size()) - footprint_.pending);
}

void ServingLoop::OnSchedule(int i) {
  using Kind = InstanceCore::ScheduleResult::Kind;
  Member& m = *members_[static_cast<size_t>(i)];
  m.schedule_pending = false;
  const InstanceCore::ScheduleResult r = m.core.Schedule(now_, m);
  switch (r.kind) {
    case Kind::kNothing:
    case Kind::kDecided:  // Schedule launches what it decides
      return;
    case Kind::kStarted:
      queue_.Push(r.at, EventKind::kStepEnd, static_cast<uint64_t>(i));
      return;
    case Kind::kRetryAt:
      m.schedule_pending = true;
      queue_.Push(r.at, EventKind::kSchedule, static_cast<uint64_t>(i));
      return;
    case Kind::kRejected:
      deployment_->Dropped(i, r.rejected);
      RequestSchedule(i);
      return;
  }
}

void ServingLoop::EndMemberStep(Member& m) {
  finished_buf_.clear();
  m.core.EndStep(now_, m, finished_buf_);
  deployment_->StepOutputs(m.id, finished_buf_);
}

void ServingLoop::OnStepEnd(int i) {
  Member& m = *members_[static_cast<size_t>(i)];
  EndMemberStep(m);
  if (const std::optional<Tick> end = m.core.Continue(now_, m)) {
    queue_.Push(*end, EventKind::kStepEnd, static_cast<uint64_t>(i));
    return;
  }
  RequestSchedule(i);
}

void ServingLoop::OnPoolSchedule(int pi) {
  using Kind = InstanceCore::ScheduleResult::Kind;
  Pool& p = pools_[static_cast<size_t>(pi)];
  p.schedule_pending = false;
  if (p.in_flight) return;
  std::vector<std::pair<int, bool>> launch;  // (member, async next) to launch
  Tick retry = -1;
  bool rejected = false;
  for (int i = p.first; i < p.first + p.count; ++i) {
    Member& m = *members_[static_cast<size_t>(i)];
    const InstanceCore::ScheduleResult r = m.core.Decide(now_, m);
    if (r.kind == Kind::kDecided) launch.emplace_back(i, false);
    if (r.kind == Kind::kRetryAt) retry = retry < 0 ? r.at : std::min(retry, r.at);
    if (r.kind == Kind::kRejected) {
      deployment_->Dropped(i, r.rejected);
      rejected = true;
    }
  }
  if (!launch.empty()) {
    LaunchPool(pi, launch);
    return;
  }
  if (rejected) {
    RequestSchedule(p.first);
  } else if (retry >= 0) {
    p.schedule_pending = true;
    queue_.Push(retry, EventKind::kSchedule, kPoolBit | static_cast<uint64_t>(pi));
  }
}

void ServingLoop::LaunchPool(int pi, const std::vector<std::pair<int, bool>>& launch) {
  Pool& p = pools_[static_cast<size_t>(pi)];
  int64_t total = 0;
  for (const auto& [i, next] : launch) {
    total += next ? core(i).next_tokens() : core(i).decided_tokens();
  }
  Tick end = now_;
  std::vector<int> launched;
  for (const auto& [i, next] : launch) {
    Member& m = *members_[static_cast<size_t>(i)];
    InstanceCore& c = m.core;
    c.set_peer_tokens(total - (next ? c.next_tokens() : c.decided_tokens()));
    if (next) {
      const std::optional<Tick> e = c.Continue(now_, m);
      if (!e) continue;  // an empty decision: nothing to run
      end = std::max(end, *e);
    } else {
      end = std::max(end, c.Launch(now_, m));
    }
    launched.push_back(i);
    m.in_pool_step = true;
  }
  if (launched.empty()) {
    RequestSchedule(p.first);
    return;
  }
  // The members without a batch run a dummy one; the experts' collectives make every member
  // wait for the slowest.
  for (int i = p.first; i < p.first + p.count; ++i) {
    Member& m = *members_[static_cast<size_t>(i)];
    if (!m.in_pool_step) end = std::max(end, now_ + m.core.DummyStepNanos(total));
  }
  for (int i : launched) core(i).ExtendStep(end);
  p.in_flight = true;
  queue_.Push(end, EventKind::kStepEnd, kPoolBit | static_cast<uint64_t>(pi));
}

void ServingLoop::OnPoolStepEnd(int pi) {
  using Kind = InstanceCore::ScheduleResult::Kind;
  Pool& p = pools_[static_cast<size_t>(pi)];
  p.in_flight = false;
  for (int i = p.first; i < p.first + p.count; ++i) {
    Member& m = *members_[static_cast<size_t>(i)];
    if (!m.in_pool_step) continue;
    m.in_pool_step = false;
    EndMemberStep(m);
  }
  // Async: the steps decided while this one ran launch now, with the members that had none
  // deciding at once; sync: every member decides at the next kSchedule (this tick).
  std::vector<std::pair<int, bool>> launch;
  bool any_next = false;
  for (int i = p.first; i < p.first + p.count; ++i) {
    Member& m = *members_[static_cast<size_t>(i)];
    InstanceCore& c = m.core;
    if (c.next_tokens() > 0) {
      launch.emplace_back(i, true);
      any_next = true;
    } else if (c.next_tokens() == 0) {
      (void)c.Continue(now_, m);  // an empty decision: its record, nothing to run
    }
  }
  if (any_next) {
    for (int i = p.first; i < p.first + p.count; ++i) {
      Member& m = *members_[static_cast<size_t>(i)];
      if (m.core.next_tokens() >= 0 || m.core.idle()) continue;
      const InstanceCore::ScheduleResult r = m.core.Decide(now_, m);
      if (r.kind == Kind::kDecided) launch.emplace_back(i, false);
      if (r.kind == Kind::kRejected) deployment_->Dropped(i, r.rejected);
    }
    LaunchPool(pi, launch);
    return;
  }
  RequestSchedule(p.first);
}

}  // namespace kvsim
