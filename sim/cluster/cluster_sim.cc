#include "sim/cluster/cluster_sim.h"

#include <fmt/format.h>
#include <algorithm>

#include "core/cost_model.h"
#include "core/kv_cache_manager.h"
#include "sim/instance/engine_instance.h"
#include "sim/instance/instance_core.h"
#include "sim/instance_builder.h"
#include "sim/scheduler/scheduler.h"
#include "sim/strong_id_format.h"
#include "sim/workload/rng.h"

namespace kvsim {

namespace {

// Trace processes: 1 the network, 2 the requests (TraceRecorder's), 3.. the instances.
constexpr int kNetworkPid = 1;
int InstancePid(InstanceId i) { return 3 + i.value(); }

}  // namespace

Result<std::unique_ptr<ClusterSim>> ClusterSim::Create(const Scenario& sc) {
  std::string note;
  auto wl = MakeWorkload(sc.sim.workload, sc.seed, &note);
  if (!wl.ok()) return wl.status();
  return Create(sc, std::move(wl.value()));
}

Result<std::unique_ptr<ClusterSim>> ClusterSim::Create(const Scenario& sc,
                                                       std::unique_ptr<IWorkload> workload) {
  std::unique_ptr<ClusterSim> sim(new ClusterSim(sc, std::move(workload)));
  if (Status s = sim->Init(); !s.ok()) return s;
  return sim;
}

ClusterSim::ClusterSim(const Scenario& sc, std::unique_ptr<IWorkload> workload)
    : sc_(sc) {
  workload_desc_ = workload->Describe();
  loop_ = std::make_unique<ServingLoop>(std::move(workload), StopTick(sc_.sim.run.max_sim_seconds));
  loop_->SetDeployment(this);
  loop_->SetExternalClock(this);
}

ClusterSim::~ClusterSim() = default;

Status ClusterSim::Init() {
  // The scenario top-down: the cluster's setup (plans, topology, transfer plan), then each
  // pool's instances (sim/instance_builder.h) and the routers.
  auto setup = BuildClusterSetup(sc_);
  if (!setup.ok()) return setup.status();
  setup_ = std::move(setup.value());
  sc_.tree = ConfigNode();  // the parsed structs (and each pool's own scenario) are all it needs
  const ClusterConfig& cc = sc_.cluster;
  transfers_ = std::make_unique<PdTransfers>(setup_, cc.transfer.time,
                                             cc.transfer.flow_rate_cap_gbytes_per_s);
  // Each instance has its own draft acceptance stream.
  auto build = [&](const Scenario& pool, const KvCachePlan& plan, InstanceRole role, int64_t count,
                   const char* where) -> Status {
    std::vector<InstanceConfig> configs;
    std::vector<std::string> tags;
    for (int local = 0; local < static_cast<int>(count); ++local) {
      const uint64_t fork =
          0x5bec00 + static_cast<uint64_t>(local) + (role == InstanceRole::kPrefill ? 0 : 0x1000);
      auto config = BuildInstanceConfig(pool, plan, role, Rng(sc_.seed).Fork(fork));
      if (!config.ok()) {
        return Status::Error(config.status().code(),
                             std::string(where) + ": " + config.status().message());
      }
      configs.push_back(std::move(config.value()));
      tags.push_back(fmt::format("{} {}", InstanceRoleName(role), local));
    }
    const int first = loop_->num_instances();
    // Each pool's instances step independently; the cluster's routers place the requests.
    loop_->AddPool(std::move(configs), std::move(tags), /*lock_step=*/false, 0);
    for (int k = 0; first + k < loop_->num_instances(); ++k) {
      inst_.push_back(std::make_unique<Instance>(loop_->core(first + k), k));
    }
    return Status::Ok();
  };
  num_prefill_ = static_cast<int>(cc.prefill.count);
  if (Status s = build(*cc.prefill.scenario, setup_.prefill_plan, InstanceRole::kPrefill,
                       cc.prefill.count, "cluster.prefill");
      !s.ok())
    return s;
  if (Status s = build(*cc.decode.scenario, setup_.decode_plan, InstanceRole::kDecode,
                       cc.decode.count, "cluster.decode");
      !s.ok())
    return s;
  hash_block_ = cc.router.hash_block_tokens > 0
                    ? cc.router.hash_block_tokens
                    : inst_[0]->core.inst().kv().config().scheduler_block_size();
  auto pr = MakeRouter(cc.router.prefill, num_prefill_, cc.router.prefix_capacity_blocks,
                       cc.router.max_imbalance_tokens);
  if (!pr.ok()) return pr.status();
  auto dr = MakeRouter(cc.router.decode, static_cast<int>(cc.decode.count),
                       cc.router.prefix_capacity_blocks, cc.router.max_imbalance_tokens);
  if (!dr.ok()) return dr.status();
  prefill_router_ = std::move(pr.value());
  decode_router_ = std::move(dr.value());
  return Status::Ok();
}

int ClusterSim::Route(Router& router, const std::vector<TokenId>& prompt, bool prefill) const {
  std::vector<BlockHash> hashes;
  if (router.reads_hashes()) HashFullBlocks(kNoneHash, prompt, hash_block_, hashes);
  return router.Route(hashes, router.reads_loads() ? Loads(prefill) : std::vector<InstanceLoad>{});
}

std::vector<InstanceLoad> ClusterSim::Loads(bool prefill) const {
  std::vector<InstanceLoad> out;
  for (const auto& ip : inst_) {
    const Instance& in = *ip;
    if (in.prefill() != prefill) continue;
    InstanceLoad l;
    if (prefill) {
      // Prompt tokens still to compute, over the scheduler's queues: every unfinished request
      // is in exactly one of them (finished prompts, held for their transfer, are in none).
      // Walking the queues, not the instance's map of live requests, keeps routing cheap.
      const SchedulerState& st = in.state();
      auto add = [&](const SimRequest* r) {
        l.waiting_tokens += r->num_prompt_tokens - r->num_computed_tokens;
      };
      for (const SimRequest* r : st.running) add(r);
      for (const SimRequest* r : st.waiting) add(r);
      for (const SimRequest* r : st.skipped_waiting) add(r);
      l.running = static_cast<int64_t>(in.state().running.size());
    } else {
      l.waiting_tokens = in.inbound_tokens;
      l.running = static_cast<int64_t>(in.state().running.size() + in.state().waiting.size()) +
                  in.core.inst().num_incoming_reserved() + in.core.inst().num_incoming_waiting();
    }
    out.push_back(l);
  }
  return out;
}

void ClusterSim::Run() {
  loop_->Run();
  if (trace_) TraceRequests();
}

std::optional<Tick> ClusterSim::NextCompletion() const { return transfers_->NextCompletion(); }

void ClusterSim::AdvanceTo(Tick now) { transfers_->AdvanceTo(now); }

void ClusterSim::Fire() {
  for (int64_t f : transfers_->Finished()) OnWireEnd(transfers_->Deliver(f));
}

void ClusterSim::RequestEvent(EventKind kind, RequestId id) {
  if (kind == EventKind::kWireStart) {
    OnWireStart(id);
  } else {
    KVSIM_CHECK(kind == EventKind::kKvReady);
    OnKvReady(id);
  }
}

void ClusterSim::Dropped(int i, SimRequest* head) {
  const RequestId id = head->id;
  inst_[static_cast<size_t>(i)]->live.erase(id);
  Reject(id);
}

void ClusterSim::ConnectorAdmitted(int i, const ConnectorAdmission& a, Tick) {
  if (a.req->num_preemptions == 0)
    inst_[static_cast<size_t>(i)]->cpu_hit_tokens += a.external_hit_tokens;
}

void ClusterSim::StepEnded(int, Tick, Tick, const EngineInstance&, int64_t, int64_t) {}

void ClusterSim::StepLaunched(int i, const StepPlan& step, Tick start, Tick) {
  Instance& in = *inst_[static_cast<size_t>(i)];
  in.step_tokens = 0;
  in.step_admitted = 0;
  in.step_preempted = static_cast<int64_t>(step.preempted.size());
  in.step_chunks = static_cast<int64_t>(step.scheduled.size());
  for (const ScheduledChunk& c : step.scheduled) {
    in.step_tokens += c.num_tokens;
    if (c.new_admission) ++in.step_admitted;
    PdRecord& rec = record_of(c.req->id);
    if (in.prefill() && c.new_admission && rec.first_scheduled < 0) {
      rec.first_scheduled = start;
      rec.cached_tokens = c.hit_tokens;
    }
  }
  in.step_start = start;
}

void ClusterSim::Emitted(int i, LiveRequest& r, Tick seen) {
  // A prefill instance's one token is sampled and discarded (the proxy asked for it only to
  // run the prompt): the user sees tokens from the decoder.
  if (inst_[static_cast<size_t>(i)]->prefill()) return;
  PdRecord& rec = record_of(r.id);
  if (rec.first_token < 0) rec.first_token = seen;
  if (r.last_emit >= 0) itl_.Add(seen - r.last_emit);
  r.last_emit = seen;
}

void ClusterSim::StepOutputs(int i, const std::vector<SimRequest*>& finished) {
  Instance& in = *inst_[static_cast<size_t>(i)];
  const InstanceId id{i};
  if (trace_) {
    trace_->Step(in.step_start, now(), in.step_tokens, in.step_chunks, in.step_admitted,
                 in.step_preempted, InstancePid(id));
  }
  for (SimRequest* r : finished) {
    if (in.prefill()) {
      OnPrefillDone(id, r->id);
    } else {
      OnFinished(id, r->id, r->num_output_tokens);
    }
  }
  if (!in.prefill()) TryReserve(id);
  if (trace_) {
    const EngineInstance& e = in.core.inst();
    trace_->Counters(now(), e.kv().usage(), static_cast<int64_t>(e.state().running.size()),
                     static_cast<int64_t>(e.state().waiting.size()) + e.num_incoming_waiting(),
                     InstancePid(id));
  }
}

void ClusterSim::TraceNetwork() {
  if (!trace_) return;
  trace_->Counter(now(), "transfers_on_wire", static_cast<double>(transfers_->on_wire()),
                  kNetworkPid);
}

void ClusterSim::SetTrace(TraceRecorder* trace) {
  trace_ = trace;
  if (!trace_) return;
  trace_->NameProcess(kNetworkPid, "network");
  for (size_t i = 0; i < inst_.size(); ++i) {
    const Instance& in = *inst_[i];
    trace_->NameProcess(InstancePid(InstanceId{static_cast<int32_t>(i)}),
                        fmt::format("{} {}", InstanceRoleName(in.core.inst().role()), in.index));
  }
}

void ClusterSim::SetStepLog(const StepRecordSink* sink) { loop_->SetStepLog(sink); }

void ClusterSim::Arrived(RequestId id) {
  const RequestSpec& spec = loop_->spec(id);
  GrowRecords(id);
  PdRecord& rec = record_of(id);
  rec.id = id;
  rec.arrived = true;
  rec.arrival = spec.arrival;
  rec.prompt_tokens = spec.num_prompt_tokens;
  const int64_t n = rec.prompt_tokens;
  // It must fit both pools: the prompt's KV moves whole to the decoder.
  if (!loop_->PromptFits(0, n) || !loop_->PromptFits(1, n)) {
    Reject(id);
    return;
  }
  const std::vector<TokenId>& prompt = loop_->PromptOf(spec);
  const int p_local = Route(*prefill_router_, prompt, /*prefill=*/true);
  rec.prefill_instance = p_local;
  const InstanceId p{p_local};  // the prefill pool comes first
  Instance& in = instance(p);
  auto lv = std::make_unique<LiveRequest>();
  lv->spec = &spec;
  lv->id = id;
  lv->arrival_tick = now();
  loop_->Admit(p.value(), lv.get(), prompt);  // max_tokens = 1
  in.live[id] = std::move(lv);
  loop_->RequestSchedule(p.value());
}

void ClusterSim::OnPrefillDone(InstanceId p, RequestId id) {
  PdRecord& rec = record_of(id);
  rec.prefill_end = now();
  const RequestSpec& spec = loop_->spec(id);
  const std::vector<TokenId>& prompt = loop_->PromptOf(spec);
  const int d_local = Route(*decode_router_, prompt, /*prefill=*/false);
  const InstanceId d = DecodeInstance(d_local);
  rec.decode_instance = d_local;
  Instance& in = instance(d);
  auto lv = std::make_unique<LiveRequest>();
  lv->spec = &spec;
  lv->id = id;
  lv->arrival_tick = rec.arrival;
  lv->max_output_tokens = std::max<int64_t>(1, spec.max_output_tokens);
  loop_->Admit(d.value(), lv.get(), prompt);  // waits for blocks to receive into
  in.live[id] = std::move(lv);
  in.inbound_tokens += rec.prompt_tokens;
  transfers_->Expect(id, p.value(), d_local);
  TryReserve(d);
}

void ClusterSim::TryReserve(InstanceId d) {
  Instance& in = instance(d);
  while (SimRequest* r = in.core.inst().ReserveIncoming()) {
    const RequestId id = r->id;
    const int64_t n = r->num_prompt_tokens;
    const int64_t hit_tokens = r->num_cached_tokens;
    PdRecord& rec = record_of(id);
    rec.reserved = now();
    rec.decode_hit_tokens = hit_tokens;
    const PdTransfers::Reservation t = transfers_->Reserve(id, hit_tokens, n, now());
    ++rec.transfers;
    rec.transfer_tokens = t.cost.tokens;
    rec.descriptors = t.cost.descriptors;
    rec.bytes = t.cost.bytes;
    rec.save_relayout_bytes = t.cost.save_relayout_bytes;
    rec.receive_relayout_bytes = t.cost.receive_relayout_bytes;
    loop_->PushRequestEvent(t.wire_start, EventKind::kWireStart, id);
  }
}

void ClusterSim::OnWireStart(RequestId id) {
  record_of(id).wire_start = now();
  transfers_->StartWire(id, now());
  TraceNetwork();
}

void ClusterSim::OnWireEnd(RequestId id) {
  TraceNetwork();
  record_of(id).wire_end = now();
  // The decoder has read the blocks: the prefill instance frees them (they stay cached).
  const InstanceId p{transfers_->prefill_of(id)};  // the prefill pool comes first
  Instance& in = instance(p);
  in.core.inst().Release(&in.live_of(id));
  in.live.erase(id);
  loop_->RequestSchedule(p.value());
  loop_->PushRequestEvent(transfers_->UsableAt(id, now()), EventKind::kKvReady, id);
}

void ClusterSim::OnKvReady(RequestId id) {
  const InstanceId d = DecodeInstance(transfers_->decode_of(id));
  transfers_->Forget(id);
  PdRecord& rec = record_of(id);
  rec.kv_ready = now();
  Instance& in = instance(d);
  in.inbound_tokens -= rec.prompt_tokens;
  in.core.inst().ResumeWithKv(&in.live_of(id));
  loop_->RequestSchedule(d.value());
}

void ClusterSim::OnFinished(InstanceId d, RequestId id, int64_t outputs) {
  Instance& in = instance(d);
  PdRecord& rec = record_of(id);
  rec.finish = std::max(now(), in.live_of(id).last_emit);  // when the last token is seen
  rec.output_tokens = outputs;
  in.live.erase(id);  // its blocks were freed at the step's end
  loop_->End(id, outputs);
}

void ClusterSim::Reject(RequestId id) {
  GrowRecords(id);
  record_of(id).rejected = true;
  loop_->End(id, 0);  // a rejected request still ends its session/tree branch
}

void ClusterSim::CheckInvariants() const {
  for (const auto& in : inst_) in->core.inst().kv().CheckInvariants();
  transfers_->network().CheckInvariants();
  for (const PdRecord& r : records_) {
    KVSIM_CHECK(r.transfers <= 1);
    if (r.finish >= 0) KVSIM_CHECK(r.transfers == 1);
  }
}

}  // namespace kvsim
