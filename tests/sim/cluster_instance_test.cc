// EngineInstance in the roles a P/D cluster gives it (sim/instance/engine_instance.h): the
// decoder's FIFO reservations and resume with transferred KV, the prefill instance's held
// prompts, and a prefill instance deciding exactly as a colocated one. Hand-worked block counts
// on a 16-token, 20-block pool (19 usable: block 0 is the null block).
#include <catch2/catch_test_macros.hpp>
#include <numeric>
#include <vector>

#include "sim/instance/engine_instance.h"

namespace kvsim {
namespace {

std::vector<TokenId> Range(TokenId first, int n) {
  std::vector<TokenId> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), first);
  return v;
}

KvCacheManagerConfig FullAttention(int64_t num_blocks) {
  KvCacheManagerConfig c;
  c.groups.push_back({KvGroupKind::kFullAttention, 16});
  c.num_blocks = num_blocks;
  return c;
}

SchedulerParams Params() {
  SchedulerParams p;
  p.max_num_batched_tokens = 512;
  p.max_num_seqs = 8;
  return p;
}

SimRequest Request(int64_t id, int64_t max_output_tokens) {
  SimRequest r;
  r.id = RequestId{id};
  r.max_output_tokens = max_output_tokens;
  return r;
}

// One step of an instance as InstanceCore drives it (sim/instance/instance_core.h): a
// decision, then its outputs, emitting `n` copies of token 7 for each sampling chunk; the
// finished requests free their blocks (or, on a prefill instance, hold them).
struct Stepper {
  EngineInstance& inst;
  StepPlan plan;
  bool Begin() {
    inst.Decide(plan);
    return !plan.empty();
  }
  std::vector<SimRequest*> End() {
    std::vector<SimRequest*> finished;
    inst.ApplyStepOutputs(plan,
                          [](SimRequest&, const ScheduledChunk&, int64_t n,
                             std::vector<TokenId>& tokens) {
                            tokens.assign(static_cast<size_t>(n), 7);
                          },
                          finished);
    inst.ReleaseOrHoldFinished(finished);
    plan.scheduled.clear();
    plan.preempted.clear();
    return finished;
  }
};

TEST_CASE("decode instance: FIFO reservations, resume with prompt - 1 computed, own hits") {
  EngineInstance inst(FullAttention(20), Params(), InstanceRole::kDecode);
  Stepper s{inst, {}};
  SimRequest x = Request(0, 2), y = Request(1, 1), z = Request(2, 1);
  inst.Admit(&x, Range(0, 100));     // 7 blocks
  inst.Admit(&y, Range(1000, 200));  // 13 blocks
  CHECK(x.status == RequestStatus::kWaitingForRemoteKvs);
  CHECK(inst.num_incoming_waiting() == 2);
  CHECK(inst.idle());  // nothing the scheduler may run yet

  CHECK(inst.ReserveIncoming() == &x);
  CHECK(x.num_cached_tokens == 0);
  CHECK(inst.kv().num_free_blocks() == 12);
  CHECK(inst.ReserveIncoming() == nullptr);  // Y needs 13 of 12: it waits, head of line
  CHECK(inst.holds_for_transfers());

  inst.ResumeWithKv(&x);
  CHECK_FALSE(inst.holds_for_transfers());
  CHECK(x.num_computed_tokens == 99);
  CHECK(inst.state().running == std::vector<SimRequest*>{&x});

  // Step 1 replays the last prompt token and samples the first output; step 2 the second.
  REQUIRE(s.Begin());
  REQUIRE(s.plan.scheduled.size() == 1);
  CHECK(s.plan.scheduled[0].num_tokens == 1);
  CHECK(s.plan.scheduled[0].samples);
  CHECK(s.End().empty());
  CHECK(x.num_output_tokens == 1);
  REQUIRE(s.Begin());
  CHECK(s.End() == std::vector<SimRequest*>{&x});
  CHECK(x.num_output_tokens == 2);
  CHECK(inst.kv().num_free_blocks() == 19);  // freed; its 6 full blocks stay cached

  // Y takes the 13 blocks no cached prefix is in (12 never used, X's partial last block).
  CHECK(inst.ReserveIncoming() == &y);
  CHECK(inst.kv().num_free_blocks() == 6);
  inst.ResumeWithKv(&y);
  REQUIRE(s.Begin());
  CHECK(s.End() == std::vector<SimRequest*>{&y});
  CHECK(inst.kv().num_free_blocks() == 19);
  // Z repeats X's prompt: the decoder's cache still holds X's 6 full blocks (96 tokens), which
  // are not transferred; Z takes them and one new block.
  inst.Admit(&z, Range(0, 100));
  CHECK(inst.ReserveIncoming() == &z);
  CHECK(z.num_cached_tokens == 96);
  CHECK(inst.kv().num_free_blocks() == 12);
  CHECK(inst.num_incoming_reserved() == 1);
  inst.kv().CheckInvariants();
}

TEST_CASE("prefill instance: max_tokens 1, finished prompts keep their blocks until read") {
  EngineInstance inst(FullAttention(20), Params(), InstanceRole::kPrefill);
  Stepper s{inst, {}};
  SimRequest a = Request(0, 50);
  inst.Admit(&a, Range(0, 100));
  CHECK(a.max_output_tokens == 1);  // what vLLM's P/D proxy asks the prefill instance for
  REQUIRE(s.Begin());
  CHECK(s.plan.scheduled[0].num_tokens == 100);
  CHECK(s.End() == std::vector<SimRequest*>{&a});
  CHECK(a.status == RequestStatus::kFinished);
  CHECK(inst.state().running.empty());
  CHECK(inst.idle());
  CHECK(inst.num_held() == 1);
  CHECK(inst.holds_for_transfers());
  CHECK(inst.kv().num_free_blocks() == 12);  // 7 blocks still held for the decoder
  inst.Release(&a);
  CHECK_FALSE(inst.holds_for_transfers());
  CHECK(inst.kv().num_free_blocks() == 19);
  inst.kv().CheckInvariants();
}

// Two requests with the same 100-token prompt on a hybrid (full attention + Mamba align)
// pool. Step 1 runs A's first chunk, which the align split stops at 96 (the last cacheable
// boundary), and caches the Mamba state there. B's lookup then hits 96 tokens, but on a state
// cached in this very step: it waits a step (vLLM; core test LH 7). Step 2: A's last 4
// tokens and B's 4 after its hit. A colocated instance and a prefill instance decide the same.
TEST_CASE("a prefill instance decides as a colocated one: a Mamba hit cached in the same step waits a step") {
  auto cfg = KvCacheManagerConfigFromHybrid("mamba-align", 16, 200);
  REQUIRE(cfg.ok());
  SchedulerParams params = Params();
  params.mamba_align_split = true;
  for (const InstanceRole role : {InstanceRole::kColocated, InstanceRole::kPrefill}) {
    INFO(InstanceRoleName(role));
    EngineInstance inst(cfg.value(), params, role);
    Stepper s{inst, {}};
    SimRequest a = Request(0, 1), b = Request(1, 1);
    inst.Admit(&a, Range(0, 100));
    inst.Admit(&b, Range(0, 100));
    auto decide = [&](StepPlan& plan) {
      if (role == InstanceRole::kColocated) {
        inst.Decide(plan);  // the Engine's call
      } else {
        REQUIRE(s.Begin());
        plan = s.plan;
      }
    };
    auto apply = [&](const StepPlan& plan) {
      std::vector<SimRequest*> finished;
      if (role == InstanceRole::kColocated) {
        inst.ApplyOutputs(
            plan, [](SimRequest&, const ScheduledChunk&, std::vector<TokenId>& t) { t = {7}; },
            finished);
      } else {
        s.End();
      }
    };
    StepPlan plan;
    decide(plan);
    REQUIRE(plan.scheduled.size() == 1);
    CHECK(plan.scheduled[0].req == &a);
    CHECK(plan.scheduled[0].num_tokens == 96);
    apply(plan);
    decide(plan);
    REQUIRE(plan.scheduled.size() == 2);
    CHECK(plan.scheduled[0].req == &a);
    CHECK(plan.scheduled[0].num_tokens == 4);
    CHECK(plan.scheduled[1].req == &b);
    CHECK(plan.scheduled[1].hit_tokens == 96);
    CHECK(plan.scheduled[1].num_tokens == 4);
    apply(plan);
    inst.kv().CheckInvariants();
  }
}

// Chunked prefill off, a 512-token budget: S (600 tokens) can never be scheduled. A (100
// tokens) runs in step 1; the next decision runs nothing. A colocated instance rejects S
// then; a prefill instance first waits for A's blocks to be read (they come back without a
// step), a decoder for its reserved transfer to arrive.
TEST_CASE("one stuck-head rule: nothing runs and nothing held for a transfer") {
  SchedulerParams params = Params();
  params.enable_chunked_prefill = false;
  for (const InstanceRole role : {InstanceRole::kColocated, InstanceRole::kPrefill}) {
    INFO(InstanceRoleName(role));
    EngineInstance inst(FullAttention(100), params, role);
    Stepper step{inst, {}};
    SimRequest a = Request(0, 1), s = Request(1, 1);
    inst.Admit(&a, Range(0, 100));
    inst.Admit(&s, Range(1000, 600));
    REQUIRE(step.Begin());
    REQUIRE(step.plan.scheduled.size() == 1);
    CHECK(step.plan.scheduled[0].req == &a);
    step.End();
    CHECK_FALSE(step.Begin());
    if (role == InstanceRole::kPrefill) {
      CHECK(inst.RejectStuckHead() == nullptr);  // A's 7 blocks are still held
      inst.Release(&a);
      CHECK_FALSE(step.Begin());
    }
    CHECK(inst.RejectStuckHead() == &s);
    CHECK(inst.idle());
    CHECK(inst.kv().num_free_blocks() == 99);
    inst.kv().CheckInvariants();
  }

  // A decoder: while a reservation is out, its transfer will arrive and the blocks with it,
  // so a waiting request that cannot run yet is not rejected.
  EngineInstance dec(FullAttention(100), params, InstanceRole::kDecode);
  Stepper dstep{dec, {}};
  SimRequest x = Request(0, 4), w = Request(1, 1);
  dec.Admit(&x, Range(0, 100));
  REQUIRE(dec.ReserveIncoming() == &x);
  dec.Add(&w, Range(1000, 600));  // stands in for a request back in WAITING (preempted)
  CHECK_FALSE(dstep.Begin());
  CHECK(dec.RejectStuckHead() == nullptr);  // X's KV is in flight
  dec.ResumeWithKv(&x);
  REQUIRE(dstep.Begin());  // X runs: nothing is stuck while something runs
}

}  // namespace
}  // namespace kvsim
