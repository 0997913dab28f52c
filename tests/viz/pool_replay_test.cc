// PoolReplay steps the KV cache manager one request at a time for the Block pool panel; its
// totals must equal sim/replay's Replay() on the same trace and pool, and the pool state it
// shows must keep the pool's invariants.
#include "viz/pool_replay.h"

#include <catch2/catch_test_macros.hpp>
#include <cmath>

#include "sim/replay/replay.h"
#include "viz/plan_model.h"

namespace kvsim::viz {
namespace {

KvCacheManagerConfig ConfigFor(std::vector<std::string> overrides, int64_t num_blocks) {
  auto m = PlanModel::Load("", overrides);
  REQUIRE(m.ok());
  REQUIRE(m->ok());
  auto c = KvCacheManagerConfigFromPlan(m->plan());
  REQUIRE(c.ok());
  if (num_blocks > 0) c.value().num_blocks = num_blocks;
  return c.value();
}

void CheckAgainstReplay(const std::string& trace_path, const KvCacheManagerConfig& cfg,
                        int64_t concurrency) {
  auto trace = LoadTrace(trace_path);
  REQUIRE(trace.ok());
  ReplayOptions ro;
  ro.concurrency = concurrency;
  const ReplayResult want = Replay(trace.value(), cfg, ro);
  PoolReplayOptions po;
  po.concurrency = concurrency;
  auto r = PoolReplay::Create(trace.value(), cfg, po);
  REQUIRE(r.ok());
  PoolReplay& p = *r.value();
  INFO(trace_path << " concurrency " << concurrency << " blocks " << cfg.num_blocks);
  CHECK(p.num_steps() == want.requests);
  CHECK(p.total_hit_tokens() == want.hit_tokens);
  CHECK(p.total_prompt_tokens() == want.prompt_tokens);
  int64_t served = 0;
  for (const auto& s : p.steps()) served += s.served;
  CHECK(served == want.served);
  // Scrub forwards and back: the state at t is the same however it was reached.
  p.SeekTo(p.num_steps() - 1);
  const int64_t free_end = p.manager().num_free_blocks();
  p.SeekTo(p.num_steps() / 2);
  p.manager().CheckInvariants();
  const int64_t free_mid = p.manager().num_free_blocks();
  p.SeekTo(p.num_steps() - 1);
  CHECK(p.manager().num_free_blocks() == free_end);
  p.SeekTo(p.num_steps() / 2);
  CHECK(p.manager().num_free_blocks() == free_mid);
  // Every block held is held by a live request, and the counts agree with the pool.
  int64_t in_use = 0, cached = 0;
  for (BlockId b = 0; b < cfg.num_blocks; ++b) {
    const BlockState st = p.State(b);
    if (st == BlockState::kInUse) {
      ++in_use;
      CHECK(p.Holder(b) >= 0);
    }
    if (st == BlockState::kCached) ++cached;
  }
  CHECK(in_use + p.manager().num_free_blocks() == cfg.num_blocks - 1);
  CHECK(cached <= p.manager().pool().num_cached_blocks());
}

TEST_CASE("stepped replay agrees with sim's Replay on hybrid and padded plans") {
  const auto hybrid = ConfigFor({}, 0);
  CheckAgainstReplay("scenarios/traces/mooncake_conversation_head60.jsonl", hybrid, 8);
  CheckAgainstReplay("scenarios/traces/sample_tokens.jsonl", hybrid, 0);
  const auto pack4 = ConfigFor({"cache.attn_pack_size=4"}, 300);
  CheckAgainstReplay("scenarios/traces/sample_tokens.jsonl", pack4, 4);
  const auto mimo = ConfigFor({"model.preset=mimo-style", "parallel.tp=4"}, 3000);
  CheckAgainstReplay("scenarios/traces/sample_tokens.jsonl", mimo, 8);
  CheckAgainstReplay("scenarios/traces/sample_tokens.jsonl", mimo, 0);
  CheckAgainstReplay("scenarios/traces/mooncake_conversation_head60.jsonl", mimo, 8);
}

TEST_CASE("hit blocks are marked and the hit rate series is cumulative") {
  const auto mimo = ConfigFor({"model.preset=mimo-style", "parallel.tp=4"}, 3000);
  auto trace = LoadTrace("scenarios/traces/sample_tokens.jsonl");
  REQUIRE(trace.ok());
  auto r = PoolReplay::Create(trace.value(), mimo, {});
  REQUIRE(r.ok());
  PoolReplay& p = *r.value();
  int64_t hit = 0, prompt = 0;
  bool saw_hit_block = false;
  for (int64_t t = 0; t < p.num_steps(); ++t) {
    const PoolStep& s = p.steps()[static_cast<size_t>(t)];
    hit += s.hit_tokens;
    prompt += s.served ? s.prompt_tokens : 0;
    CHECK(std::abs(s.cumulative_hit_rate - static_cast<double>(hit) / prompt) < 1e-12);
    if (s.hit_tokens > 0 && !saw_hit_block) {
      p.SeekTo(t);
      for (BlockId b = 1; b < mimo.num_blocks; ++b)
        saw_hit_block |= p.WasHit(b) && p.Holder(b) == t;
    }
  }
  CHECK(saw_hit_block);
}

TEST_CASE("a missing trace is an error, and the built-in traces are listed") {
  CHECK_FALSE(LoadTrace("/nonexistent/trace.jsonl").ok());
  const auto names = EmbeddedTraceNames();
  CHECK(names.size() >= 2);
}

// Audit finding #20: the default demo replayed the Mooncake sample, which shares at most one
// 512-token block between requests, so at the default plan's 1056-token block the hit-rate
// chart was a flat zero. The default is now a demo built for the plan's block size.
TEST_CASE("the default trace hits on the default plan; --trace overrides it") {
  CHECK(DefaultTrace("") == kDemoTraceName);
  CHECK(DefaultTrace("my/trace.jsonl") == "my/trace.jsonl");
  auto m = PlanModel::Load("", {});
  REQUIRE(m.ok());
  REQUIRE(m->ok());
  const int64_t block = m->plan().attn_block_size;
  REQUIRE(block == 1056);
  auto c = KvCacheManagerConfigFromPlan(m->plan());
  REQUIRE(c.ok());
  auto r = PoolReplay::Create(DemoTrace(block), c.value(), PoolReplayOptions{});
  REQUIRE(r.ok());
  const auto& steps = r.value()->steps();
  REQUIRE(steps.size() > 4);
  CHECK(steps.front().hit_tokens == 0);
  for (size_t i = 1; i < steps.size(); ++i) {
    INFO("request " << i);
    CHECK(steps[i].hit_tokens >= 2 * block);  // the shared system prompt at least
  }
  CHECK(steps.back().cumulative_hit_rate > 0.5);
  // The same demo hits at a small block too.
  const RequestTrace small = DemoTrace(16);
  CHECK(small.size() == steps.size());
}

TEST_CASE("trace boxes name the file; the full path stays for the tooltip") {
  CHECK(TraceFileName("scenarios/traces/mooncake_conversation_head60.jsonl") ==
        "mooncake_conversation_head60.jsonl");
  CHECK(TraceFileName("C:\\traces\\t.jsonl") == "t.jsonl");
  CHECK(TraceFileName("plain.jsonl") == "plain.jsonl");
  CHECK(TraceFileName(kDemoTraceName) == kDemoTraceName);
}

}  // namespace
}  // namespace kvsim::viz
