// InstanceCore on a unit clock (InstanceConfig::unit_clock, the step `kvsim schedule` runs):
// the order of a step's parts as the driver and the step log see them, the flush decision
// before an idle gap, and the "nothing can change" answer the step clock's never_scheduled
// error rests on. Every expected value was worked on paper from docs/step-log.md ("The clock",
// "With a CPU offloading tier", "A finished request's last stores, empty steps and idle
// gaps"), never copied from kvsim's output.
#include <catch2/catch_test_macros.hpp>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/offload/offload_config.h"
#include "core/vllm_semantics.h"
#include "sim/instance/instance_core.h"

namespace kvsim {
namespace {

std::vector<TokenId> Range(TokenId first, int n) {
  std::vector<TokenId> v;
  for (int i = 0; i < n; ++i) v.push_back(first + i);
  return v;
}

InstanceConfig UnitConfig(int64_t block, int64_t num_blocks, bool async,
                          VllmSemantics sem = VllmSemantics::kLatest) {
  InstanceConfig c;
  c.unit_clock = true;
  c.kv = KvCacheManagerConfigFromHybrid("", block, num_blocks).value();
  c.kv.semantics = sem;
  c.kv.max_num_batched_tokens = 100;
  c.params.max_num_batched_tokens = 100;
  c.params.max_num_seqs = 16;
  c.params.max_model_len = 1 << 20;
  c.params.async_scheduling = async;
  return c;
}

// Writes down what the instance tells its driver, in order: "decide k" per decision, "token
// <request>@<id>" per sampled token, "record k" per step-log record (with the tier's counts
// when it has one).
struct Log final : InstanceObserver {
  std::vector<std::string> events;
  int64_t preempted = 0;
  void Preempted(SimRequest&, Tick) override { ++preempted; }
  void ConnectorAdmitted(const ConnectorAdmission&, Tick) override {}
  void StepLaunched(const StepPlan&, Tick start, Tick end) override {
    events.push_back(fmt::format("decide {} until {}", start, end));
  }
  void Tokens(SimRequest& r, int64_t n, std::vector<TokenId>& tokens, Tick seen) override {
    for (int64_t i = 0; i < n; ++i) tokens.push_back(static_cast<TokenId>(1000000 + seen));
    events.push_back(fmt::format("token {}@{}", r.id.value(), seen));
  }
  void StepEnded(Tick, Tick, const EngineInstance&, int64_t, int64_t) override {}
};

SimRequest Request(int64_t id, int64_t max_tokens) {
  SimRequest r;
  r.id = RequestId{id};
  r.arrival_tick = id;
  r.max_output_tokens = max_tokens;
  return r;
}

}  // namespace

TEST_CASE("unit clock, sync: decision k, then its outputs, then its record numbered k") {
  // Block 4, 9 usable blocks. A (id 0): 6 prompt tokens, 2 outputs. Decision 3 (the driver's
  // tick: records carry it) computes the 6 tokens in 2 blocks and samples token 1000003;
  // decision 4 computes 1 token (7 tokens, still 2 blocks) and samples A's 2nd and last token,
  // 1000004, so A finishes in step 4 and its blocks are free after it.
  InstanceCore core(UnitConfig(4, 10, /*async=*/false));
  Log log;
  std::vector<StepRecord> records;
  const StepRecordSink sink = [&](const StepRecord& r) {
    records.push_back(r);
    log.events.push_back(fmt::format("record {}", r.step));
  };
  core.SetStepLog(&sink);
  SimRequest a = Request(0, 2);
  core.inst().Add(&a, Range(1, 6));
  std::vector<SimRequest*> finished;
  CHECK(core.UnitStep(3, log, finished));
  CHECK(core.UnitStep(4, log, finished));
  const std::vector<std::string> want{"decide 3 until 4", "token 0@3", "record 3",
                                      "decide 4 until 5", "token 0@4", "record 4"};
  CHECK(log.events == want);
  REQUIRE(records.size() == 2);
  CHECK(records[0].step == 3);
  CHECK(records[0].num_scheduled_tokens == 6);
  CHECK(records[0].num_free_blocks == 7);
  CHECK(records[0].t_start_ns == -1);  // no simulated time on a unit clock
  CHECK(records[1].step == 4);
  CHECK(records[1].finished == std::vector<int32_t>{0});
  CHECK(records[1].num_free_blocks == 7);  // right after the decision: A still holds 2
  REQUIRE(finished.size() == 1);
  CHECK(core.inst().kv().num_free_blocks() == 9);
  CHECK(a.num_tokens == 8);  // 6 prompt + 2 sampled
  CHECK(core.idle());
}

TEST_CASE("unit clock, async: decision k + 1 before step k's outputs; an empty last step") {
  // The same request, async. Decision 0 computes A's 6 tokens; nothing is applied yet.
  // Decision 1 is made with A's first token in flight (7 known tokens: 1 to compute), then
  // step 0's output lands (token 1000000, record 0). Decision 2 finds A's last token in
  // flight and schedules nothing; then step 1's output lands: A finishes in step 1. The
  // empty step 2 is still in flight: UnitIdle applies it and writes its record, in which A
  // still holds its running slot and blocks (freed only after that decision).
  InstanceCore core(UnitConfig(4, 10, /*async=*/true));
  Log log;
  std::vector<StepRecord> records;
  const StepRecordSink sink = [&](const StepRecord& r) {
    records.push_back(r);
    log.events.push_back(fmt::format("record {}", r.step));
  };
  core.SetStepLog(&sink);
  SimRequest a = Request(0, 2);
  core.inst().Add(&a, Range(1, 6));
  std::vector<SimRequest*> finished;
  CHECK(core.UnitStep(0, log, finished));
  CHECK(records.empty());
  CHECK(core.UnitStep(1, log, finished));
  // Nothing decided at 2, but a token was in flight: something could still change.
  CHECK(core.UnitStep(2, log, finished));
  REQUIRE(finished.size() == 1);
  core.UnitIdle(3, log, finished);
  const std::vector<std::string> want{"decide 0 until 1", "decide 1 until 2", "token 0@0",
                                      "record 0",         "decide 2 until 3", "token 0@1",
                                      "record 1",         "record 2"};
  CHECK(log.events == want);
  REQUIRE(records.size() == 3);
  CHECK(records[1].scheduled.size() == 1);
  CHECK(records[1].scheduled[0].num_tokens == 1);
  CHECK(records[1].scheduled[0].before == 6);
  CHECK(records[1].finished == std::vector<int32_t>{0});
  CHECK(records[2].scheduled.empty());
  CHECK(records[2].running == 1);
  CHECK(records[2].num_free_blocks == 7);
  CHECK(core.inst().kv().num_free_blocks() == 9);
  CHECK_FALSE(core.step_in_flight());
}

TEST_CASE("unit clock: a decision that can change nothing says so") {
  // Block 4, 2 usable blocks; A's 12 tokens need 3: it is never admitted, nothing runs, no
  // token is in flight and there is no tier. The record still shows the empty decision.
  for (bool async : {false, true}) {
    InstanceCore core(UnitConfig(4, 3, async));
    Log log;
    std::vector<StepRecord> records;
    const StepRecordSink sink = [&](const StepRecord& r) { records.push_back(r); };
    core.SetStepLog(&sink);
    SimRequest a = Request(0, 1);
    core.inst().Add(&a, Range(1, 12));
    std::vector<SimRequest*> finished;
    CHECK_FALSE(core.UnitStep(0, log, finished));
    if (async) CHECK_FALSE(core.UnitStep(1, log, finished));  // step 0 (empty) applied
    REQUIRE(records.size() == 1);
    CHECK(records[0].scheduled.empty());
    CHECK(records[0].waiting == 1);
    CHECK(records[0].num_free_blocks == 2);
  }
}

TEST_CASE("unit clock: the flush decision before an idle gap completes pending copies") {
  // Block 4, 9 usable GPU blocks, 4 CPU blocks, copies reported one step late (next-step).
  // A: 8 prompt tokens, 1 output, sync. Decision 0 computes A's 8 tokens and plans the store
  // of its 2 full blocks (A#0, A#1: both profiles store prompt blocks); the store would run in
  // step 1 and be reported with step 2's output. A finishes in step 0, so record 0 shows the
  // tier with 2 blocks used, none ready. Nothing is unfinished: UnitIdle makes the flush
  // decision (no record): with no tracked request unfinished the tier flushes every copy,
  // reported with this decision's output, so both blocks are ready before the next arrival.
  for (VllmSemantics sem : {VllmSemantics::kClassic, VllmSemantics::kLatest}) {
    InstanceConfig cfg = UnitConfig(4, 10, /*async=*/false, sem);
    OffloadOptions o;
    o.num_cpu_blocks = 4;
    cfg.offload = MakeOffloadConnectorConfig(cfg.kv, o).value();
    cfg.xfer_timing = XferTiming::kNextStep;
    InstanceCore core(std::move(cfg));
    Log log;
    std::vector<StepRecord> records;
    const StepRecordSink sink = [&](const StepRecord& r) { records.push_back(r); };
    core.SetStepLog(&sink);
    SimRequest a = Request(0, 1);
    core.inst().Add(&a, Range(1, 8));
    core.mutable_offload()->RequestAdded(a);
    std::vector<SimRequest*> finished;
    CHECK(core.UnitStep(0, log, finished));  // the store is pending: something will change
    REQUIRE(records.size() == 1);
    REQUIRE(records[0].cpu_stores.size() == 1);
    CHECK(records[0].cpu_stores[0].block_indices == std::vector<int64_t>{0, 1});
    CHECK(records[0].cpu_blocks_used == 2);
    CHECK(records[0].cpu_blocks_ready == 0);
    core.UnitIdle(1, log, finished);
    CHECK(records.size() == 1);  // the flush decision has no record
    CHECK(core.offload()->num_cpu_blocks_used() == 2);
    CHECK(core.offload()->num_cpu_blocks_ready() == 2);
    CHECK_FALSE(core.offload()->busy());
  }
}

}  // namespace kvsim
