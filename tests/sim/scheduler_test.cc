// Scheduler step tests: hand-worked cases of reference §6 driven through FakeKvAllocator.
#include "sim/scheduler/scheduler.h"

#include <catch2/catch_test_macros.hpp>
#include <deque>
#include <map>

#include "tests/sim/fake_kv_allocator.h"

namespace kvsim {
namespace {

using testing::FakeKvAllocator;

SimRequest Req(int64_t id, int64_t prompt, int64_t max_out = 100) {
  SimRequest r;
  r.id = RequestId{id};
  r.arrival_tick = id;
  r.num_prompt_tokens = prompt;
  r.num_tokens = prompt;
  r.max_output_tokens = max_out;
  return r;
}

// A running request in decode: prompt computed, `out` output tokens, the last not computed.
SimRequest Decoding(int64_t id, int64_t prompt, int64_t out) {
  SimRequest r = Req(id, prompt);
  r.status = RequestStatus::kRunning;
  r.num_output_tokens = out;
  r.num_tokens = prompt + out;
  r.num_computed_tokens = r.num_tokens - 1;
  r.num_cached_tokens = 0;
  return r;
}

std::map<int64_t, int64_t> Tokens(const StepPlan& p) {  // by request id
  std::map<int64_t, int64_t> m;
  for (const auto& c : p.scheduled) m[c.req->id.value()] = c.num_tokens;
  return m;
}

TEST_CASE("budget: decodes first, then the waiting prompt takes the rest as a chunk") {
  SchedulerParams p;
  p.max_num_batched_tokens = 100;
  SimRequest a = Decoding(1, 40, 3), b = Decoding(2, 40, 5), c = Req(3, 150);
  SchedulerState s;
  s.running = {&a, &b};
  s.AddWaiting(&c, p.policy);
  FakeKvAllocator kv(16, 1000);
  kv.Hold(a);  // pre-hold a's blocks
  kv.Hold(b);
  StepPlan plan = Schedule(p, s, kv);
  CHECK(Tokens(plan) == std::map<int64_t, int64_t>{{1, 1}, {2, 1}, {3, 98}});
  CHECK(plan.num_scheduled_tokens == 100);
  CHECK(c.num_computed_tokens == 98);
  CHECK(c.status == RequestStatus::kRunning);
  REQUIRE(s.running.size() == 3);
  CHECK(s.running[2] == &c);
  CHECK(s.waiting.empty());
  // Next step: c is now a running prefill and gets its remaining 52 tokens.
  a.num_tokens++, a.num_output_tokens++;
  b.num_tokens++, b.num_output_tokens++;
  plan = Schedule(p, s, kv);
  CHECK(Tokens(plan) == std::map<int64_t, int64_t>{{1, 1}, {2, 1}, {3, 52}});
}

TEST_CASE("chunked prefill: a 250-token prompt under a 100-token budget runs 100, 100, 50") {
  SchedulerParams p;
  p.max_num_batched_tokens = 100;
  SimRequest r = Req(7, 250);
  SchedulerState s;
  s.AddWaiting(&r, p.policy);
  FakeKvAllocator kv(16, 1000);
  std::vector<int64_t> chunks;
  for (int step = 0; step < 3; ++step) {
    StepPlan plan = Schedule(p, s, kv);
    REQUIRE(plan.scheduled.size() == 1);
    chunks.push_back(plan.scheduled[0].num_tokens);
    CHECK(plan.scheduled[0].new_admission == (step == 0));
  }
  CHECK(chunks == std::vector<int64_t>{100, 100, 50});
  CHECK(r.num_computed_tokens == 250);
  CHECK(kv.held(7) == 16);  // cdiv(250, 16)
}

TEST_CASE("chunked prefill off: a prompt larger than the budget waits") {
  SchedulerParams p;
  p.max_num_batched_tokens = 100;
  p.enable_chunked_prefill = false;
  SimRequest small = Req(1, 60), big = Req(2, 120), after = Req(3, 10);
  SchedulerState s;
  s.AddWaiting(&small, p.policy);
  s.AddWaiting(&big, p.policy);
  s.AddWaiting(&after, p.policy);
  FakeKvAllocator kv(16, 1000);
  StepPlan plan = Schedule(p, s, kv);
  // small fits (60); big (120) exceeds the remaining 40 and blocks everything behind it.
  CHECK(Tokens(plan) == std::map<int64_t, int64_t>{{1, 60}});
  CHECK(s.waiting.front() == &big);
}

TEST_CASE("prefix hit: the request starts at the hit and only computes the rest") {
  SchedulerParams p;
  SimRequest r = Req(5, 100);
  SchedulerState s;
  s.AddWaiting(&r, p.policy);
  FakeKvAllocator kv(16, 1000);
  kv.SetHit(5, 64);
  StepPlan plan = Schedule(p, s, kv);
  REQUIRE(plan.scheduled.size() == 1);
  CHECK(plan.scheduled[0].hit_tokens == 64);
  CHECK(plan.scheduled[0].num_tokens == 36);
  CHECK(plan.scheduled[0].num_computed_before == 64);
  CHECK(r.num_cached_tokens == 64);
  CHECK(r.num_computed_tokens == 100);
  REQUIRE(kv.calls.size() == 1);
  CHECK(kv.calls[0].args.num_new_computed_tokens == 64);
  CHECK(kv.calls[0].args.full_sequence_must_fit);
}

TEST_CASE("preemption: FCFS evicts the last running request and admits nobody this step") {
  SchedulerParams p;
  p.max_num_batched_tokens = 1000;
  // Three decoders, each holding exactly its 2 blocks of 16 (32 tokens computed, next token
  // crosses into a third block). Only one free block remains.
  SimRequest a = Decoding(1, 32, 1), b = Decoding(2, 32, 1), c = Decoding(3, 32, 1);
  SimRequest w = Req(4, 8);
  SchedulerState s;
  s.running = {&a, &b, &c};
  s.AddWaiting(&w, p.policy);
  FakeKvAllocator kv(16, 7);
  for (SimRequest* r : {&a, &b, &c}) kv.Hold(*r);
  REQUIRE(kv.num_free() == 1);
  StepPlan plan = Schedule(p, s, kv);
  // a takes the free block; b needs one: the victim is c (last), freeing 2 blocks; b takes
  // one. c is gone from RUNNING, so the running pass ends. w is not admitted.
  CHECK(Tokens(plan) == std::map<int64_t, int64_t>{{1, 1}, {2, 1}});
  REQUIRE(plan.preempted.size() == 1);
  CHECK(plan.preempted[0] == &c);
  CHECK(c.status == RequestStatus::kPreempted);
  CHECK(c.num_computed_tokens == 0);
  CHECK(c.num_preemptions == 1);
  REQUIRE(s.waiting.size() == 2);
  CHECK(s.waiting.front() == &c);  // preempted requests go to the front
  CHECK(s.waiting.back() == &w);
  CHECK(kv.num_free() == 1);
  CHECK(s.running == std::vector<SimRequest*>{&a, &b});
}

TEST_CASE("preemption: a request that must preempt itself stops the running pass") {
  SchedulerParams p;
  SimRequest a = Decoding(1, 32, 1);
  SchedulerState s;
  s.running = {&a};
  FakeKvAllocator kv(16, 2);
  kv.Hold(a);
  REQUIRE(kv.num_free() == 0);
  StepPlan plan = Schedule(p, s, kv);
  CHECK(plan.scheduled.empty());
  REQUIRE(plan.preempted.size() == 1);
  CHECK(plan.preempted[0] == &a);
  CHECK(s.running.empty());
  CHECK(s.waiting.front() == &a);
}

TEST_CASE("preemption: PRIORITY evicts the lowest priority and refunds its budget") {
  SchedulerParams p;
  p.policy = SchedulingPolicy::kPriority;
  p.max_num_batched_tokens = 10;
  SimRequest lo = Decoding(1, 32, 1), hi = Decoding(2, 32, 1);
  lo.priority = 5;
  hi.priority = 0;
  SchedulerState s;
  s.running = {&lo, &hi};  // lo was admitted first and gets scheduled first
  FakeKvAllocator kv(16, 5);
  kv.Hold(lo);
  kv.Hold(hi);
  REQUIRE(kv.num_free() == 1);
  StepPlan plan = Schedule(p, s, kv);
  // lo takes the last block; hi needs one, the victim is lo (priority 5), already scheduled:
  // its token is refunded and it leaves the plan.
  CHECK(Tokens(plan) == std::map<int64_t, int64_t>{{2, 1}});
  CHECK(plan.num_scheduled_tokens == 1);
  REQUIRE(plan.preempted.size() == 1);
  CHECK(plan.preempted[0] == &lo);
  CHECK(lo.num_computed_tokens == 0);
  CHECK(hi.num_computed_tokens == 33);
}

TEST_CASE("head-of-line blocking: a waiting request that does not fit stops admissions") {
  SchedulerParams p;
  SimRequest big = Req(1, 100), small = Req(2, 10);
  SchedulerState s;
  s.AddWaiting(&big, p.policy);
  s.AddWaiting(&small, p.policy);
  FakeKvAllocator kv(16, 4);  // 64 tokens: big's full prompt does not fit
  StepPlan plan = Schedule(p, s, kv);
  CHECK(plan.scheduled.empty());
  CHECK(s.waiting.size() == 2);
  CHECK(kv.num_free() == 4);
}

TEST_CASE("full-prompt check: a chunk that fits is refused when the whole prompt does not") {
  SchedulerParams p;
  p.max_num_batched_tokens = 32;
  SimRequest r = Req(1, 100);
  SchedulerState s;
  s.AddWaiting(&r, p.policy);
  FakeKvAllocator kv(16, 4);
  CHECK(Schedule(p, s, kv).scheduled.empty());
  p.full_sequence_must_fit = false;  // the first 32-token chunk needs only 2 blocks
  StepPlan plan = Schedule(p, s, kv);
  CHECK(Tokens(plan) == std::map<int64_t, int64_t>{{1, 32}});
}

TEST_CASE("max_num_seqs caps the running list") {
  SchedulerParams p;
  p.max_num_seqs = 2;
  SimRequest a = Req(1, 10), b = Req(2, 10), c = Req(3, 10);
  SchedulerState s;
  for (SimRequest* r : {&a, &b, &c}) s.AddWaiting(r, p.policy);
  FakeKvAllocator kv(16, 100);
  StepPlan plan = Schedule(p, s, kv);
  CHECK(plan.scheduled.size() == 2);
  CHECK(s.waiting.front() == &c);
}

TEST_CASE("long_prefill_token_threshold caps each request's chunk") {
  SchedulerParams p;
  p.long_prefill_token_threshold = 40;
  SimRequest a = Req(1, 100), b = Req(2, 100);
  SchedulerState s;
  s.AddWaiting(&a, p.policy);
  s.AddWaiting(&b, p.policy);
  FakeKvAllocator kv(16, 100);
  CHECK(Tokens(Schedule(p, s, kv)) == std::map<int64_t, int64_t>{{1, 40}, {2, 40}});
}

TEST_CASE("max_model_len: a running request never computes position max_model_len") {
  SchedulerParams p;
  p.max_model_len = 50;
  SimRequest a = Decoding(1, 40, 9);  // 49 tokens, 48 computed
  SchedulerState s;
  s.running = {&a};
  FakeKvAllocator kv(16, 100);
  CHECK(Tokens(Schedule(p, s, kv)) == std::map<int64_t, int64_t>{{1, 1}});
  a.num_tokens = 50, a.num_output_tokens = 10;  // 49 computed; 50 − 1 − 49 = 0 left
  CHECK(Schedule(p, s, kv).scheduled.empty());
}

TEST_CASE("spec decode: running requests verify their drafts with lookahead slots") {
  SchedulerParams p;
  p.num_lookahead_tokens = 3;
  SimRequest d = Decoding(1, 20, 2);  // 22 tokens, 21 computed
  d.num_spec_tokens = 3;
  SimRequest w = Req(2, 30);
  SchedulerState s;
  s.running = {&d};
  s.AddWaiting(&w, p.policy);
  FakeKvAllocator kv(16, 100);
  StepPlan plan = Schedule(p, s, kv);
  REQUIRE(plan.scheduled.size() == 2);
  CHECK(plan.scheduled[0].num_tokens == 4);  // the last sampled token + 3 drafts
  CHECK(plan.scheduled[0].num_spec_tokens == 3);
  CHECK(d.num_computed_tokens == 25);
  REQUIRE(kv.calls.size() == 2);
  CHECK(kv.calls[0].args.num_lookahead_tokens == 3);
  CHECK(kv.calls[1].args.num_lookahead_tokens == 0);  // new admissions prefill without drafts
  // 21 computed + 4 + 3 lookahead = 28 tokens → 2 blocks of 16.
  CHECK(kv.held(1) == 2);
}

TEST_CASE("spec decode: a budget cut trims the drafts first") {
  SchedulerParams p;
  p.max_num_batched_tokens = 2;
  SimRequest d = Decoding(1, 20, 2);
  d.num_spec_tokens = 3;
  SchedulerState s;
  s.running = {&d};
  FakeKvAllocator kv(16, 100);
  StepPlan plan = Schedule(p, s, kv);
  REQUIRE(plan.scheduled.size() == 1);
  CHECK(plan.scheduled[0].num_tokens == 2);
  CHECK(plan.scheduled[0].num_spec_tokens == 1);
}

TEST_CASE("Mamba align split: chunks end on block boundaries (reference §6 example)") {
  // B = 544, budget 8192: chunks of 15 × 544 = 8160 until the last, which takes the rest
  // up to the last cacheable boundary, then the tail.
  SchedulerParams p;
  p.mamba_align_split = true;
  SimRequest r = Req(1, 20000);
  SchedulerState s;
  s.AddWaiting(&r, p.policy);
  FakeKvAllocator kv(544, 1000);
  kv.mamba_align = true;
  std::vector<int64_t> chunks;
  while (r.num_computed_tokens < r.num_tokens) {
    StepPlan plan = Schedule(p, s, kv);
    REQUIRE(plan.scheduled.size() == 1);
    chunks.push_back(plan.scheduled[0].num_tokens);
  }
  // 20000 = 36 × 544 + 416: last boundary 19584. 8160, 8160, then 19584 − 16320 = 3264,
  // then the 416-token tail.
  CHECK(chunks == std::vector<int64_t>{8160, 8160, 3264, 416});
}

TEST_CASE("Mamba align split: a resumed request replaying its outputs asks the allocator too") {
  // [latest] _mamba_block_aligned_split applies while start < max(prompt, num_tokens − 1), so
  // a resumed request whose replay covers output tokens is split as a prefill. The scheduler
  // leaves that decision to the allocator: it asks for every chunk (the classic rule, used by
  // the fake allocator, then returns the chunk unchanged because the request has outputs).
  SchedulerParams p;
  p.mamba_align_split = true;
  SimRequest r = Req(1, 40);
  r.num_output_tokens = 5;
  r.num_tokens = 45;
  r.status = RequestStatus::kPreempted;
  SchedulerState s;
  s.AddWaiting(&r, p.policy);
  struct CountingKv : testing::FakeKvAllocator {
    using FakeKvAllocator::FakeKvAllocator;
    int asked = 0;
    int64_t AlignChunk(const SimRequest& q, int64_t start, int64_t n, int64_t sp,
                       int64_t limit) override {
      ++asked;
      return FakeKvAllocator::AlignChunk(q, start, n, sp, limit);
    }
  } kv(16, 100);
  kv.mamba_align = true;
  StepPlan plan = Schedule(p, s, kv);
  CHECK(kv.asked == 1);
  REQUIRE(plan.scheduled.size() == 1);
  CHECK(plan.scheduled[0].num_tokens == 45);  // classic: no split once there are outputs
  CHECK(plan.scheduled[0].resumed);
}

TEST_CASE("Mamba align split: the worked cases of the rule") {
  // (start, n, num_tokens, B, eagle, limit) → tokens
  struct Case {
    int64_t start, n, num_tokens, b;
    bool eagle;
    int64_t limit, want;
  };
  const std::vector<Case> cases = {
      {0, 8192, 20000, 544, false, 8192, 8160},   // round down to 15 blocks
      {0, 2010, 2010, 1056, false, 8192, 1056},   // stop at the last cacheable boundary
      {1056, 954, 2010, 1056, false, 8192, 954},  // the tail after it
      {0, 2010, 2010, 1056, true, 8192, 2010},    // EAGLE: last boundary one block earlier (0)
      {0, 3000, 3000, 1056, true, 8192, 1056},    // EAGLE: boundary 2112 − 1056
      {0, 500, 3000, 1056, false, 500, 500},      // block > limit: keep the unaligned chunk
      {0, 500, 3000, 1056, false, 8192, 0},       // otherwise wait for a bigger budget
      // A mid-block start is not realigned in classic: vLLM rounds the chunk's length
      // (num_new_tokens // block_size * block_size), 2000 → 1632, ending at 1732.
      {100, 2000, 5000, 544, false, 8192, 1632},
      {0, 544, 544, 544, false, 8192, 544},       // whole prompt one block: tail rule
  };
  for (const Case& c : cases) {
    INFO("start " << c.start << " n " << c.n << " tokens " << c.num_tokens << " B " << c.b);
    CHECK(ClassicMambaAlignedSplit(c.start, c.n, c.num_tokens, c.num_tokens, c.b, c.eagle,
                                   c.limit) == c.want);
  }
}

TEST_CASE("PRIORITY: waiting order is (priority, arrival)") {
  SchedulerParams p;
  p.policy = SchedulingPolicy::kPriority;
  p.max_num_seqs = 1;
  SimRequest a = Req(1, 10), b = Req(2, 10), c = Req(3, 10);
  a.priority = 2, b.priority = 1, c.priority = 1;
  SchedulerState s;
  for (SimRequest* r : {&a, &b, &c}) s.AddWaiting(r, p.policy);
  CHECK(s.waiting[0] == &b);
  CHECK(s.waiting[1] == &c);
  CHECK(s.waiting[2] == &a);
}

}  // namespace
}  // namespace kvsim
