#include "sim/instance/step_clock.h"

#include <algorithm>
#include <memory>
#include <numeric>

#include <fmt/format.h>

#include "core/check.h"
#include "core/vllm_semantics.h"
#include "sim/instance/engine_instance.h"

namespace kvsim {

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

Result<StepClockSummary> RunStepClock(const std::vector<StepRequest>& requests,
                                      const StepClockConfig& config, const StepRecordSink& sink) {
  if (Status s = config.kv.Validate(); !s.ok()) return s;
  const size_t n = requests.size();
  // Arrival order: stable by arrival_step, file order within a step; its index is the
  // request's arrival_time (the PRIORITY tie-break).
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return requests[static_cast<size_t>(a)].arrival_step <
           requests[static_cast<size_t>(b)].arrival_step;
  });
  std::vector<SimRequest> sim(n);
  for (size_t k = 0; k < n; ++k) {
    const auto i = static_cast<size_t>(order[k]);
    sim[i].id = RequestId{static_cast<int64_t>(i)};
    sim[i].arrival_tick = static_cast<int64_t>(k);
    sim[i].priority = requests[i].priority;
    sim[i].max_output_tokens = requests[i].max_tokens;
  }
  const bool async = config.sched.async_scheduling;
  SchedulerParams sched = config.sched;
  if (config.offload) {
    if (Status s = config.offload->Validate(); !s.ok()) return s;
    sched.reserve_for_inflight_prefills = config.offload->semantics == VllmSemantics::kLatest;
  }
  EngineInstance inst(config.kv, sched);
  inst.set_watermark_blocks(config.watermark_blocks);
  std::unique_ptr<OffloadDriver> offload;
  if (config.offload) {
    offload = std::make_unique<OffloadDriver>(*config.offload, &inst.kv(), config.xfer_timing);
    inst.set_connector(offload.get());
  }
  StepClockSummary summary;
  summary.has_offload = offload != nullptr;
  summary.per_request.resize(n);
  std::vector<SimRequest*> finished_since_decision;  // for the tier's store visit (latest)

  struct Pending {
    StepRecord record;
    StepPlan plan;
  };
  auto pending = std::make_unique<Pending>();  // async: the step whose outputs are in flight
  bool have_pending = false;
  StepPlan plan;
  std::vector<SimRequest*> finished;
  int64_t unfinished = 0;
  size_t next = 0;
  int64_t step = 0;

  // Applies the outputs of the step `record`/`p` describes and completes its record.
  auto apply = [&](StepRecord& record, const StepPlan& p) {
    finished.clear();
    const TokenId token = static_cast<TokenId>(kFirstGeneratedTokenId + record.step);
    inst.ApplyTokens(
        p,
        [&](SimRequest& r, const ScheduledChunk&, std::vector<TokenId>& out) {
          StepRequestSummary& s = summary.per_request[static_cast<size_t>(r.id.value())];
          if (s.first_token_step < 0) s.first_token_step = record.step;
          out.push_back(token);
        },
        finished);
    for (SimRequest* r : finished) {
      record.finished.push_back(static_cast<int32_t>(r->id.value()));
      summary.per_request[static_cast<size_t>(r->id.value())].finish_step = record.step;
      --unfinished;
      if (offload) {
        offload->RequestFinished(*r);  // before its blocks are freed
        finished_since_decision.push_back(r);
      }
    }
    inst.ReleaseFinished(finished);
    if (offload) {
      offload->ApplyOutput(record.step);
      record.cpu_blocks_used = offload->num_cpu_blocks_used();
      record.cpu_blocks_ready = offload->num_cpu_blocks_ready();
    }
  };
  // One decision of the tier's side: stores planned, flushes, what started.
  auto offload_decision = [&](const StepPlan& p, StepRecord* record) {
    OffloadStepRecord o = offload->EndDecision(p, finished_since_decision);
    finished_since_decision.clear();
    if (record == nullptr) return;
    RecordOffloadDecision(p, inst.state(), o, *record);
    for (const ConnectorAdmission& a : p.connector_admitted) {
      const auto id = static_cast<int32_t>(a.req->id.value());
      StepRequestSummary& s = summary.per_request[static_cast<size_t>(id)];
      if (a.req->num_preemptions > 0) {
        s.resume_gpu_hit_tokens.push_back(a.gpu_hit_tokens);
        s.resume_cpu_hit_tokens.push_back(a.external_hit_tokens);
      } else {
        s.gpu_hit_tokens = a.gpu_hit_tokens;
        s.cpu_hit_tokens = a.external_hit_tokens;
      }
    }
  };
  auto emit = [&](const StepRecord& record) {
    ++summary.steps;
    summary.last_step = record.step;
    if (config.observer) config.observer(record, inst.kv(), offload.get());
    if (sink) sink(record);
  };

  while (true) {
    if (unfinished == 0) {
      const bool more = next < n;
      const int64_t arrival = more ? requests[static_cast<size_t>(order[next])].arrival_step : step;
      if (!more || arrival > step) {
        // The engine runs out of requests before the next arrival (or for good). Async: the
        // step still in flight (empty: every request had its final token in flight) has its
        // outputs applied and its record completed first. Then the engine makes one more
        // decision for the requests that just finished (they are still in finished_req_ids;
        // no record; with nothing tracked left unfinished the connector flushes every copy,
        // and latest plans the finished requests' last stores), and only then waits for the
        // next request. So the empty step's record does not count the flush decision's stores,
        // and a later arrival's decision never precedes either (docs/step-log.md, "A finished
        // request's last stores, empty steps and idle gaps").
        if (async && have_pending) {
          apply(pending->record, pending->plan);
          emit(pending->record);
          have_pending = false;
        }
        const bool flush = offload && (offload->busy() || !finished_since_decision.empty());
        if (flush) {
          offload->BeginDecision(step);
          inst.Decide(plan);
          offload_decision(plan, nullptr);
          offload->ApplyOutput(step);
        }
        if (!more) break;
        step = arrival;
      }
    }
    while (next < n && requests[static_cast<size_t>(order[next])].arrival_step <= step) {
      const auto i = static_cast<size_t>(order[next]);
      inst.Add(&sim[i], requests[i].tokens);
      if (offload) offload->RequestAdded(sim[i]);
      ++unfinished;
      ++next;
    }
    if (summary.steps >= config.max_steps) {
      return Status::Error("stuck", fmt::format("more than {} steps", config.max_steps));
    }

    if (offload) offload->BeginDecision(step);
    inst.Decide(plan);
    StepRecord record;
    record.step = step;
    for (const ScheduledChunk& c : plan.scheduled) {
      const auto id = static_cast<int32_t>(c.req->id.value());
      StepRecord::Chunk ch{id, c.num_tokens, c.num_computed_before, -1};
      if (c.new_admission) {
        ch.hit = c.hit_tokens;
        StepRequestSummary& s = summary.per_request[static_cast<size_t>(id)];
        if (c.resumed) {
          record.resumed.push_back(id);
          s.resume_hit_tokens.push_back(c.hit_tokens);
        } else {
          record.admitted_new.push_back(id);
          s.hit_tokens = c.hit_tokens;
        }
      }
      record.scheduled.push_back(ch);
    }
    for (SimRequest* p : plan.preempted) {
      record.preempted.push_back(static_cast<int32_t>(p->id.value()));
      ++summary.per_request[static_cast<size_t>(p->id.value())].num_preemptions;
      ++summary.total_preemptions;
    }
    record.num_free_blocks = inst.kv().num_free_blocks();
    record.running = static_cast<int64_t>(inst.state().running.size());
    record.waiting = inst.state().num_waiting();
    record.num_scheduled_tokens = plan.num_scheduled_tokens;
    if (offload) offload_decision(plan, &record);

    bool in_flight = false;
    if (async) {
      if (have_pending) {
        for (const ScheduledChunk& c : pending->plan.scheduled) in_flight |= c.samples;
        apply(pending->record, pending->plan);
        emit(pending->record);
      }
      pending->record = std::move(record);
      std::swap(pending->plan, plan);
      have_pending = true;
    } else {
      apply(record, plan);
      emit(record);
    }
    const StepPlan& decided = async ? pending->plan : plan;
    bool decided_samples = false;
    for (const ScheduledChunk& c : decided.scheduled) decided_samples |= c.samples;
    const bool tier_pending = offload && (offload->busy() || !decided.connector_admitted.empty() ||
                                          offload->completed_last_output() > 0);
    if (decided.scheduled.empty() && decided.preempted.empty() && !in_flight &&
        !decided_samples && !tier_pending && next == n && unfinished > 0) {
      // Nothing ran, nothing is in flight and nothing else will arrive: the head of WAITING
      // can never be admitted (vLLM would spin forever).
      const auto& st = inst.state();
      const SimRequest* head = !st.skipped_waiting.empty() ? st.skipped_waiting.front()
                               : st.waiting.empty()        ? nullptr
                                                           : st.waiting.front();
      const StepRequest* req = head ? &requests[static_cast<size_t>(head->id.value())] : nullptr;
      const int64_t block = config.kv.groups.empty() ? 0 : config.kv.groups[0].block_size;
      const int64_t tokens = head ? head->num_tokens : 0;
      return Status::Error(
          "never_scheduled",
          fmt::format("{}request '{}' can never be scheduled (at step {}: {} tokens need {} "
                      "blocks of {} tokens; {} usable blocks, token budget {})",
                      req && req->line > 0 && !config.source.empty()
                          ? fmt::format("{}:{}: ", config.source, req->line)
                          : std::string(),
                      req ? req->id : "?", step, tokens, block > 0 ? (tokens + block - 1) / block : 0,
                      block, config.kv.num_blocks - 1, config.sched.max_num_batched_tokens));
    }
    ++step;
  }
  if (async && have_pending) {
    apply(pending->record, pending->plan);
    emit(pending->record);
  }
  return summary;
}

}  // namespace kvsim
