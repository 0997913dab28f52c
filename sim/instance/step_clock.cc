#include "sim/instance/step_clock.h"

#include <algorithm>
#include <deque>
#include <numeric>
#include <string>

#include <fmt/format.h>

#include "core/int_math.h"
#include "core/vllm_semantics.h"
#include "sim/instance/instance_core.h"

namespace kvsim {
namespace {

// What the step clock hears of the instance's step: the per-request summary, and the ids of
// the sampled tokens (1000000 + the step that sampled them).
class ClockObserver final : public InstanceObserver {
 public:
  explicit ClockObserver(StepClockSummary& summary) : summary_(summary) {}

  void Preempted(SimRequest& r, Tick) override {
    ++At(r).num_preemptions;
    ++summary_.total_preemptions;
  }
  void ConnectorAdmitted(const ConnectorAdmission& a, Tick) override {
    StepRequestSummary& s = At(*a.req);
    if (a.req->num_preemptions > 0) {
      s.resume_gpu_hit_tokens.push_back(a.gpu_hit_tokens);
      s.resume_cpu_hit_tokens.push_back(a.external_hit_tokens);
    } else {
      s.gpu_hit_tokens = a.gpu_hit_tokens;
      s.cpu_hit_tokens = a.external_hit_tokens;
    }
  }
  void StepLaunched(const StepPlan& step, Tick, Tick) override {
    for (const ScheduledChunk& c : step.scheduled) {
      if (!c.new_admission) continue;
      StepRequestSummary& s = At(*c.req);
      if (c.resumed) {
        s.resume_hit_tokens.push_back(c.hit_tokens);
      } else {
        s.hit_tokens = c.hit_tokens;
      }
    }
  }
  // On the unit clock `step` is the tick that sampled the token.
  void Tokens(SimRequest& r, int64_t, std::vector<TokenId>& tokens, Tick step) override {
    StepRequestSummary& s = At(r);
    if (s.first_token_step < 0) s.first_token_step = step;
    tokens.push_back(static_cast<TokenId>(kFirstGeneratedTokenId + step));
  }
  void StepEnded(Tick, Tick, const EngineInstance&, int64_t, int64_t) override {}

 private:
  StepRequestSummary& At(const SimRequest& r) {
    return summary_.per_request[static_cast<size_t>(r.id.value())];
  }
  StepClockSummary& summary_;
};

// The instance a StepClockConfig describes, on the unit clock.
InstanceConfig UnitClockInstance(const StepClockConfig& config) {
  InstanceConfig c;
  c.kv = config.kv;
  c.params = config.sched;
  c.watermark_blocks = config.watermark_blocks;
  c.offload = config.offload;
  c.unit_clock = true;
  c.xfer_timing = config.xfer_timing;
  if (c.offload) {
    c.params.reserve_for_inflight_prefills = c.offload->semantics == VllmSemantics::kLatest;
  }
  return c;
}

// "FILE:LINE: " of a request read from config.source, or "".
std::string Where(const StepClockConfig& config, const StepRequest* req) {
  return req && req->line > 0 && !config.source.empty()
             ? fmt::format("{}:{}: ", config.source, req->line)
             : std::string();
}

// Why the head of WAITING (the one the waiting pass considers first) can never be scheduled,
// naming its line in config.source.
// The tokens of one block of the first KV group, as the messages below report it (0: no
// group).
int64_t FirstBlockSize(const StepClockConfig& config) {
  return config.kv.groups.empty() ? 0 : config.kv.groups[0].block_size;
}

Status NeverScheduled(const std::vector<StepRequest>& requests, const StepClockConfig& config,
                      const EngineInstance& inst, int64_t step) {
  const std::deque<SimRequest*>* queue = inst.state().NextWaitingQueue(config.sched.policy);
  const SimRequest* head = queue != nullptr ? queue->front() : nullptr;
  const StepRequest* req = head ? &requests[static_cast<size_t>(head->id.value())] : nullptr;
  const int64_t block = FirstBlockSize(config);
  const int64_t tokens = head ? head->num_tokens : 0;
  // Blocks held while nothing runs belong to requests waiting behind the head (loaded from
  // the CPU tier, not yet promoted): the head can never get them back.
  const int64_t held = config.kv.num_blocks - 1 - inst.kv().num_free_blocks();
  return Status::Error(
      "never_scheduled",
      fmt::format("{}request '{}' can never be scheduled (at step {}: {} tokens need {} "
                  "blocks of {} tokens; {} usable blocks{}, token budget {})",
                  Where(config, req), req ? req->id : "?", step, tokens,
                  block > 0 ? CeilDiv(tokens, block) : 0, block, config.kv.num_blocks - 1,
                  held > 0 ? fmt::format(" of which {} held by requests waiting behind it", held)
                           : std::string(),
                  config.sched.max_num_batched_tokens));
}

// A run that goes on past any bound a run that ends can reach is in a cycle vLLM repeats too:
// a request that cannot hold its context is preempted by itself and recomputed, or a request
// whose whole (one-block) prompt comes from the CPU tier is left 0 computed tokens by the
// load's "recompute the last token" rule, and so is looked up and loaded again. Names the
// unfinished request preempted most (the earliest on a tie).
Status NoProgress(const std::vector<StepRequest>& requests, const StepClockConfig& config,
                  const std::vector<SimRequest>& sim, int64_t steps) {
  const SimRequest* worst = nullptr;
  for (const SimRequest& r : sim) {
    if (r.status == RequestStatus::kFinished || r.status == RequestStatus::kFinishedPreempted)
      continue;
    if (worst == nullptr || r.num_preemptions > worst->num_preemptions ||
        (r.num_preemptions == worst->num_preemptions && r.arrival_tick < worst->arrival_tick))
      worst = &r;
  }
  if (worst == nullptr) worst = &sim[0];
  const StepRequest& req = requests[static_cast<size_t>(worst->id.value())];
  return Status::Error(
      "no_progress",
      fmt::format("{}no end after {} steps: request '{}' is unfinished after {} preemptions "
                  "({} tokens known; {} usable blocks of {} tokens, token budget {}). It is in "
                  "a cycle vLLM would repeat too: preempted by itself over and over, or a "
                  "prompt loaded whole from the CPU tier and looked up again",
                  Where(config, &req), steps, req.id, worst->num_preemptions, worst->num_tokens,
                  config.kv.num_blocks - 1, FirstBlockSize(config),
                  config.sched.max_num_batched_tokens));
}

}  // namespace

Result<StepClockSummary> RunStepClock(const std::vector<StepRequest>& requests,
                                      const StepClockConfig& config, const StepRecordSink& sink) {
  if (Status s = config.kv.Validate(); !s.ok()) return s;
  if (config.offload) {
    if (Status s = config.offload->Validate(); !s.ok()) return s;
  }
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
  InstanceCore core(UnitClockInstance(config));
  StepClockSummary summary;
  summary.has_offload = core.offload() != nullptr;
  summary.per_request.resize(n);
  ClockObserver obs(summary);
  int64_t unfinished = 0;
  const StepRecordSink records = [&](const StepRecord& record) {
    ++summary.steps;
    summary.last_step = record.step;
    for (int32_t id : record.finished) {
      summary.per_request[static_cast<size_t>(id)].finish_step = record.step;
      --unfinished;
    }
    if (config.observer) config.observer(record, core.inst().kv(), core.offload());
    if (sink) sink(record);
  };
  core.SetStepLog(&records);

  std::vector<SimRequest*> finished;
  size_t next = 0;
  int64_t step = 0;
  // A bound on the records of a run that ends: each step computes at least one token or waits
  // on a copy that ends within two steps; every token computed up to 64 times over
  // (preemptions recompute), plus empty steps around arrivals and copies.
  int64_t total_tokens = 0;
  for (const StepRequest& r : requests)
    total_tokens += static_cast<int64_t>(r.tokens.size()) + r.max_tokens;
  const int64_t max_records = 64 * total_tokens + 4 * static_cast<int64_t>(n) + 1024;
  while (true) {
    if (unfinished == 0) {
      const bool more = next < n;
      const int64_t arrival = more ? requests[static_cast<size_t>(order[next])].arrival_step : step;
      if (!more || arrival > step) {
        // The engine runs out of requests before the next arrival (or for good): it drains
        // and makes its flush decision, so a later arrival's decision never precedes either.
        core.UnitIdle(step, obs, finished);
        if (!more) break;
        step = arrival;
      }
    }
    while (next < n && requests[static_cast<size_t>(order[next])].arrival_step <= step) {
      const auto i = static_cast<size_t>(order[next]);
      core.inst().Add(&sim[i], requests[i].tokens);
      if (OffloadDriver* tier = core.mutable_offload()) tier->RequestAdded(sim[i]);
      ++unfinished;
      ++next;
    }
    if (summary.steps >= config.max_steps) {
      return Status::Error("stuck", fmt::format("more than {} steps", config.max_steps));
    }
    if (summary.steps > max_records) return NoProgress(requests, config, sim, summary.steps);
    finished.clear();
    if (!core.UnitStep(step, obs, finished) && next == n && unfinished > 0) {
      // Nothing ran, nothing is in flight and nothing else will arrive: the head of WAITING
      // can never be admitted (vLLM would spin forever).
      return NeverScheduled(requests, config, core.inst(), step);
    }
    ++step;
  }
  return summary;
}

}  // namespace kvsim
