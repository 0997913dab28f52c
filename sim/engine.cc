#include "sim/engine.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "sim/instance_builder.h"

namespace kvsim {

Result<std::unique_ptr<Engine>> Engine::Create(const Scenario& sc) {
  // The scenario is read top-down: its plan, its workload and the engine's own settings, then
  // one instance per DP rank is built from it (sim/instance_builder.h), and nothing is read
  // from the scenario after that.
  auto plan = sc.Plan();
  if (!plan.ok()) return plan.status();
  std::string note;
  auto wl = MakeWorkload(sc.sim.workload, sc.seed, &note);
  if (!wl.ok()) return wl.status();
  std::unique_ptr<Engine> e(new Engine(sc, std::move(wl.value())));
  e->workload_note_ = note;
  // Every DP rank is the same instance with its own acceptance stream (rank 0's is the one a
  // single engine has always had).
  const int64_t dp = DpRanks(sc);
  std::vector<Rng> accept;
  for (int64_t r = 0; r < dp; ++r)
    accept.push_back(Rng(sc.seed).Fork(0x5bec + static_cast<uint64_t>(r) * 0x10000));
  std::vector<InstanceConfig> ranks;
  for (int64_t r = 0; r < dp; ++r) {
    auto config = BuildInstanceConfig(sc, plan.value(), InstanceRole::kColocated,
                                      accept[static_cast<size_t>(r)]);
    if (!config.ok()) return config.status();
    ranks.push_back(std::move(config.value()));
  }
  e->AddRanks(std::move(ranks));
  return e;
}

Engine::Engine(const Scenario& sc, std::unique_ptr<IWorkload> workload)
    : sc_(sc), metrics_(static_cast<Tick>(sc_.sim.metrics.kv_sample_interval_ms * kTicksPerMs)) {
  sc_.tree = ConfigNode();  // the parsed structs are all the engine needs
  workload_desc_ = workload->Describe();
  loop_ = std::make_unique<ServingLoop>(std::move(workload), StopTick(sc_.sim.run.max_sim_seconds));
  loop_->SetDeployment(this);
  // An MoE model's DP ranks step together (vLLM's DPEngineCoreProc); a dense model's are
  // independent engines. Only the former publish their request counts to the balancer.
  moe_ = sc_.model.compute.num_experts > 0 ||
         (sc_.model.compute.num_active_params > 0 &&
          sc_.model.compute.num_active_params < sc_.model.compute.num_params);
}

void Engine::AddRanks(std::vector<InstanceConfig> ranks) {
  const size_t n = ranks.size();
  std::vector<std::string> tags(n);
  if (n > 1) {
    for (size_t r = 0; r < n; ++r) tags[r] = "dp " + std::to_string(r);
  }
  loop_->AddPool(std::move(ranks), std::move(tags), moe_, moe_ ? 100 * kTicksPerMs : 0);
}

void Engine::SetStepLog(const StepRecordSink* sink) { loop_->SetStepLog(sink); }

Engine::~Engine() = default;

void Engine::Run() {
  loop_->Run();
  PrefixCacheStats st;
  int64_t loaded = 0, stored = 0;
  for (int r = 0; r < loop_->num_instances(); ++r) {
    const InstanceCore& c = loop_->core(r);
    const PrefixCacheStats& s = c.inst().kv().stats();
    st.requests += s.requests;
    st.query_tokens += s.query_tokens;
    st.hit_tokens += s.hit_tokens;
    if (const OffloadDriver* off = c.offload()) {
      loaded += off->blocks_loaded() * c.offload_block_bytes();
      stored += off->blocks_stored() * c.offload_block_bytes();
    }
  }
  metrics_.Lookups(st.requests, st.query_tokens, st.hit_tokens);
  if (offload()) metrics_.OffloadBytes(loaded, stored);
}

void Engine::Arrived(RequestId id) {
  const RequestSpec& spec = loop_->spec(id);
  const Tick now = loop_->now();
  RequestRecord& rec = metrics_.Arrive(id);
  rec.group = spec.group;
  rec.turn = spec.turn;
  rec.arrival = spec.arrival;
  rec.prompt_tokens = spec.num_prompt_tokens;
  const int64_t n = spec.num_prompt_tokens;
  if (!loop_->PromptFits(0, n)) {
    Reject(id);
    return;
  }
  auto owned = std::make_unique<LiveRequest>();
  LiveRequest* l = owned.get();
  l->spec = &spec;
  l->id = id;
  l->arrival_tick = now;
  l->num_prompt_tokens = n;
  l->max_output_tokens = std::max<int64_t>(1, spec.max_output_tokens);
  // The prompt's ids exist only while the KV manager hashes them (it keeps the hashes and
  // the unfinished last block); the request keeps its recipe.
  const std::vector<TokenId>& prompt = loop_->PromptOf(spec);
  loop_->Admit(loop_->PickInstance(0), l, prompt);
  live_.emplace(id, std::move(owned));
  loop_->RequestSchedule(l->instance);
}

void Engine::Reject(RequestId id) {
  metrics_.record(id).rejected = true;
  // A rejected request still ends its session/tree branch.
  loop_->End(id, 0);
}

void Engine::Dropped(int, SimRequest* head) {
  const RequestId id = head->id;
  Reject(id);
  live_.erase(id);
}

void Engine::StepOutputs(int i, const std::vector<SimRequest*>& finished) {
  if (const OffloadDriver* off = loop_->core(i).offload()) {
    // The tier once the finished requests' last stores are known.
    const int64_t cpu_blocks = off->connector().tier().num_blocks();
    metrics_.CpuTierSample(cpu_blocks > 0 ? static_cast<double>(off->num_cpu_blocks_used()) /
                                                static_cast<double>(cpu_blocks)
                                          : 0.0);
  }
  for (SimRequest* p : finished) Finish(LiveOf(*p));
}

void Engine::RequestEvent(EventKind kind, RequestId) {
  KVSIM_CHECK_MSG(false, "a P/D transfer event in a single engine");
  (void)kind;
}

void Engine::Preempted(int, SimRequest& r, Tick now) {
  metrics_.Preemption();
  metrics_.record(r.id).preemptions = r.num_preemptions;
  if (trace_) trace_->RequestInstant(r.id, "preempted", now);
}

void Engine::ConnectorAdmitted(int, const ConnectorAdmission& a, Tick now) {
  if (a.req->num_preemptions > 0) return;  // a resume: first-admission metrics are set
  RequestRecord& rec = metrics_.record(a.req->id);
  rec.cached_tokens = a.gpu_hit_tokens;
  rec.cpu_cached_tokens = a.external_hit_tokens;
  if (a.external_hit_tokens > 0) rec.load_start = now;
}

void Engine::StepLaunched(int, const StepPlan& step, Tick start, Tick end) {
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

void Engine::Emitted(int, LiveRequest& l, Tick seen) {
  RequestRecord& rec = metrics_.record(l.id);
  if (rec.first_token < 0) {
    rec.first_token = seen;
    if (trace_) trace_->RequestPhase(l.id, "prefill", rec.first_scheduled, loop_->now());
  }
  metrics_.Emission(l.last_emit, seen);
  l.last_emit = seen;
}

void Engine::StepEnded(int, Tick start, Tick now, const EngineInstance&, int64_t drafts,
                       int64_t accepted) {
  metrics_.SpecDrafts(drafts, accepted);
  // With DP ranks: the pools' mean usage (equal pools) and the ranks' queues together.
  double usage = 0;
  int64_t running = 0, waiting = 0;
  const int n = loop_->num_instances();
  for (int r = 0; r < n; ++r) {
    const EngineInstance& inst = loop_->core(r).inst();
    usage += inst.kv().usage();
    running += static_cast<int64_t>(inst.state().running.size());
    waiting += static_cast<int64_t>(inst.state().waiting.size());
  }
  if (n > 1) usage /= static_cast<double>(n);
  metrics_.StepEnd(start, now, usage, running, waiting);
  if (trace_ && !metrics_.kv_series().empty() && metrics_.kv_series().back().tick == now) {
    const KvSample& s = metrics_.kv_series().back();
    trace_->Counters(now, s.usage, s.running, s.waiting);
  }
}

void Engine::Finish(LiveRequest& l) {
  const RequestId id = l.id;
  RequestRecord& rec = metrics_.record(id);
  rec.finish = l.last_emit;
  rec.output_tokens = l.num_output_tokens;
  rec.preemptions = l.num_preemptions;
  if (trace_) trace_->RequestPhase(id, "decode", rec.first_token, loop_->now());
  loop_->End(id, l.num_output_tokens);
  live_.erase(id);
}

RunSummary Engine::Summary() const {
  const int64_t total = plan().total_bytes() * num_ranks();
  const int64_t pad = static_cast<int64_t>(plan().padding_fraction() * static_cast<double>(total));
  std::vector<InstanceUsage> usage;
  for (int r = 0; r < num_ranks(); ++r) usage.push_back(loop_->usage(r));
  RunSummary s = metrics_.Summarize(loop_->now(), total, pad, usage);
  if (num_ranks() > 1) {
    for (int r = 0; r < num_ranks(); ++r) s.ranks.push_back(loop_->Summarize(r, s.makespan_ticks));
  }
  return s;
}

}  // namespace kvsim
