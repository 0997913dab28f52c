#include "sim/engine.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "sim/engine_common.h"
#include "sim/scenario/offload_section.h"

namespace kvsim {

Result<std::unique_ptr<Engine>> Engine::Create(const Scenario& sc) {
  auto plan = sc.Plan();
  if (!plan.ok()) return plan.status();
  // DP ranks' pools taken together (DpRanks): the null block once.
  // (A pool too large to multiply is left alone: the manager refuses it by its size anyway.)
  if (const int64_t dp = DpRanks(sc);
      dp > 1 && plan->num_blocks > 1 && plan->num_blocks - 1 <= (int64_t{1} << 40) / dp)
    plan->num_blocks = (plan->num_blocks - 1) * dp + 1;
  if (plan->num_blocks < 2) {
    return Status::Error("no_kv_memory",
                         sc.source + ": the KV cache has no usable blocks; set "
                                     "cache.kv_memory_bytes or cache.num_gpu_blocks");
  }
  auto kvc = EngineKvConfig(sc, plan.value());
  if (!kvc.ok()) return kvc.status();
  std::optional<OffloadConnectorConfig> offload;
  if (sc.offload.enabled) {
    auto off = ScenarioOffloadConfig(sc, plan.value());
    if (!off.ok()) return off.status();
    if (!sc.offload.empty()) offload = std::move(off.value());
  }
  std::string note;
  auto wl = MakeWorkload(sc.sim.workload, sc.seed, &note);
  if (!wl.ok()) return wl.status();
  SchedulerParams params =
      EngineSchedulerParams(sc, plan.value(), kvc.value(), sc.cache.num_speculative_tokens);
  // Async scheduling with drafts would need placeholders for the drafts too: such runs are
  // modelled with sync scheduling (docs/step-log.md).
  params.async_scheduling =
      sc.sim.scheduler.async_scheduling && sc.cache.num_speculative_tokens == 0;
  params.reserve_for_inflight_prefills =
      offload && offload->semantics == VllmSemantics::kLatest;
  std::unique_ptr<Engine> e(
      new Engine(sc, std::move(plan.value()), kvc.value(), params, std::move(wl.value())));
  e->workload_note_ = note;
  if (sc.sim.scheduler.watermark > 0) {
    if (e->plan_.config.semantics == VllmSemantics::kClassic) {
      return Status::Error("bad_value", sc.Where("scheduler.watermark") +
                                            ": scheduler.watermark: the classic snapshot has "
                                            "no admission watermark (latest only)");
    }
    e->inst_.set_watermark_blocks(static_cast<int64_t>(
        sc.sim.scheduler.watermark * static_cast<double>(e->plan_.num_blocks)));
  }
  if (offload) {
    // Copies go over the GPU's host link; every rank copies its share of each block in
    // parallel, so one rank's bytes set the time.
    CopyLinkModel link;
    link.bytes_per_ns = sc.offload.pcie_gbytes_per_s;  // GB/s = bytes/ns
    link.latency_ns = std::llround(sc.offload.pcie_latency_us * 1e3);
    link.launch_ns = std::llround(sc.offload.copy_kernel_us * 1e3);
    link.kernels_per_job = std::max<int64_t>(1, static_cast<int64_t>(e->plan_.tensors.size()));
    link.block_bytes = e->plan_.block_bytes * offload->block_size_factor;
    link.shared_link = sc.offload.shared_link;
    e->offload_block_bytes_ = GpuBlockBytesAllRanks(e->plan_) * offload->block_size_factor;
    e->offload_ = std::make_unique<OffloadDriver>(*offload, &e->inst_.kv(), link);
    e->inst_.set_connector(e->offload_.get());
  }
  return e;
}

Engine::Engine(const Scenario& sc, KvCachePlan plan, const KvCacheManagerConfig& kv_config,
               const SchedulerParams& params, std::unique_ptr<IWorkload> workload)
    : sc_(sc),
      plan_(std::move(plan)),
      inst_(kv_config, params),
      cost_(sc_.model, plan_, sc_.sim.hardware),
      workload_(std::move(workload)),
      metrics_(static_cast<Tick>(sc_.sim.metrics.kv_sample_interval_ms * kTicksPerMs)) {
  sc_.tree = ConfigNode();  // the parsed structs are all the engine needs
  workload_desc_ = workload_->Describe();
  // Drafts are verified by the instance, from the engine's acceptance stream.
  inst_.set_drafts(sc_.cache.num_speculative_tokens, sc_.sim.spec.acceptance_rate,
                   Rng(sc_.seed).Fork(0x5bec));
  async_ = params.async_scheduling;
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
  const Tick t = std::max(now_, next->arrival + cost_.IntakeNanos(next->num_prompt_tokens));
  Announce(std::move(*next));
  open_loop_id_ = id;  // its arrival pulls the next one (follow-ups do not)
  queue_.Push(t, EventKind::kArrival, static_cast<uint64_t>(id.value()));
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
  const PrefixCacheStats& st = inst_.kv().stats();
  metrics_.Lookups(st.requests, st.query_tokens, st.hit_tokens);
  if (offload_) {
    metrics_.OffloadBytes(offload_->blocks_loaded() * offload_block_bytes_,
                          offload_->blocks_stored() * offload_block_bytes_);
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
  if (r.num_prompt_tokens < 1 || r.num_prompt_tokens >= inst_.params().max_model_len ||
      inst_.kv().BlocksNeededFresh(r.num_prompt_tokens) > plan_.usable_blocks()) {
    Reject(*l);
    Release(l->spec);
    return;
  }
  // The prompt's ids exist only while the KV manager hashes them (it keeps the hashes and
  // the unfinished last block); the request keeps its recipe.
  workload_->BuildPrompt(l->spec, prompt_buf_);
  inst_.Add(l, prompt_buf_);
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
    const Tick t = f.arrival + cost_.IntakeNanos(f.num_prompt_tokens);
    Announce(std::move(f));
    queue_.Push(t, EventKind::kArrival, static_cast<uint64_t>(fid.value()));
  }
}

void Engine::OffloadDecision(const StepPlan& plan) {
  finished_ptrs_.clear();
  for (SimRequest& r : finished_since_decision_) finished_ptrs_.push_back(&r);
  last_offload_ = offload_->EndDecision(plan, finished_ptrs_);
  finished_since_decision_.clear();
  for (const ConnectorAdmission& a : plan.connector_admitted) {
    if (a.req->num_preemptions > 0) continue;  // a resume: first-admission metrics are set
    RequestRecord& rec = metrics_.record(a.req->id);
    rec.cached_tokens = a.gpu_hit_tokens;
    rec.cpu_cached_tokens = a.external_hit_tokens;
    if (a.external_hit_tokens > 0) rec.load_start = now_;
  }
}

void Engine::DecideInto(StepPlan& plan, StepRecord& record) {
  if (offload_) {
    // Copies that ended by now are reported to this decision; the stores the previous
    // decision planned start as this step runs.
    offload_->ApplyOutput(now_);
    offload_->BeginDecision(now_);
  }
  inst_.Decide(plan);
  if (offload_) {
    OffloadDecision(plan);
    (&plan == &step_ ? step_flush_until_ : next_flush_until_) = offload_->flush_until();
  }
  for (SimRequest* p : plan.preempted) {
    metrics_.Preemption();
    metrics_.record(p->id).preemptions = p->num_preemptions;
    if (trace_) trace_->RequestInstant(p->id, "preempted", now_);
  }
  if (step_log_) RecordDecision(plan, record);
}

void Engine::OnSchedule() {
  if (step_in_flight_) return;
  if (inst_.idle()) {
    if (offload_ && !finished_since_decision_.empty()) {
      // vLLM's engine makes one more decision for the requests that just finished: the
      // tier's last stores start (and, with nothing unfinished, every copy is flushed).
      offload_->ApplyOutput(now_);
      offload_->BeginDecision(now_);
      StepPlan none;
      OffloadDecision(none);
      offload_->BeginDecision(now_);  // the stores just planned start now
    }
    return;
  }
  DecideInto(step_, step_record_);
  if (step_.empty()) {
    const SchedulerState& state = inst_.state();
    if (offload_ && state.running.empty()) {
      // Requests wait for loads (or for stores in flight their lookups met): vLLM's engine
      // keeps stepping with nothing to compute; the next decision that can change anything
      // comes when the next copy ends.
      const Tick next = offload_->NextCompletion();
      if (next >= 0) {
        schedule_pending_ = true;
        queue_.Push(std::max(next, now_ + 1), EventKind::kSchedule);
        return;
      }
    }
    if (SimRequest* head = inst_.RejectStuckHead()) {
      // Nothing runs and the head of the queue still cannot be admitted: it never will be
      // (the cache is as empty as it gets). It is rejected so the run cannot hang.
      const RequestId id = head->id;
      Live& l = LiveOf(*head);
      if (offload_) offload_->RequestFinished(l);
      Reject(l);
      Release(l.spec);
      live_.erase(id);
      RequestSchedule();
      return;
    }
    KVSIM_CHECK_MSG(state.running.empty(), "running requests but an empty step");
    return;
  }
  Launch();
}

void Engine::Launch() {
  cost_.Begin();
  int64_t admitted = 0;
  for (const ScheduledChunk& c : step_.scheduled) {
    cost_.Add(c.num_tokens, c.num_computed_before);
    if (c.new_admission) {
      ++admitted;
      RequestRecord& rec = metrics_.record(c.req->id);
      if (rec.first_scheduled < 0) {
        rec.first_scheduled = now_;
        if (!offload_) rec.cached_tokens = c.hit_tokens;  // with a tier: set at its lookup
        if (trace_) trace_->RequestPhase(c.req->id, "queued", rec.arrival, now_);
      }
    }
  }
  const StepCost cost = cost_.Finish();
  // Async scheduling: this step's CPU part (scheduling, input preparation) ran while the
  // previous step's GPU part did; its GPU part starts once both are done
  // (core/cost_model.h): max(previous GPU start + this CPU part, now). Sync: after its CPU
  // part. Either way it waits for the CPU-tier copies its decision flushed.
  Tick gpu_start = async_ && back_to_back_ ? std::max(now_, prev_gpu_start_ + cost.cpu_ns)
                                           : now_ + cost.cpu_ns;
  gpu_start = std::max(gpu_start, step_flush_until_);
  const Tick dt = std::max<Tick>(1, gpu_start - now_ + cost.gpu_ns);
  prev_gpu_start_ = gpu_start;
  back_to_back_ = false;
  metrics_.Computed(step_.num_scheduled_tokens);
  if (trace_) {
    trace_->Step(now_, now_ + dt, step_.num_scheduled_tokens,
                 static_cast<int64_t>(step_.scheduled.size()), admitted,
                 static_cast<int64_t>(step_.preempted.size()));
  }
  step_record_.t_start_ns = now_;
  step_record_.t_end_ns = now_ + dt;
  step_start_ = now_;
  step_in_flight_ = true;
  queue_.Push(now_ + dt, EventKind::kStepEnd);
  if (async_) {
    // vLLM's async engine decides the next step while this one runs on the GPU: before this
    // step's outputs are applied (its sampled tokens count as in flight).
    DecideInto(next_, next_record_);
    next_decided_ = true;
  }
}

void Engine::OnStepEnd() {
  step_in_flight_ = false;
  const int64_t vocab = workload_->vocab_size();
  // Tokens reach the user after the output processor has handled the step's outputs.
  int64_t emitting = 0;
  for (const ScheduledChunk& c : step_.scheduled) emitting += c.samples ? 1 : 0;
  const Tick seen = now_ + cost_.OutputNanos(emitting);
  finished_buf_.clear();
  const int64_t drafts_before = inst_.drafts_scheduled();
  const int64_t accepted_before = inst_.drafts_accepted();
  inst_.ApplyStepOutputs(
      step_,
      [&](SimRequest& r, const ScheduledChunk&, int64_t gen, std::vector<TokenId>& tokens) {
        Live& l = LiveOf(r);
        for (int64_t k = 0; k < gen; ++k) {
          tokens.push_back(OutputToken(l.spec.output_seed, r.num_output_tokens + k, vocab));
        }
        RequestRecord& rec = metrics_.record(r.id);
        if (rec.first_token < 0) {
          rec.first_token = seen;
          if (trace_) trace_->RequestPhase(r.id, "prefill", rec.first_scheduled, now_);
        }
        metrics_.Emission(l.last_emit, seen);
        l.last_emit = seen;
      },
      finished_buf_);
  metrics_.SpecDrafts(inst_.drafts_scheduled() - drafts_before,
                      inst_.drafts_accepted() - accepted_before);
  const SchedulerState& state = inst_.state();
  metrics_.StepEnd(step_start_, now_, inst_.kv().usage(),
                   static_cast<int64_t>(state.running.size()),
                   static_cast<int64_t>(state.waiting.size()));
  if (trace_ && !metrics_.kv_series().empty() && metrics_.kv_series().back().tick == now_) {
    const KvSample& s = metrics_.kv_series().back();
    trace_->Counters(now_, s.usage, s.running, s.waiting);
  }
  if (step_log_) {
    for (SimRequest* p : finished_buf_) {
      step_record_.finished.push_back(static_cast<int32_t>(p->id.value()));
    }
    if (offload_) {
      // The tier as the step ends (copies count as done from the next decision on).
      step_record_.cpu_blocks_used = offload_->num_cpu_blocks_used();
      step_record_.cpu_blocks_ready = offload_->num_cpu_blocks_ready();
    }
    (*step_log_)(step_record_);
  }
  if (offload_) {
    for (SimRequest* p : finished_buf_) {
      offload_->RequestFinished(*p);  // before its blocks are freed
      finished_since_decision_.push_back(*p);
      finished_since_decision_.back().kv_handle = kNoRequestHandle;
    }
    metrics_.CpuTierSample(
        offload_->connector().tier().num_blocks() > 0
            ? static_cast<double>(offload_->num_cpu_blocks_used()) /
                  static_cast<double>(offload_->connector().tier().num_blocks())
            : 0.0);
  }
  inst_.ReleaseFinished(finished_buf_);
  for (SimRequest* p : finished_buf_) Finish(LiveOf(*p));
  step_.scheduled.clear();
  step_.preempted.clear();
  if (next_decided_) {
    next_decided_ = false;
    std::swap(step_, next_);
    std::swap(step_record_, next_record_);
    std::swap(step_flush_until_, next_flush_until_);
    if (!step_.empty()) {
      back_to_back_ = true;  // decided while the previous step ran
      Launch();
      return;
    }
    // An empty decision (every running request had its final token in flight): nothing runs;
    // the next decision sees this step's outputs.
    if (step_log_) {
      step_record_.t_start_ns = step_record_.t_end_ns = now_;
      (*step_log_)(step_record_);
    }
  }
  RequestSchedule();
}

void Engine::RecordDecision(const StepPlan& plan, StepRecord& rec) {
  rec = StepRecord{};
  rec.step = step_index_++;
  for (const ScheduledChunk& c : plan.scheduled) {
    const auto id = static_cast<int32_t>(c.req->id.value());
    rec.scheduled.push_back(
        {id, c.num_tokens, c.num_computed_before, c.new_admission ? c.hit_tokens : -1});
    if (c.new_admission) (c.resumed ? rec.resumed : rec.admitted_new).push_back(id);
  }
  for (SimRequest* p : plan.preempted) rec.preempted.push_back(static_cast<int32_t>(p->id.value()));
  rec.num_free_blocks = inst_.kv().num_free_blocks();
  rec.running = static_cast<int64_t>(inst_.state().running.size());
  rec.waiting = static_cast<int64_t>(inst_.state().waiting.size());
  rec.num_scheduled_tokens = plan.num_scheduled_tokens;
  if (offload_) RecordOffloadDecision(plan, inst_.state(), last_offload_, rec);
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
  const int64_t total = plan_.total_bytes();
  const int64_t pad = static_cast<int64_t>(plan_.padding_fraction() * static_cast<double>(total));
  return metrics_.Summarize(now_, total, pad);
}

}  // namespace kvsim
