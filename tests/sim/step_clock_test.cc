// The step clock (`kvsim schedule`) against step tables worked out by hand from the rules of
// docs/step-log.md §2–§6 (vLLM's scheduler facts). Every expected record below was derived on
// paper: blocks = ceil(tokens / block), the free queue's order, the caps on hits.
#include <catch2/catch_test_macros.hpp>

#include <string>
#include <vector>

#include "core/vllm_semantics.h"
#include "sim/instance/step_clock.h"

namespace kvsim {
namespace {

StepRequest Req(std::string id, std::vector<TokenId> tokens, int64_t max_tokens,
                int64_t arrival = 0, int64_t priority = 0) {
  StepRequest r;
  r.id = std::move(id);
  r.tokens = std::move(tokens);
  r.max_tokens = max_tokens;
  r.arrival_step = arrival;
  r.priority = priority;
  return r;
}

std::vector<TokenId> Range(TokenId first, int n) {
  std::vector<TokenId> v;
  for (int i = 0; i < n; ++i) v.push_back(first + i);
  return v;
}

StepClockConfig Config(int64_t block, int64_t num_blocks, bool async = false,
                       VllmSemantics sem = VllmSemantics::kLatest) {
  StepClockConfig c;
  c.kv = KvCacheManagerConfigFromHybrid("", block, num_blocks).value();
  c.kv.semantics = sem;
  c.sched.max_num_batched_tokens = 100;
  c.sched.max_num_seqs = 16;
  c.sched.max_model_len = 1 << 20;
  c.sched.async_scheduling = async;
  c.kv.max_num_batched_tokens = 100;
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

}  // namespace

TEST_CASE("step clock, sync: a prompt is prefilled, decodes, finishes and frees its blocks") {
  // Block 4, 9 usable blocks. A: 6 prompt tokens, 3 outputs. Step 0 computes 6 tokens in 2
  // blocks and samples; steps 1 and 2 decode one token each (7 and 8 tokens: still 2
  // blocks); step 2 samples the 3rd token, so A finishes there.
  const std::vector<StepRequest> reqs{Req("A", Range(1, 6), 3)};
  const Run run = Drive(reqs, Config(4, 10));
  const std::vector<std::string> want{
      R"({"step": 0, "scheduled": [["A", 6, 0, 0]], "preempted": [], "finished": [], "num_free_blocks": 7, "new": ["A"], "resumed": [], "running": 1, "waiting": 0, "num_scheduled_tokens": 6})",
      R"({"step": 1, "scheduled": [["A", 1, 6, -1]], "preempted": [], "finished": [], "num_free_blocks": 7, "new": [], "resumed": [], "running": 1, "waiting": 0, "num_scheduled_tokens": 1})",
      R"({"step": 2, "scheduled": [["A", 1, 7, -1]], "preempted": [], "finished": ["A"], "num_free_blocks": 7, "new": [], "resumed": [], "running": 1, "waiting": 0, "num_scheduled_tokens": 1})",
  };
  CHECK(run.lines == want);
  CHECK(run.summary.steps == 3);
  CHECK(run.summary.per_request[0].first_token_step == 0);
  CHECK(run.summary.per_request[0].finish_step == 2);
}

TEST_CASE("step clock, async: the final token in flight is not scheduled; blocks held a step") {
  // The same request with async scheduling. Step 1 is decided before step 0's token lands:
  // A wants its in-flight token (n = 1). Step 3 is decided while A's 3rd token (sampled in
  // step 2) is in flight: A is skipped, so step 3 is empty, and A still holds its 2 blocks
  // and its running slot.
  const std::vector<StepRequest> reqs{Req("A", Range(1, 6), 3)};
  const Run run = Drive(reqs, Config(4, 10, /*async=*/true));
  const std::vector<std::string> want{
      R"({"step": 0, "scheduled": [["A", 6, 0, 0]], "preempted": [], "finished": [], "num_free_blocks": 7, "new": ["A"], "resumed": [], "running": 1, "waiting": 0, "num_scheduled_tokens": 6})",
      R"({"step": 1, "scheduled": [["A", 1, 6, -1]], "preempted": [], "finished": [], "num_free_blocks": 7, "new": [], "resumed": [], "running": 1, "waiting": 0, "num_scheduled_tokens": 1})",
      R"({"step": 2, "scheduled": [["A", 1, 7, -1]], "preempted": [], "finished": ["A"], "num_free_blocks": 7, "new": [], "resumed": [], "running": 1, "waiting": 0, "num_scheduled_tokens": 1})",
      R"({"step": 3, "scheduled": [], "preempted": [], "finished": [], "num_free_blocks": 7, "new": [], "resumed": [], "running": 1, "waiting": 0, "num_scheduled_tokens": 0})",
  };
  CHECK(run.lines == want);
  CHECK(run.summary.per_request[0].finish_step == 2);
}

TEST_CASE("step clock: FCFS preempts the last running request; it resumes with its hit") {
  // Block 4, 4 usable blocks. A (8 tokens) and B (7 tokens) fill all 4 blocks in step 0.
  // Step 1: A's 9th token needs a 3rd block: B (last running) is preempted, no admissions.
  // Step 2: A finishes; B (8 known tokens: 7 + its output) hits its cached first block (4
  // tokens), but the whole-prompt gate needs 1 block + the evictable hit block = 2 > 1 free.
  // Step 3: A's 3 blocks are free again; B resumes at 4 with a 4-token chunk. Step 4: B's
  // 9th token takes a 3rd block; B finishes.
  const std::vector<StepRequest> reqs{Req("A", Range(1, 8), 3), Req("B", Range(101, 7), 3)};
  for (VllmSemantics sem : {VllmSemantics::kClassic, VllmSemantics::kLatest}) {
    const Run run = Drive(reqs, Config(4, 5, false, sem));
    const std::vector<std::string> want{
        R"({"step": 0, "scheduled": [["A", 8, 0, 0], ["B", 7, 0, 0]], "preempted": [], "finished": [], "num_free_blocks": 0, "new": ["A", "B"], "resumed": [], "running": 2, "waiting": 0, "num_scheduled_tokens": 15})",
        R"({"step": 1, "scheduled": [["A", 1, 8, -1]], "preempted": ["B"], "finished": [], "num_free_blocks": 1, "new": [], "resumed": [], "running": 1, "waiting": 1, "num_scheduled_tokens": 1})",
        R"({"step": 2, "scheduled": [["A", 1, 9, -1]], "preempted": [], "finished": ["A"], "num_free_blocks": 1, "new": [], "resumed": [], "running": 1, "waiting": 1, "num_scheduled_tokens": 1})",
        R"({"step": 3, "scheduled": [["B", 4, 4, 4]], "preempted": [], "finished": [], "num_free_blocks": 2, "new": [], "resumed": ["B"], "running": 1, "waiting": 0, "num_scheduled_tokens": 4})",
        R"({"step": 4, "scheduled": [["B", 1, 8, -1]], "preempted": [], "finished": ["B"], "num_free_blocks": 1, "new": [], "resumed": [], "running": 1, "waiting": 0, "num_scheduled_tokens": 1})",
    };
    CHECK(run.lines == want);
    const StepRequestSummary& b = run.summary.per_request[1];
    CHECK(b.hit_tokens == 0);
    CHECK(b.resume_hit_tokens == std::vector<int64_t>{4});
    CHECK(b.num_preemptions == 1);
    CHECK(b.finish_step == 4);
    CHECK(run.summary.total_preemptions == 1);
  }
}

TEST_CASE("step clock: latest puts a freed unhashed block at the head, classic at the tail") {
  // Block 4, 3 usable blocks (b1 b2 b3). A = [1 2 3 4] caches b1 and frees it (tail). C (2
  // tokens) takes b2 and frees it unhashed: classic appends it (queue b3 b1 b2), latest
  // prepends it (b2 b3 b1). D (8 tokens) takes two blocks from the head: classic evicts A's
  // b1, latest keeps it. E = [1..6] then hits 4 tokens in latest only.
  const std::vector<StepRequest> reqs{Req("A", {1, 2, 3, 4}, 1, 0), Req("C", {9, 9}, 1, 1),
                                      Req("D", Range(20, 8), 1, 2), Req("E", Range(1, 6), 1, 3)};
  const Run classic = Drive(reqs, Config(4, 4, false, VllmSemantics::kClassic));
  const Run latest = Drive(reqs, Config(4, 4, false, VllmSemantics::kLatest));
  REQUIRE(classic.lines.size() == 4);
  REQUIRE(latest.lines.size() == 4);
  CHECK(classic.lines[3] ==
        R"({"step": 3, "scheduled": [["E", 6, 0, 0]], "preempted": [], "finished": ["E"], "num_free_blocks": 1, "new": ["E"], "resumed": [], "running": 1, "waiting": 0, "num_scheduled_tokens": 6})");
  CHECK(latest.lines[3] ==
        R"({"step": 3, "scheduled": [["E", 2, 4, 4]], "preempted": [], "finished": ["E"], "num_free_blocks": 1, "new": ["E"], "resumed": [], "running": 1, "waiting": 0, "num_scheduled_tokens": 2})");
  for (const Run* r : {&classic, &latest}) {
    CHECK(r->lines[0].find(R"("num_free_blocks": 2)") != std::string::npos);
    CHECK(r->lines[1].find(R"("num_free_blocks": 2)") != std::string::npos);
    CHECK(r->lines[2].find(R"("num_free_blocks": 1)") != std::string::npos);
  }
}

TEST_CASE("step clock: a twin admitted later in the same step hits the blocks just allocated") {
  // Blocks are cached when allocated. Twins of 9 tokens (block 4): the second hits 2 blocks
  // (8 tokens, under the cap of 9 - 1). Twins of 8 tokens: the cap 7 rounds the hit down to 4.
  const std::vector<StepRequest> nine{Req("a", Range(1, 9), 1), Req("b", Range(1, 9), 1)};
  const Run r9 = Drive(nine, Config(4, 20));
  CHECK(r9.lines[0].find(R"("scheduled": [["a", 9, 0, 0], ["b", 1, 8, 8]])") != std::string::npos);
  CHECK(r9.lines[0].find(R"("num_free_blocks": 15)") != std::string::npos);
  const std::vector<StepRequest> eight{Req("a", Range(1, 8), 1), Req("b", Range(1, 8), 1)};
  const Run r8 = Drive(eight, Config(4, 20));
  CHECK(r8.lines[0].find(R"("scheduled": [["a", 8, 0, 0], ["b", 4, 4, 4]])") != std::string::npos);
}

TEST_CASE("step clock: PRIORITY preempts an already scheduled request and refunds its tokens") {
  // Block 4, 3 usable blocks. Y (priority 1, 2 tokens) arrives at step 0, X (priority 0, 8
  // tokens) at step 1; both run. Step 2: Y decodes within its block and is scheduled; X's 9th
  // token needs a 3rd block, none is free; the victim is the largest (priority, arrival): Y,
  // already scheduled: its token returns to the budget and its block to the pool.
  StepClockConfig cfg = Config(4, 4);
  cfg.sched.policy = SchedulingPolicy::kPriority;
  const std::vector<StepRequest> reqs{Req("y", {1, 2}, 5, 0, 1), Req("x", Range(11, 8), 5, 1, 0)};
  const Run run = Drive(reqs, cfg);
  REQUIRE(run.lines.size() >= 3);
  CHECK(run.lines[1].find(R"("scheduled": [["y", 1, 2, -1], ["x", 8, 0, 0]])") !=
        std::string::npos);
  CHECK(run.lines[2] ==
        R"({"step": 2, "scheduled": [["x", 1, 8, -1]], "preempted": ["y"], "finished": [], "num_free_blocks": 0, "new": [], "resumed": [], "running": 1, "waiting": 1, "num_scheduled_tokens": 1})");
}

TEST_CASE("step clock: PRIORITY + async, a skipped victim before the position hides the next") {
  // Block 4, 4 usable blocks. A (priority 1, 4 tokens, 2 outputs) runs alone in step 0; B and C
  // (priority 0) join in step 1, when A decodes its 2nd (final) token: 0 blocks free. Step 2 is
  // decided before that token lands: A is skipped (final token in flight); B's 5th token needs
  // a block; the victim is A (largest priority, arrival), before B and not scheduled. vLLM
  // removes it from the running list without moving its position back, so after B the position
  // is past the end: C gets nothing this step.
  const std::vector<StepRequest> reqs{Req("A", Range(1, 4), 2, 0, 1),
                                      Req("B", Range(101, 4), 5, 1, 0),
                                      Req("C", Range(201, 3), 5, 1, 0)};
  StepClockConfig cfg = Config(4, 5, /*async=*/true, VllmSemantics::kClassic);
  cfg.sched.policy = SchedulingPolicy::kPriority;
  const Run run = Drive(reqs, cfg);
  REQUIRE(run.lines.size() >= 3);
  CHECK(run.lines[0] == R"({"step": 0, "scheduled": [["A", 4, 0, 0]], "preempted": [], "finished": [], "num_free_blocks": 3, "new": ["A"], "resumed": [], "running": 1, "waiting": 0, "num_scheduled_tokens": 4})");
  CHECK(run.lines[1] == R"({"step": 1, "scheduled": [["A", 1, 4, -1], ["B", 4, 0, 0], ["C", 3, 0, 0]], "preempted": [], "finished": ["A"], "num_free_blocks": 0, "new": ["B", "C"], "resumed": [], "running": 3, "waiting": 0, "num_scheduled_tokens": 8})");
  CHECK(run.lines[2] == R"({"step": 2, "scheduled": [["B", 1, 4, -1]], "preempted": ["A"], "finished": [], "num_free_blocks": 1, "new": [], "resumed": [], "running": 2, "waiting": 1, "num_scheduled_tokens": 1})");
}

TEST_CASE("step clock [latest]: the watermark holds back a waiting request while others run") {
  // Block 4, 9 usable blocks, watermark 0.2 → int(0.2 · 10) = 2 blocks. Step 0: A (8 tokens, 2
  // blocks) is admitted with nothing running (no watermark); B (20 tokens, 5 blocks) needs
  // 5 + 2 ≤ 7 free: admitted; C (4 tokens, 1 block) needs 1 + 2 > 2: the waiting pass stops
  // (without the watermark C would fit). A and B finish; step 1 admits C with nothing running.
  const std::vector<StepRequest> reqs{Req("A", Range(1, 8), 1), Req("B", Range(101, 20), 1),
                                      Req("C", Range(201, 4), 1)};
  StepClockConfig cfg = Config(4, 10, false, VllmSemantics::kLatest);
  cfg.watermark_blocks = 2;
  const Run run = Drive(reqs, cfg);
  const std::vector<std::string> want{
      R"({"step": 0, "scheduled": [["A", 8, 0, 0], ["B", 20, 0, 0]], "preempted": [], "finished": ["A", "B"], "num_free_blocks": 2, "new": ["A", "B"], "resumed": [], "running": 2, "waiting": 1, "num_scheduled_tokens": 28})",
      R"({"step": 1, "scheduled": [["C", 4, 0, 0]], "preempted": [], "finished": ["C"], "num_free_blocks": 8, "new": ["C"], "resumed": [], "running": 1, "waiting": 0, "num_scheduled_tokens": 4})",
  };
  CHECK(run.lines == want);
  cfg.watermark_blocks = 0;
  const Run off = Drive(reqs, cfg);
  REQUIRE(!off.lines.empty());
  CHECK(off.lines[0].find(R"(["C", 4, 0, 0])") != std::string::npos);
}

TEST_CASE("step clock: idle gaps jump to the next arrival; a request that never fits is stuck") {
  const std::vector<StepRequest> reqs{Req("a", {1, 2}, 1, 5), Req("b", {3}, 1, 9)};
  const Run run = Drive(reqs, Config(4, 10));
  REQUIRE(run.lines.size() == 2);
  CHECK(run.lines[0].rfind(R"({"step": 5,)", 0) == 0);
  CHECK(run.lines[1].rfind(R"({"step": 9,)", 0) == 0);
  // 3 usable blocks of 4 tokens cannot hold a 20-token prompt.
  const std::vector<StepRequest> big{Req("big", Range(1, 20), 1)};
  auto s = RunStepClock(big, Config(4, 4), nullptr);
  REQUIRE(!s.ok());
  CHECK(s.status().code() == "never_scheduled");
  // 20 tokens in blocks of 4 need 5 blocks; 3 are usable.
  CHECK(s.status().message().find("20 tokens need 5 blocks of 4 tokens; 3 usable blocks") !=
        std::string::npos);
}

TEST_CASE("step clock: conservation of computed tokens per request (step-log §5)") {
  // sum(n) = prompt + max_tokens - 1 - sum(hits) + sum(before + n at each preemption), on a
  // stream tight enough to preempt, in every mode.
  std::vector<StepRequest> reqs;
  for (int i = 0; i < 12; ++i) {
    reqs.push_back(Req("r" + std::to_string(i), Range(1 + (i % 3) * 50, 9 + i), 4 + i % 5, i / 3));
  }
  for (bool async : {false, true}) {
    for (VllmSemantics sem : {VllmSemantics::kClassic, VllmSemantics::kLatest}) {
      StepClockConfig cfg = Config(4, 12, async, sem);
      cfg.sched.max_num_batched_tokens = 16;
      std::vector<int64_t> sum_n(reqs.size()), computed(reqs.size()), lost(reqs.size());
      auto s = RunStepClock(reqs, cfg, [&](const StepRecord& r) {
        for (int32_t p : r.preempted) {
          lost[static_cast<size_t>(p)] += computed[static_cast<size_t>(p)];
          computed[static_cast<size_t>(p)] = 0;
        }
        for (const auto& c : r.scheduled) {
          sum_n[static_cast<size_t>(c.request)] += c.num_tokens;
          computed[static_cast<size_t>(c.request)] = c.before + c.num_tokens;
        }
      });
      REQUIRE(s.ok());
      for (size_t i = 0; i < reqs.size(); ++i) {
        const StepRequestSummary& p = s->per_request[i];
        int64_t hits = p.hit_tokens;
        for (int64_t h : p.resume_hit_tokens) hits += h;
        CHECK(sum_n[i] == static_cast<int64_t>(reqs[i].tokens.size()) + reqs[i].max_tokens - 1 -
                              hits + lost[i]);
        CHECK(p.finish_step >= p.first_token_step);
      }
    }
  }
}

}  // namespace kvsim
