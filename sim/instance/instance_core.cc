#include "sim/instance/instance_core.h"

#include <algorithm>
#include <memory>
#include <utility>

namespace kvsim {
namespace {

// The §8 fields a decision produced (has_offload, kv_admitted, loading, cpu_loads, cpu_stores,
// cpu_evicted), from its plan, the scheduler's state after it and what the tier started.
// `offload` is consumed.
void RecordOffloadDecision(const StepPlan& plan, const SchedulerState& state,
                           OffloadStepRecord& offload, StepRecord& record) {
  record.has_offload = true;
  for (const ConnectorAdmission& a : plan.connector_admitted) {
    record.kv_admitted.push_back(
        {static_cast<int32_t>(a.req->id.value()), a.gpu_hit_tokens, a.external_hit_tokens});
  }
  for (const SimRequest* r : state.skipped_waiting)
    if (r->status == RequestStatus::kWaitingForRemoteKvs)
      record.loading.push_back(static_cast<int32_t>(r->id.value()));
  for (auto& l : offload.loads)
    record.cpu_loads.push_back({static_cast<int32_t>(l.request), std::move(l.block_indices)});
  for (auto& st : offload.stores)
    record.cpu_stores.push_back({static_cast<int32_t>(st.request), std::move(st.block_indices)});
  for (const auto& e : offload.evicted)
    record.cpu_evicted.push_back({static_cast<int32_t>(e.request), e.block_index});
}

// The CPU tier's driver: copies take the host link's time, or on a unit clock are reported
// per xfer_timing.
std::unique_ptr<OffloadDriver> MakeOffloadDriver(const InstanceConfig& c,
                                                 const KvCacheManager* kv) {
  if (c.unit_clock) return std::make_unique<OffloadDriver>(*c.offload, kv, c.xfer_timing);
  return std::make_unique<OffloadDriver>(*c.offload, kv, c.offload_link);
}

}  // namespace

InstanceCore::InstanceCore(InstanceConfig config)
    : config_(std::move(config)),
      inst_(config_.kv, config_.params, config_.role),
      cost_(config_.model, config_.plan, config_.hardware),
      async_(config_.params.async_scheduling) {
  inst_.set_drafts(config_.num_speculative_tokens, config_.acceptance_rate, config_.accept_rng);
  if (config_.watermark_blocks > 0) inst_.set_watermark_blocks(config_.watermark_blocks);
  if (config_.offload) {
    offload_ = MakeOffloadDriver(config_, &inst_.kv());
    inst_.set_connector(offload_.get());
  }
}

void InstanceCore::SetStepLog(const StepRecordSink* sink, std::string instance_tag) {
  step_log_ = sink;
  instance_tag_ = std::move(instance_tag);
}

void InstanceCore::WriteRecord(StepRecord& record) {
  record.instance = instance_tag_;
  if (offload_) {
    // The tier as the record completes: timed, as the step ends (its copies count as done
    // from the next decision on); on a unit clock, after the step's output reported them.
    record.cpu_blocks_used = offload_->num_cpu_blocks_used();
    record.cpu_blocks_ready = offload_->num_cpu_blocks_ready();
  }
  (*step_log_)(record);
}

void InstanceCore::OffloadDecision(const StepPlan& plan, Tick now, InstanceObserver& obs) {
  finished_ptrs_.clear();
  for (SimRequest& r : finished_since_decision_) finished_ptrs_.push_back(&r);
  last_offload_ = offload_->EndDecision(plan, finished_ptrs_);
  finished_since_decision_.clear();
  for (const ConnectorAdmission& a : plan.connector_admitted) obs.ConnectorAdmitted(a, now);
}

void InstanceCore::DecideInto(StepPlan& plan, StepRecord& record, Tick now,
                              InstanceObserver& obs) {
  if (offload_) {
    // Copies that ended by now are reported to this decision (a unit clock applied them with
    // the step's output); the stores the previous decision planned start as this step runs.
    if (!config_.unit_clock) offload_->ApplyOutput(now);
    offload_->BeginDecision(now);
  }
  inst_.Decide(plan);
  if (offload_) {
    OffloadDecision(plan, now, obs);
    (&plan == &step_ ? step_flush_until_ : next_flush_until_) = offload_->flush_until();
  }
  preemptions_ += static_cast<int64_t>(plan.preempted.size());
  for (SimRequest* p : plan.preempted) obs.Preempted(*p, now);
  if (step_log_) RecordDecision(plan, record, now);
}

InstanceCore::ScheduleResult InstanceCore::Schedule(Tick now, InstanceObserver& obs) {
  ScheduleResult r = Decide(now, obs);
  if (r.kind == ScheduleResult::Kind::kDecided) {
    r.kind = ScheduleResult::Kind::kStarted;
    r.at = Launch(now, obs);
  }
  return r;
}

Tick InstanceCore::DummyStepNanos(int64_t peer_tokens) {
  cost_.Begin();
  cost_.Add(1, 0);
  cost_.AddPeerTokens(peer_tokens);
  return cost_.Finish().total_ns;
}

InstanceCore::ScheduleResult InstanceCore::Decide(Tick now, InstanceObserver& obs) {
  using Kind = ScheduleResult::Kind;
  if (step_in_flight_) return {};
  if (inst_.idle()) {
    if (offload_ && !finished_since_decision_.empty()) {
      // vLLM's engine makes one more decision for the requests that just finished: the
      // tier's last stores start (and, with nothing unfinished, every copy is flushed).
      offload_->ApplyOutput(now);
      offload_->BeginDecision(now);
      StepPlan none;
      OffloadDecision(none, now, obs);
      offload_->BeginDecision(now);  // the stores just planned start now
    }
    return {};
  }
  DecideInto(step_, step_record_, now, obs);
  if (!step_.empty()) return {Kind::kDecided, now, nullptr};
  const SchedulerState& state = inst_.state();
  if (offload_ && state.running.empty()) {
    // Requests wait for loads (or for stores in flight their lookups met): vLLM's engine
    // keeps stepping with nothing to compute; the next decision that can change anything
    // comes when the next copy ends.
    const Tick next = offload_->NextCompletion();
    if (next >= 0) return {Kind::kRetryAt, std::max(next, now + 1), nullptr};
  }
  if (SimRequest* head = inst_.RejectStuckHead()) {
    // Nothing runs and the head of the queue still cannot be admitted: it never will be
    // (the cache is as empty as it gets). The driver rejects it so the run cannot hang.
    if (offload_) offload_->RequestFinished(*head);
    return {Kind::kRejected, now, head};
  }
  KVSIM_CHECK_MSG(state.running.empty(), "running requests but an empty step");
  return {};
}

Tick InstanceCore::Launch(Tick now, InstanceObserver& obs) {
  cost_.Begin();
  for (const ScheduledChunk& c : step_.scheduled) cost_.Add(c.num_tokens, c.num_computed_before);
  cost_.AddPeerTokens(peer_tokens_);
  peer_tokens_ = 0;
  const StepCost cost = cost_.Finish();
  // Async scheduling: this step's CPU part (scheduling, input preparation) ran while the
  // previous step's GPU part did; its GPU part starts once both are done
  // (core/cost_model.h): max(previous GPU start + this CPU part, now). Sync: after its CPU
  // part. Either way it waits for the CPU-tier copies its decision flushed.
  Tick gpu_start = async_ && back_to_back_ ? std::max(now, prev_gpu_start_ + cost.cpu_ns)
                                           : now + cost.cpu_ns;
  gpu_start = std::max(gpu_start, step_flush_until_);
  const Tick end = now + std::max<Tick>(1, gpu_start - now + cost.gpu_ns);
  prev_gpu_start_ = gpu_start;
  back_to_back_ = false;
  ++steps_;
  obs.StepLaunched(step_, now, end);
  step_record_.t_start_ns = now;
  step_record_.t_end_ns = end;
  step_start_ = now;
  step_in_flight_ = true;
  if (async_) {
    // vLLM's async engine decides the next step while this one runs on the GPU: before this
    // step's outputs are applied (its sampled tokens count as in flight).
    DecideInto(next_, next_record_, now, obs);
    next_decided_ = true;
  }
  return end;
}

void InstanceCore::EndStep(Tick now, InstanceObserver& obs, std::vector<SimRequest*>& finished) {
  KVSIM_CHECK(step_in_flight_);
  step_in_flight_ = false;
  // Tokens reach the user after the output processor has handled the step's outputs.
  int64_t emitting = 0;
  for (const ScheduledChunk& c : step_.scheduled) emitting += c.samples ? 1 : 0;
  const Tick seen = config_.unit_clock ? step_start_ : now + cost_.OutputNanos(emitting);
  const size_t first = finished.size();
  const int64_t drafts_before = inst_.drafts_scheduled();
  const int64_t accepted_before = inst_.drafts_accepted();
  inst_.ApplyStepOutputs(
      step_,
      [&](SimRequest& r, const ScheduledChunk&, int64_t gen, std::vector<TokenId>& tokens) {
        obs.Tokens(r, gen, tokens, seen);
      },
      finished);
  const auto done = std::span<SimRequest* const>(finished).subspan(first);
  obs.StepEnded(step_start_, now, inst_, inst_.drafts_scheduled() - drafts_before,
                inst_.drafts_accepted() - accepted_before);
  if (step_log_) {
    for (SimRequest* p : done) step_record_.finished.push_back(static_cast<int32_t>(p->id.value()));
    if (!config_.unit_clock) WriteRecord(step_record_);
  }
  if (offload_) {
    for (SimRequest* p : done) {
      offload_->RequestFinished(*p);  // before its blocks are freed
      finished_since_decision_.push_back(*p);
      finished_since_decision_.back().kv_handle = kNoRequestHandle;
    }
  }
  inst_.ReleaseOrHoldFinished(done);
  if (config_.unit_clock) {
    // The step clock's order: the output reports the step's copies once the finished requests
    // are freed, and the record (and the pools a driver looks at as it arrives) shows both.
    if (offload_) offload_->ApplyOutput(step_start_);
    if (step_log_) WriteRecord(step_record_);
  }
  step_.scheduled.clear();
  step_.preempted.clear();
}

std::optional<Tick> InstanceCore::Continue(Tick now, InstanceObserver& obs) {
  if (!next_decided_) return std::nullopt;
  next_decided_ = false;
  std::swap(step_, next_);
  std::swap(step_record_, next_record_);
  std::swap(step_flush_until_, next_flush_until_);
  if (!step_.empty()) {
    back_to_back_ = true;  // decided while the previous step ran
    return Launch(now, obs);
  }
  // An empty decision (every running request had its final token in flight): nothing runs;
  // the next decision sees this step's outputs.
  if (step_log_) {
    // The tier as this empty step's outputs are applied, before the decision that plans the
    // finished requests' last stores (docs/step-log.md).
    step_record_.t_start_ns = step_record_.t_end_ns = now;
    WriteRecord(step_record_);
  }
  return std::nullopt;
}

void InstanceCore::RecordDecision(const StepPlan& plan, StepRecord& rec, Tick now) {
  rec = StepRecord{};
  // A unit clock numbers a step by its tick (arrival gaps skip numbers).
  rec.step = config_.unit_clock ? now : step_index_++;
  for (const ScheduledChunk& c : plan.scheduled) {
    const auto id = static_cast<int32_t>(c.req->id.value());
    rec.scheduled.push_back(
        {id, c.num_tokens, c.num_computed_before, c.new_admission ? c.hit_tokens : -1});
    if (c.new_admission) (c.resumed ? rec.resumed : rec.admitted_new).push_back(id);
  }
  for (SimRequest* p : plan.preempted) rec.preempted.push_back(static_cast<int32_t>(p->id.value()));
  rec.num_free_blocks = inst_.kv().num_free_blocks();
  rec.running = static_cast<int64_t>(inst_.state().running.size());
  // Every arrived, unfinished, not-running request (step-log §3), the requests set aside for
  // the tier (skipped_waiting) included, on either clock.
  rec.waiting = inst_.state().num_waiting();
  rec.num_scheduled_tokens = plan.num_scheduled_tokens;
  if (offload_) RecordOffloadDecision(plan, inst_.state(), last_offload_, rec);
}

bool InstanceCore::UnitStep(Tick k, InstanceObserver& obs, std::vector<SimRequest*>& finished) {
  KVSIM_CHECK(config_.unit_clock);
  // Async: this decision is made while the step in flight still holds its sampled tokens.
  const bool pending = step_in_flight_;
  StepPlan& plan = pending ? next_ : step_;
  DecideInto(plan, pending ? next_record_ : step_record_, k, obs);
  ++steps_;
  obs.StepLaunched(plan, k, k + 1);
  bool moves = !plan.scheduled.empty() || !plan.preempted.empty() ||
               (offload_ && !plan.connector_admitted.empty());
  if (pending) {
    for (const ScheduledChunk& c : step_.scheduled) moves |= c.samples;  // a token in flight
    EndStep(k, obs, finished);
    std::swap(step_, next_);
    std::swap(step_record_, next_record_);
  }
  step_in_flight_ = true;
  step_start_ = k;
  if (!async_) EndStep(k, obs, finished);
  // Copies pending, or reported by the output just applied: a deferred lookup may succeed.
  // (A request whose load is done but who waits for the waiting pass to reach it is not a
  // change: a decision that did not reach it will not reach it the next time either.)
  if (offload_) moves |= offload_->copies_in_flight() || offload_->completed_last_output() > 0;
  return moves;
}

void InstanceCore::UnitIdle(Tick k, InstanceObserver& obs, std::vector<SimRequest*>& finished) {
  KVSIM_CHECK(config_.unit_clock);
  if (step_in_flight_) EndStep(k, obs, finished);
  if (!offload_ || (!offload_->busy() && finished_since_decision_.empty())) return;
  // The flush decision runs the scheduler like any other (a Mamba group sees a new step).
  offload_->BeginDecision(k);
  StepPlan none;
  inst_.Decide(none);
  OffloadDecision(none, k, obs);
  offload_->ApplyOutput(k);
}

}  // namespace kvsim
