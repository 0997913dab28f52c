// `kvsim schedule` with vLLM's CPU offloading tier against step tables worked out by hand from
// kv-offload.md (§3 stores, §4 lookup, §5 loads and promotion, §6 the flush of a finished
// request's stores when its GPU blocks are reused, §7 eviction) and step-log.md §8. Every
// expected record was derived on paper, never copied from kvsim's output.
#include <catch2/catch_test_macros.hpp>

#include <string>
#include <vector>

#include "core/offload/offload_config.h"
#include "core/vllm_semantics.h"
#include "sim/instance/step_clock.h"

namespace kvsim {
namespace {

StepRequest Req(std::string id, std::vector<TokenId> tokens, int64_t max_tokens,
                int64_t arrival = 0) {
  StepRequest r;
  r.id = std::move(id);
  r.tokens = std::move(tokens);
  r.max_tokens = max_tokens;
  r.arrival_step = arrival;
  return r;
}

std::vector<TokenId> Range(TokenId first, int n) {
  std::vector<TokenId> v;
  for (int i = 0; i < n; ++i) v.push_back(first + i);
  return v;
}

std::vector<TokenId> Concat(std::vector<TokenId> a, const std::vector<TokenId>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

StepClockConfig Config(int64_t block, int64_t num_blocks, int64_t cpu_blocks, VllmSemantics sem,
                       XferTiming timing, int64_t offload_block = 0,
                       CpuEvictionPolicyKind policy = CpuEvictionPolicyKind::kLru) {
  StepClockConfig c;
  c.kv = KvCacheManagerConfigFromHybrid("", block, num_blocks).value();
  c.kv.semantics = sem;
  c.kv.max_num_batched_tokens = 100;
  c.sched.max_num_batched_tokens = 100;
  c.sched.max_num_seqs = 16;
  c.sched.max_model_len = 1 << 20;
  OffloadOptions o;
  o.num_cpu_blocks = cpu_blocks;
  o.offload_block_size = offload_block;
  o.eviction_policy = policy;
  c.offload = MakeOffloadConnectorConfig(c.kv, o).value();
  c.xfer_timing = timing;
  return c;
}

struct Run {
  std::vector<std::string> lines;
  StepClockSummary summary;
};

Run Drive(const std::vector<StepRequest>& reqs, const StepClockConfig& cfg) {
  Run run;
  auto s = RunStepClock(reqs, cfg, [&](const StepRecord& r) {
    run.lines.push_back(StepRecordJson(r, reqs));
  });
  REQUIRE(s.ok());
  run.summary = s.value();
  return run;
}

// A (10 tokens) is prefilled and finishes in step 0, storing its 2 full blocks. B (16 tokens)
// then takes all 4 usable GPU blocks, evicting A's cached blocks from the GPU. C repeats A's 10
// tokens and adds 6: its GPU hit is 0, its CPU hit A's 2 blocks (8 tokens; block 2 differs).
const std::vector<StepRequest> kTurns{
    Req("A", Range(1, 10), 1, 0),
    Req("B", Range(101, 16), 1, 1),
    Req("C", Concat(Range(1, 10), Range(201, 6)), 1, 2),
};

TEST_CASE("offload, instant copies: a CPU hit is loaded, then scheduled from its end") {
  // Step 0: A allocates 3 of 4 blocks; the store of CPU blocks 0-1 is planned (in flight).
  // Step 1: A's freed blocks go to B; A's store ran in step 1 and is ready after its output.
  // Step 2: C: GPU hit 0, CPU hit 8 → 2 GPU blocks allocated (2 of B's 4 freed ones), load of
  //         CPU blocks 0-1, C is not scheduled (it waits in skipped-waiting: waiting 1).
  // Step 3: the load finished with step 2's output: C is promoted and scheduled at 8 with
  //         hit 8, its chunk of 8 takes the last 2 GPU blocks; its blocks 2-3 are stored (the
  //         cursor starts after the CPU hit, at cdiv(8, 4) = 2).
  for (VllmSemantics sem : {VllmSemantics::kClassic, VllmSemantics::kLatest}) {
    const Run run = Drive(kTurns, Config(4, 5, 8, sem, XferTiming::kInstant));
    const std::vector<std::string> want{
        R"({"step": 0, "scheduled": [["A", 10, 0, 0]], "preempted": [], "finished": ["A"], "num_free_blocks": 1, "new": ["A"], "resumed": [], "running": 1, "waiting": 0, "num_scheduled_tokens": 10, "kv_admitted": [["A", 0, 0]], "loading": [], "cpu_loads": [], "cpu_stores": [["A", [0, 1]]], "cpu_evicted": [], "cpu_blocks_used": 2, "cpu_blocks_ready": 0})",
        R"({"step": 1, "scheduled": [["B", 16, 0, 0]], "preempted": [], "finished": ["B"], "num_free_blocks": 0, "new": ["B"], "resumed": [], "running": 1, "waiting": 0, "num_scheduled_tokens": 16, "kv_admitted": [["B", 0, 0]], "loading": [], "cpu_loads": [], "cpu_stores": [["B", [0, 1, 2, 3]]], "cpu_evicted": [], "cpu_blocks_used": 6, "cpu_blocks_ready": 2})",
        R"({"step": 2, "scheduled": [], "preempted": [], "finished": [], "num_free_blocks": 2, "new": [], "resumed": [], "running": 0, "waiting": 1, "num_scheduled_tokens": 0, "kv_admitted": [["C", 0, 8]], "loading": ["C"], "cpu_loads": [["C", [0, 1]]], "cpu_stores": [], "cpu_evicted": [], "cpu_blocks_used": 6, "cpu_blocks_ready": 6})",
        R"({"step": 3, "scheduled": [["C", 8, 8, 8]], "preempted": [], "finished": ["C"], "num_free_blocks": 0, "new": ["C"], "resumed": [], "running": 1, "waiting": 0, "num_scheduled_tokens": 8, "kv_admitted": [], "loading": [], "cpu_loads": [], "cpu_stores": [["C", [2, 3]]], "cpu_evicted": [], "cpu_blocks_used": 8, "cpu_blocks_ready": 6})",
    };
    CHECK(run.lines == want);
    const StepRequestSummary& c = run.summary.per_request[2];
    CHECK(c.hit_tokens == 8);
    CHECK(c.gpu_hit_tokens == 0);
    CHECK(c.cpu_hit_tokens == 8);
    CHECK(c.first_token_step == 3);
  }
}

TEST_CASE("offload, next-step copies: reused GPU blocks flush a finished request's store") {
  // As above, but a copy is reported one step after the step that ran it. A's store (planned
  // in step 0, run in step 1) would be reported with step 2's output, but B's allocation in
  // step 1 reuses A's GPU blocks, so the worker flushes it: reported with step 1's output.
  // Likewise B's store is flushed by C's allocation in step 2. C's load, started in step 2,
  // is reported with step 3's output: C still loads in step 3 and runs in step 4.
  for (VllmSemantics sem : {VllmSemantics::kClassic, VllmSemantics::kLatest}) {
    const Run run = Drive(kTurns, Config(4, 5, 8, sem, XferTiming::kNextStep));
    const std::vector<std::string> want{
        R"({"step": 0, "scheduled": [["A", 10, 0, 0]], "preempted": [], "finished": ["A"], "num_free_blocks": 1, "new": ["A"], "resumed": [], "running": 1, "waiting": 0, "num_scheduled_tokens": 10, "kv_admitted": [["A", 0, 0]], "loading": [], "cpu_loads": [], "cpu_stores": [["A", [0, 1]]], "cpu_evicted": [], "cpu_blocks_used": 2, "cpu_blocks_ready": 0})",
        R"({"step": 1, "scheduled": [["B", 16, 0, 0]], "preempted": [], "finished": ["B"], "num_free_blocks": 0, "new": ["B"], "resumed": [], "running": 1, "waiting": 0, "num_scheduled_tokens": 16, "kv_admitted": [["B", 0, 0]], "loading": [], "cpu_loads": [], "cpu_stores": [["B", [0, 1, 2, 3]]], "cpu_evicted": [], "cpu_blocks_used": 6, "cpu_blocks_ready": 2})",
        R"({"step": 2, "scheduled": [], "preempted": [], "finished": [], "num_free_blocks": 2, "new": [], "resumed": [], "running": 0, "waiting": 1, "num_scheduled_tokens": 0, "kv_admitted": [["C", 0, 8]], "loading": ["C"], "cpu_loads": [["C", [0, 1]]], "cpu_stores": [], "cpu_evicted": [], "cpu_blocks_used": 6, "cpu_blocks_ready": 6})",
        R"({"step": 3, "scheduled": [], "preempted": [], "finished": [], "num_free_blocks": 2, "new": [], "resumed": [], "running": 0, "waiting": 1, "num_scheduled_tokens": 0, "kv_admitted": [], "loading": ["C"], "cpu_loads": [], "cpu_stores": [], "cpu_evicted": [], "cpu_blocks_used": 6, "cpu_blocks_ready": 6})",
        R"({"step": 4, "scheduled": [["C", 8, 8, 8]], "preempted": [], "finished": ["C"], "num_free_blocks": 0, "new": ["C"], "resumed": [], "running": 1, "waiting": 0, "num_scheduled_tokens": 8, "kv_admitted": [], "loading": [], "cpu_loads": [], "cpu_stores": [["C", [2, 3]]], "cpu_evicted": [], "cpu_blocks_used": 8, "cpu_blocks_ready": 6})",
    };
    CHECK(run.lines == want);
    CHECK(run.summary.per_request[2].first_token_step == 4);
  }
}


TEST_CASE("offload: a lookup meeting a store in flight defers; a full CPU hit recomputes one") {
  // A (8 tokens) stores CPU blocks 0-1 in step 0 (run in step 1, ready after its output).
  // Step 1: D (A's 8 tokens) hits 4 on the GPU (capped at 7, floored to a block); its CPU scan
  //   from block 1 meets A's block 1 still in flight: deferred, set aside (waiting 1).
  // Step 2: D again: GPU 4 + CPU 4 = every token (the CPU hit is not capped at n − 1). The hit
  //   block is touched and 1 block allocated; CPU block 1 is loaded into D's GPU block 1.
  // Step 3: promoted with 8 = num_tokens computed → 7: one token recomputed, hit 7.
  const std::vector<StepRequest> reqs{Req("A", Range(1, 8), 1, 0), Req("D", Range(1, 8), 1, 1)};
  for (VllmSemantics sem : {VllmSemantics::kClassic, VllmSemantics::kLatest}) {
    const Run run = Drive(reqs, Config(4, 5, 8, sem, XferTiming::kInstant));
    const std::vector<std::string> want{
        R"({"step": 0, "scheduled": [["A", 8, 0, 0]], "preempted": [], "finished": ["A"], "num_free_blocks": 2, "new": ["A"], "resumed": [], "running": 1, "waiting": 0, "num_scheduled_tokens": 8, "kv_admitted": [["A", 0, 0]], "loading": [], "cpu_loads": [], "cpu_stores": [["A", [0, 1]]], "cpu_evicted": [], "cpu_blocks_used": 2, "cpu_blocks_ready": 0})",
        R"({"step": 1, "scheduled": [], "preempted": [], "finished": [], "num_free_blocks": 4, "new": [], "resumed": [], "running": 0, "waiting": 1, "num_scheduled_tokens": 0, "kv_admitted": [], "loading": [], "cpu_loads": [], "cpu_stores": [], "cpu_evicted": [], "cpu_blocks_used": 2, "cpu_blocks_ready": 2})",
        R"({"step": 2, "scheduled": [], "preempted": [], "finished": [], "num_free_blocks": 2, "new": [], "resumed": [], "running": 0, "waiting": 1, "num_scheduled_tokens": 0, "kv_admitted": [["D", 4, 4]], "loading": ["D"], "cpu_loads": [["D", [1]]], "cpu_stores": [], "cpu_evicted": [], "cpu_blocks_used": 2, "cpu_blocks_ready": 2})",
        R"({"step": 3, "scheduled": [["D", 1, 7, 7]], "preempted": [], "finished": ["D"], "num_free_blocks": 2, "new": ["D"], "resumed": [], "running": 1, "waiting": 0, "num_scheduled_tokens": 1, "kv_admitted": [], "loading": [], "cpu_loads": [], "cpu_stores": [], "cpu_evicted": [], "cpu_blocks_used": 2, "cpu_blocks_ready": 2})",
    };
    CHECK(run.lines == want);
    const StepRequestSummary& d = run.summary.per_request[1];
    CHECK(d.hit_tokens == 7);
    CHECK(d.gpu_hit_tokens == 4);
    CHECK(d.cpu_hit_tokens == 4);
  }
}

TEST_CASE("offload, async: the finished request's store is ready only after the empty step") {
  // The table above under async scheduling. A finishes in step 0 (its only token); step 1
  // decides before step 0's output is applied, so A's token is in flight, A keeps its 2 blocks
  // and its running slot (2 free, running 1), and nothing is scheduled.
  //   1: D (arrived) hits 4 on the GPU; the CPU scan from block 1 meets A#1 in flight:
  //      deferred (waiting 1). Then step 0's output: A is freed. Step 1's output reports A's
  //      store (run in step 1): used 2, ready 2 — not earlier, so record 0 has ready 0.
  //   2: decided before step 1's output: A#1 is still in flight, D is deferred again, the
  //      step is empty (A's 2 blocks free again: 4 free, running 0).
  //   3: D: GPU 4 + CPU 4 = every token; 1 more block (2 free); load of A#1 starts.
  //   4: the load is reported with step 3's output, applied after this decision: still loading.
  //   5: D promoted at 8 → 7 (one token recomputed), samples and finishes; no stores (its
  //      cursor is past the loaded block). 6: D's token in flight: empty, D keeps 2 blocks.
  // The tier stays at A's 2 blocks throughout: no step stores anything after step 0.
  const std::vector<StepRequest> reqs{Req("A", Range(1, 8), 1, 0), Req("D", Range(1, 8), 1, 1)};
  auto rec = [](int step, const std::string& scheduled, const std::string& finished, int free,
                const std::string& is_new, int running, int waiting, int tokens,
                const std::string& admitted, const std::string& loading, const std::string& loads,
                const std::string& stores, int ready) {
    return "{\"step\": " + std::to_string(step) + ", \"scheduled\": " + scheduled +
           ", \"preempted\": [], \"finished\": " + finished +
           ", \"num_free_blocks\": " + std::to_string(free) + ", \"new\": " + is_new +
           ", \"resumed\": [], \"running\": " + std::to_string(running) +
           ", \"waiting\": " + std::to_string(waiting) +
           ", \"num_scheduled_tokens\": " + std::to_string(tokens) +
           ", \"kv_admitted\": " + admitted + ", \"loading\": " + loading +
           ", \"cpu_loads\": " + loads + ", \"cpu_stores\": " + stores +
           ", \"cpu_evicted\": [], \"cpu_blocks_used\": 2" +
           ", \"cpu_blocks_ready\": " + std::to_string(ready) + "}";
  };
  const std::vector<std::string> want{
      rec(0, R"([["A", 8, 0, 0]])", R"(["A"])", 2, R"(["A"])", 1, 0, 8, R"([["A", 0, 0]])", "[]",
          "[]", R"([["A", [0, 1]]])", 0),
      rec(1, "[]", "[]", 2, "[]", 1, 1, 0, "[]", "[]", "[]", "[]", 2),
      rec(2, "[]", "[]", 4, "[]", 0, 1, 0, "[]", "[]", "[]", "[]", 2),
      rec(3, "[]", "[]", 2, "[]", 0, 1, 0, R"([["D", 4, 4]])", R"(["D"])", R"([["D", [1]]])", "[]",
          2),
      rec(4, "[]", "[]", 2, "[]", 0, 1, 0, "[]", R"(["D"])", "[]", "[]", 2),
      rec(5, R"([["D", 1, 7, 7]])", R"(["D"])", 2, R"(["D"])", 1, 0, 1, "[]", "[]", "[]", "[]", 2),
      rec(6, "[]", "[]", 2, "[]", 1, 0, 0, "[]", "[]", "[]", "[]", 2),
  };
  for (VllmSemantics sem : {VllmSemantics::kClassic, VllmSemantics::kLatest}) {
    INFO("latest " << (sem == VllmSemantics::kLatest));
    StepClockConfig cfg = Config(4, 5, 8, sem, XferTiming::kInstant);
    cfg.sched.async_scheduling = true;
    CHECK(Drive(reqs, cfg).lines == want);
  }
}

TEST_CASE("offload, LRU: classic orders blocks at insert and touch, latest when they are ready") {
  // CPU tier of 2 blocks, a large GPU pool. A (5 tokens) stores A#0 in step 0, B stores B#0 in
  // step 1. Step 2: C (A's prompt) hits 4 on the GPU, so its CPU lookup gains nothing, but it
  // still touches its key A#0 — and stores nothing (A#0 is resident). Step 3: D's block needs a
  // slot: one eviction.
  //   classic: order after inserts and touches [A#0, B#0] → C's touch → [B#0, A#0]: B#0 goes.
  //   latest:  only ready blocks are ordered, from when they became ready: A#0 (ready after
  //            step 1's output) is touched by C; B#0 (ready after step 2's output) then enters
  //            behind it → [A#0, B#0]: A#0 goes.
  const std::vector<StepRequest> reqs{Req("A", Range(1, 5), 1, 0), Req("B", Range(101, 5), 1, 1),
                                      Req("C", Range(1, 5), 1, 2), Req("D", Range(201, 5), 1, 3)};
  for (VllmSemantics sem : {VllmSemantics::kClassic, VllmSemantics::kLatest}) {
    const Run run = Drive(reqs, Config(4, 40, 2, sem, XferTiming::kInstant));
    REQUIRE(run.lines.size() == 4);
    CHECK(run.lines[2].find(R"("scheduled": [["C", 1, 4, 4]])") != std::string::npos);
    CHECK(run.lines[2].find(R"("kv_admitted": [["C", 4, 0]])") != std::string::npos);
    CHECK(run.lines[2].find(R"("cpu_stores": [])") != std::string::npos);
    CHECK(run.lines[3].find(R"("cpu_stores": [["D", [0]]])") != std::string::npos);
    const std::string evicted = sem == VllmSemantics::kClassic ? R"("cpu_evicted": ["B#0"])"
                                                               : R"("cpu_evicted": ["A#0"])";
    CHECK(run.lines[3].find(evicted) != std::string::npos);
  }
}

TEST_CASE("offload: preemption, a resume looked up twice, classic stores an output block") {
  // Block 4, 4 usable GPU blocks, CPU tier 8. A (8 tokens) and B (7) fill the GPU in step 0 and
  // store A#0, A#1, B#0 (B's 7 tokens fill one block). Step 1: A's 9th token needs a block: B
  // is preempted. Step 2: B (8 known tokens) hits its cached block (4) on the GPU; the CPU
  // lookup from block 1 finds nothing (B#1 holds its output token, never stored); the
  // whole-prompt gate fails (1 block + the evictable hit block > 1 free): no admission. Step 3
  // (A finished): B resumes at 4. classic stores B#1 (its block holding the output token);
  // latest stores prompt blocks only.
  const std::vector<StepRequest> reqs{Req("A", Range(1, 8), 3), Req("B", Range(101, 7), 3)};
  for (VllmSemantics sem : {VllmSemantics::kClassic, VllmSemantics::kLatest}) {
    const bool classic = sem == VllmSemantics::kClassic;
    const Run run = Drive(reqs, Config(4, 5, 8, sem, XferTiming::kInstant));
    const std::string s3 = classic ? R"("cpu_stores": [["B", [1]]], "cpu_evicted": [], "cpu_blocks_used": 4, "cpu_blocks_ready": 3})"
                                   : R"("cpu_stores": [], "cpu_evicted": [], "cpu_blocks_used": 3, "cpu_blocks_ready": 3})";
    const std::string s4 = classic ? R"("cpu_blocks_used": 4, "cpu_blocks_ready": 4})"
                                   : R"("cpu_blocks_used": 3, "cpu_blocks_ready": 3})";
    const std::vector<std::string> want{
        R"({"step": 0, "scheduled": [["A", 8, 0, 0], ["B", 7, 0, 0]], "preempted": [], "finished": [], "num_free_blocks": 0, "new": ["A", "B"], "resumed": [], "running": 2, "waiting": 0, "num_scheduled_tokens": 15, "kv_admitted": [["A", 0, 0], ["B", 0, 0]], "loading": [], "cpu_loads": [], "cpu_stores": [["A", [0, 1]], ["B", [0]]], "cpu_evicted": [], "cpu_blocks_used": 3, "cpu_blocks_ready": 0})",
        R"({"step": 1, "scheduled": [["A", 1, 8, -1]], "preempted": ["B"], "finished": [], "num_free_blocks": 1, "new": [], "resumed": [], "running": 1, "waiting": 1, "num_scheduled_tokens": 1, "kv_admitted": [], "loading": [], "cpu_loads": [], "cpu_stores": [], "cpu_evicted": [], "cpu_blocks_used": 3, "cpu_blocks_ready": 3})",
        R"({"step": 2, "scheduled": [["A", 1, 9, -1]], "preempted": [], "finished": ["A"], "num_free_blocks": 1, "new": [], "resumed": [], "running": 1, "waiting": 1, "num_scheduled_tokens": 1, "kv_admitted": [], "loading": [], "cpu_loads": [], "cpu_stores": [], "cpu_evicted": [], "cpu_blocks_used": 3, "cpu_blocks_ready": 3})",
        R"({"step": 3, "scheduled": [["B", 4, 4, 4]], "preempted": [], "finished": [], "num_free_blocks": 2, "new": [], "resumed": ["B"], "running": 1, "waiting": 0, "num_scheduled_tokens": 4, "kv_admitted": [["B", 4, 0]], "loading": [], "cpu_loads": [], )" + s3,
        R"({"step": 4, "scheduled": [["B", 1, 8, -1]], "preempted": [], "finished": ["B"], "num_free_blocks": 1, "new": [], "resumed": [], "running": 1, "waiting": 0, "num_scheduled_tokens": 1, "kv_admitted": [], "loading": [], "cpu_loads": [], "cpu_stores": [], "cpu_evicted": [], )" + s4,
    };
    CHECK(run.lines == want);
    const StepRequestSummary& b = run.summary.per_request[1];
    CHECK(b.gpu_hit_tokens == 0);
    CHECK(b.cpu_hit_tokens == 0);
    CHECK(b.resume_gpu_hit_tokens == std::vector<int64_t>{4});
    CHECK(b.resume_cpu_hit_tokens == std::vector<int64_t>{0});
    CHECK(b.resume_hit_tokens == std::vector<int64_t>{4});
  }
}


TEST_CASE("offload: conservation and tier bounds on a tight multi-turn stream, every mode") {
  // Conversations that extend earlier prompts (so CPU hits happen), a GPU pool small enough
  // to preempt and evict, a CPU tier of 16 blocks. In every combination of sync/async,
  // classic/latest, LRU/ARC, offloaded block 1×/2× and both copy timings: the run ends; per
  // request sum(n) = prompt + max_tokens − 1 − Σ hits + Σ lost at preemption (step-log §5);
  // a CPU hit ends on an offloaded-block boundary (or covers the whole sequence); the tier
  // never holds more than its size.
  std::vector<StepRequest> reqs;
  for (int conv = 0; conv < 4; ++conv) {
    std::vector<TokenId> history = Range(1 + conv * 1000, 7 + 3 * conv);
    for (int turn = 0; turn < 3; ++turn) {
      const int64_t arrival = turn * 6 + conv;
      reqs.push_back(Req("c" + std::to_string(conv) + "t" + std::to_string(turn), history,
                         2 + (conv + turn) % 3, arrival));
      history = Concat(history, Range(500 + 100 * conv + 10 * turn, 5 + turn));
    }
  }
  for (bool async : {false, true})
    for (VllmSemantics sem : {VllmSemantics::kClassic, VllmSemantics::kLatest})
      for (CpuEvictionPolicyKind pol : {CpuEvictionPolicyKind::kLru, CpuEvictionPolicyKind::kArc})
        for (int64_t obs : {4, 8})
          for (XferTiming t : {XferTiming::kInstant, XferTiming::kNextStep}) {
            INFO("async " << async << " latest " << (sem == VllmSemantics::kLatest) << " arc "
                          << (pol == CpuEvictionPolicyKind::kArc) << " obs " << obs
                          << " next-step " << (t == XferTiming::kNextStep));
            StepClockConfig cfg = Config(4, 12, 16, sem, t, obs, pol);
            cfg.sched.max_num_batched_tokens = 16;
            cfg.sched.async_scheduling = async;
            std::vector<int64_t> sum_n(reqs.size()), computed(reqs.size()), lost(reqs.size());
            bool bounds_ok = true;
            auto s = RunStepClock(reqs, cfg, [&](const StepRecord& r) {
              for (int32_t p : r.preempted) {
                lost[static_cast<size_t>(p)] += computed[static_cast<size_t>(p)];
                computed[static_cast<size_t>(p)] = 0;
              }
              for (const auto& c : r.scheduled) {
                sum_n[static_cast<size_t>(c.request)] += c.num_tokens;
                computed[static_cast<size_t>(c.request)] = c.before + c.num_tokens;
              }
              for (const auto& a : r.kv_admitted) {
                const int64_t end = a.gpu_hit + a.cpu_hit;
                if (a.cpu_hit > 0 && end % obs != 0 &&
                    end != static_cast<int64_t>(reqs[static_cast<size_t>(a.request)].tokens.size()))
                  bounds_ok = false;
              }
              bounds_ok &= r.cpu_blocks_used <= 16 && r.cpu_blocks_ready <= r.cpu_blocks_used;
            });
            REQUIRE(s.ok());
            CHECK(bounds_ok);
            int64_t cpu_hits = 0;
            for (const StepRequestSummary& p : s->per_request) cpu_hits += p.cpu_hit_tokens;
            CHECK(cpu_hits > 0);  // the stream does exercise the tier
            for (size_t i = 0; i < reqs.size(); ++i) {
              const StepRequestSummary& p = s->per_request[i];
              int64_t hits = p.hit_tokens;
              for (int64_t h : p.resume_hit_tokens) hits += h;
              CHECK(sum_n[i] == static_cast<int64_t>(reqs[i].tokens.size()) +
                                    reqs[i].max_tokens - 1 - hits + lost[i]);
              CHECK(p.finish_step >= p.first_token_step);
            }
          }
}


TEST_CASE("offload, sliding window: a store is flushed when the window frees its source block "
          "and a request gets it") {
  // kv-offload.md §9 "early reuse": a sliding-window source block is watched from its store's
  // creation, since the window can free it while the request runs. Layout: a full-attention
  // group and a sliding-window group (window 4 tokens), GPU blocks of 4 tokens, 10 usable GPU
  // blocks (11 with the null block), next-step copies.
  //   step 0: A (16 tokens) takes 4 blocks per group: full 1-4, window 5-8 (free: 9, 10).
  //           Its store of offloaded blocks 0-3 of both groups (8 CPU blocks) is planned: it
  //           runs in step 1 and would be reported with step 2's output.
  //   step 1: A decodes. Its window skips tokens < 16 - 4 + 1 = 13, so window blocks 0-2
  //           (ids 7, 6, 5, freed last first) go back to the free queue; A takes 9 (full) and
  //           10 (window). B (4 tokens) arrives and takes 7 and 6 (classic: the freed blocks
  //           sit behind 9 and 10; latest: unhashed freed blocks go to the head and A's own
  //           new blocks are among 5-7). Either way a block A's store reads from was handed
  //           out, so the worker flushes the store: reported with step 1's output, the tier's
  //           8 blocks are ready when step 1 ends (without the flush: 0, ready only after
  //           step 2). B's own store adds 2 blocks (one per group).
  for (VllmSemantics sem : {VllmSemantics::kClassic, VllmSemantics::kLatest}) {
    CAPTURE(static_cast<int>(sem));
    StepClockConfig cfg = Config(4, 11, 16, sem, XferTiming::kNextStep);
    cfg.kv = KvCacheManagerConfigFromHybrid("swa:4", 4, 11).value();
    cfg.kv.semantics = sem;
    cfg.kv.max_num_batched_tokens = 100;
    OffloadOptions o;
    o.num_cpu_blocks = 16;
    cfg.offload = MakeOffloadConnectorConfig(cfg.kv, o).value();
    const std::vector<StepRequest> reqs{Req("A", Range(1, 16), 3, 0),
                                        Req("B", Range(101, 4), 1, 1)};
    const Run run = Drive(reqs, cfg);
    REQUIRE(run.lines.size() >= 3);
    CHECK(run.lines[0].find(R"("num_free_blocks": 2)") != std::string::npos);
    CHECK(run.lines[0].find(R"("cpu_blocks_used": 8, "cpu_blocks_ready": 0)") != std::string::npos);
    CHECK(run.lines[1].find(R"("scheduled": [["A", 1, 16, -1], ["B", 4, 0, 0]])") !=
          std::string::npos);
    CHECK(run.lines[1].find(R"("cpu_blocks_used": 10, "cpu_blocks_ready": 8)") !=
          std::string::npos);
    if (sem == VllmSemantics::kClassic) {
      CHECK(run.lines[1].find(R"("num_free_blocks": 1)") != std::string::npos);
    }
  }
  // Full attention only (no window): A's store is not flushed in step 1, the blocks A holds
  // are never handed out; it is reported with step 2's output (B's, planned in step 1, with
  // step 3's).
  {
    StepClockConfig cfg = Config(4, 11, 16, VllmSemantics::kClassic, XferTiming::kNextStep);
    const std::vector<StepRequest> reqs{Req("A", Range(1, 16), 3, 0),
                                        Req("B", Range(101, 4), 1, 1)};
    const Run run = Drive(reqs, cfg);
    REQUIRE(run.lines.size() >= 3);
    CHECK(run.lines[1].find(R"("cpu_blocks_used": 5, "cpu_blocks_ready": 0)") != std::string::npos);
    CHECK(run.lines[2].find(R"("cpu_blocks_used": 5, "cpu_blocks_ready": 4)") != std::string::npos);
  }
}

// Idle gaps (docs/step-log.md "Idle gaps and the last step"). A (8 tokens, 2 outputs) finishes
// in step 1; B (8 tokens, 1 output) arrives at step 6. Block 4 = offloaded block, 39 usable GPU
// blocks, a CPU tier of 16, instant copies. Worked by hand from step-log §2/§8 and
// kv-offload.md §3:
//   0: A prefills 8 (2 GPU blocks, 39 − 2 = 37 free), stores A#0, A#1 (in flight: used 2,
//      ready 0; the copy runs in step 1 and is reported with its output).
//   1: A decodes at 8 (3 blocks, 36 free) and samples its 2nd token: finished. Nothing new to
//      store (sync: 9 tokens, 2 full blocks, both stored; async: 8 known without the token in
//      flight). After the output: used 2, ready 2.
//   async 2: A's last token is in flight, so nothing is scheduled; A still holds its 3 blocks
//      and its running slot (36 free, running 1). Then nothing is unfinished and B is 4 steps
//      away: vLLM makes its flush decision (finished_req_ids = {A}, no record), applies step
//      2's outputs and only then waits for B. Step 2's tier is therefore 2 / 2 — B's store,
//      planned at step 6, must not be in it.
//   6: B prefills 8: A's 3 blocks are free again, B takes 2 (37 free) and stores B#0, B#1
//      (used 4, ready 2: reported with step 7's output). Sync ends here.
//   async 7: B's last token in flight: nothing scheduled (37 free, running 1). The trace is
//      done: the flush decision (no stores: B's prompt is stored), then step 7's output, which
//      reports B's store: used 4, ready 4.
// Nothing here depends on the free-queue order or the store visit order: both profiles agree.
TEST_CASE("offload: an empty step before an idle gap reports the tier before the next arrival") {
  const std::vector<StepRequest> reqs{Req("A", Range(1, 8), 2, 0), Req("B", Range(101, 8), 1, 6)};
  const std::string r0 =
      R"({"step": 0, "scheduled": [["A", 8, 0, 0]], "preempted": [], "finished": [], "num_free_blocks": 37, "new": ["A"], "resumed": [], "running": 1, "waiting": 0, "num_scheduled_tokens": 8, "kv_admitted": [["A", 0, 0]], "loading": [], "cpu_loads": [], "cpu_stores": [["A", [0, 1]]], "cpu_evicted": [], "cpu_blocks_used": 2, "cpu_blocks_ready": 0})";
  const std::string r1 =
      R"({"step": 1, "scheduled": [["A", 1, 8, -1]], "preempted": [], "finished": ["A"], "num_free_blocks": 36, "new": [], "resumed": [], "running": 1, "waiting": 0, "num_scheduled_tokens": 1, "kv_admitted": [], "loading": [], "cpu_loads": [], "cpu_stores": [], "cpu_evicted": [], "cpu_blocks_used": 2, "cpu_blocks_ready": 2})";
  const std::string r2 =
      R"({"step": 2, "scheduled": [], "preempted": [], "finished": [], "num_free_blocks": 36, "new": [], "resumed": [], "running": 1, "waiting": 0, "num_scheduled_tokens": 0, "kv_admitted": [], "loading": [], "cpu_loads": [], "cpu_stores": [], "cpu_evicted": [], "cpu_blocks_used": 2, "cpu_blocks_ready": 2})";
  const std::string r6 =
      R"({"step": 6, "scheduled": [["B", 8, 0, 0]], "preempted": [], "finished": ["B"], "num_free_blocks": 37, "new": ["B"], "resumed": [], "running": 1, "waiting": 0, "num_scheduled_tokens": 8, "kv_admitted": [["B", 0, 0]], "loading": [], "cpu_loads": [], "cpu_stores": [["B", [0, 1]]], "cpu_evicted": [], "cpu_blocks_used": 4, "cpu_blocks_ready": 2})";
  const std::string r7 =
      R"({"step": 7, "scheduled": [], "preempted": [], "finished": [], "num_free_blocks": 37, "new": [], "resumed": [], "running": 1, "waiting": 0, "num_scheduled_tokens": 0, "kv_admitted": [], "loading": [], "cpu_loads": [], "cpu_stores": [], "cpu_evicted": [], "cpu_blocks_used": 4, "cpu_blocks_ready": 4})";
  for (VllmSemantics sem : {VllmSemantics::kClassic, VllmSemantics::kLatest})
    for (bool async : {false, true}) {
      INFO("latest " << (sem == VllmSemantics::kLatest) << " async " << async);
      StepClockConfig cfg = Config(4, 40, 16, sem, XferTiming::kInstant);
      cfg.sched.async_scheduling = async;
      const Run run = Drive(reqs, cfg);
      const std::vector<std::string> want = async ? std::vector<std::string>{r0, r1, r2, r6, r7}
                                                  : std::vector<std::string>{r0, r1, r6};
      CHECK(run.lines == want);
    }
}

// The last stores of finished requests (kv-offload.md §3 "Finished requests"). r0 (16 tokens)
// and r1 (17) run together, 2 outputs each, CPU tier of 7, block 4 = offloaded block, 39
// usable GPU blocks, instant copies. By hand:
//   0: r0 stores its 4 blocks (7 slots → 3 free). r1's 4 blocks need 1 eviction, but r0's are
//      in flight, so the store fails and r1's cursor stays at 0. GPU: 4 + 5 blocks, 30 free.
//   1: both decode and finish (r0 17 → 5 blocks, r1 18 → 5 blocks: 29 free). r1 retries its
//      4 blocks: r0's store is reported only with this step's output, so the retry fails too.
//      After the output r0's blocks are ready: used 4, ready 4.
//   sync: the run ends (the flush decision after it writes no record).
//   async 2: both final tokens in flight: nothing scheduled, 29 free, running 2. Then the
//      flush decision (finished_req_ids = {r0, r1}) comes before step 2's output is applied:
//      classic visits no finished request, so step 2 shows used 4, ready 4; latest visits r1
//      once more (its prompt is 17 tokens: blocks 0-3), evicts one of r0's ready blocks and
//      stores 4: used 7, ready 3. No record lists that store (the flush decision has none).
TEST_CASE("offload: latest stores a finished request's blocks in the decision after it") {
  const std::vector<StepRequest> reqs{Req("r0", Range(1, 16), 2, 0),
                                      Req("r1", Range(1001, 17), 2, 0)};
  const std::string r0 =
      R"({"step": 0, "scheduled": [["r0", 16, 0, 0], ["r1", 17, 0, 0]], "preempted": [], "finished": [], "num_free_blocks": 30, "new": ["r0", "r1"], "resumed": [], "running": 2, "waiting": 0, "num_scheduled_tokens": 33, "kv_admitted": [["r0", 0, 0], ["r1", 0, 0]], "loading": [], "cpu_loads": [], "cpu_stores": [["r0", [0, 1, 2, 3]]], "cpu_evicted": [], "cpu_blocks_used": 4, "cpu_blocks_ready": 0})";
  const std::string r1 =
      R"({"step": 1, "scheduled": [["r0", 1, 16, -1], ["r1", 1, 17, -1]], "preempted": [], "finished": ["r0", "r1"], "num_free_blocks": 29, "new": [], "resumed": [], "running": 2, "waiting": 0, "num_scheduled_tokens": 2, "kv_admitted": [], "loading": [], "cpu_loads": [], "cpu_stores": [], "cpu_evicted": [], "cpu_blocks_used": 4, "cpu_blocks_ready": 4})";
  const std::string r2 =
      R"({"step": 2, "scheduled": [], "preempted": [], "finished": [], "num_free_blocks": 29, "new": [], "resumed": [], "running": 2, "waiting": 0, "num_scheduled_tokens": 0, "kv_admitted": [], "loading": [], "cpu_loads": [], "cpu_stores": [], "cpu_evicted": [], )";
  for (VllmSemantics sem : {VllmSemantics::kClassic, VllmSemantics::kLatest})
    for (bool async : {false, true}) {
      const bool latest = sem == VllmSemantics::kLatest;
      INFO("latest " << latest << " async " << async);
      StepClockConfig cfg = Config(4, 40, 7, sem, XferTiming::kInstant);
      cfg.sched.async_scheduling = async;
      const Run run = Drive(reqs, cfg);
      std::vector<std::string> want{r0, r1};
      // Async: step 2 is empty (both final tokens were in flight). Its record is complete
      // before the flush decision, in which latest stores r1's blocks (the 3 the tier has
      // room for): in both profiles it shows r0's 4 blocks only, all ready.
      if (async) want.push_back(r2 + R"("cpu_blocks_used": 4, "cpu_blocks_ready": 4})");
      CHECK(run.lines == want);
    }
}

TEST_CASE("offload: a timed copy takes latency + kernel launches + bytes over the link") {
  // 3 offloaded blocks of 1 MiB over 55 bytes/ns: ⌈3 · 1048576 / 55⌉ = 57196 ns on the wire,
  // + 10 µs latency + 2 kernels × 5 µs.
  CopyLinkModel link;
  link.bytes_per_ns = 55.0;
  link.latency_ns = 10'000;
  link.launch_ns = 5'000;
  link.kernels_per_job = 2;
  link.block_bytes = 1 << 20;
  CHECK(link.JobNanos(3) == 10'000 + 10'000 + 57'196);
  CHECK(link.JobNanos(0) == 20'000);
}

}  // namespace
}  // namespace kvsim
