// Trace reading, the replay driver and the one-pass curve: bad lines name their line,
// hash ids map to tokens, --concurrency 1 equals the default mode, and the curve agrees
// with separate replays (exactly where vLLM is a stack algorithm, within the proven bound
// where it is not).
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <random>

#include "core/vllm_semantics.h"
#include "sim/embedded_data.h"
#include "sim/replay/replay.h"
#include "sim/trace/request_trace.h"

namespace kvsim {
namespace {

RequestTrace SampleTokens() {
  const std::string* text = FindEmbeddedFile("scenarios/traces/sample_tokens.jsonl");
  REQUIRE(text != nullptr);
  auto t = RequestTrace::Parse(*text, "sample_tokens.jsonl");
  REQUIRE(t.ok());
  return std::move(t.value());
}

RequestTrace SampleMooncake() {
  const std::string* text = FindEmbeddedFile("scenarios/traces/mooncake_conversation_head60.jsonl");
  REQUIRE(text != nullptr);
  auto t = RequestTrace::Parse(*text, "mooncake.jsonl");
  REQUIRE(t.ok());
  return std::move(t.value());
}

TEST_CASE("Trace: both JSONL forms", "[trace]") {
  auto t = RequestTrace::Parse(
      "{\"id\": \"a\", \"tokens\": [5, 6, 7]}\n"
      "\n"
      "{\"hash_ids\": [2, 0, 5], \"input_length\": 10, \"block_tokens\": 4, \"timestamp\": 3.5, "
      "\"output_length\": 9}\n"
      "{\"id\": 17, \"hash_ids\": [1], \"input_length\": 3, \"block_tokens\": 4}\n",
      "t.jsonl");
  REQUIRE(t.ok());
  REQUIRE(t->size() == 3);
  CHECK((*t)[0].id == "a");
  CHECK((*t)[1].id == "3");  // the line number
  CHECK((*t)[2].id == "17");
  CHECK((*t)[1].output_length == 9);
  CHECK((*t)[1].timestamp == 3.5);
  std::vector<TokenId> p;
  t->PromptTokens(0, p);
  CHECK(p == std::vector<TokenId>{5, 6, 7});
  // Hash 2 → 8..11, hash 0 → 0..3, hash 5 → 20..23 cut to input_length.
  t->PromptTokens(1, p);
  CHECK(p == std::vector<TokenId>{8, 9, 10, 11, 0, 1, 2, 3, 20, 21});
  t->PromptTokens(2, p);  // truncated to input_length
  CHECK(p == std::vector<TokenId>{4, 5, 6});
}

TEST_CASE("Trace: bad lines name the line, or are skipped and counted", "[trace]") {
  const char* text =
      "{\"tokens\": [1, 2]}\n"
      "{\"tokens\": [1, \"x\"]}\n"
      "not json\n"
      "{\"hash_ids\": [1], \"input_length\": 5000}\n"
      "{\"hash_ids\": [-1], \"input_length\": 3}\n"
      "{\"tokens\": [3]}\n";
  auto bad = RequestTrace::Parse(text, "t.jsonl");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("t.jsonl:2:") == 0);
  auto skip = RequestTrace::Parse(text, "t.jsonl", /*skip_bad_lines=*/true);
  REQUIRE(skip.ok());
  CHECK(skip->size() == 2);
  CHECK(skip->skipped_lines() == 4);
  std::vector<TokenId> p;
  skip->PromptTokens(1, p);
  CHECK(p == std::vector<TokenId>{3});
  // 5000 tokens need ceil(5000 / 512) = 10 ids, not 1; without input_length one id is 512.
  auto mismatch = RequestTrace::Parse("{\"hash_ids\": [1], \"input_length\": 5000}\n", "m.jsonl");
  CHECK(mismatch.status().message().find("input_length") != std::string::npos);
  auto implied = RequestTrace::Parse("{\"hash_ids\": [1]}\n", "m.jsonl");
  REQUIRE(implied.ok());
  CHECK((*implied)[0].input_length == 512);
  auto huge = RequestTrace::Parse("{\"hash_ids\": [99999999], \"input_length\": 5}\n", "h.jsonl");
  CHECK_FALSE(huge.ok());
}

TEST_CASE("Equal hash ids mean equal content at every block size", "[trace][replay]") {
  RequestTrace t;
  const std::vector<int64_t> a = {0, 1, 2}, b = {0, 1, 3};
  t.AddHashIds("a", a, 1536);
  t.AddHashIds("b", b, 1500);
  for (int64_t bs : {16, 64, 512}) {
    auto cfg = KvCacheManagerConfigFromHybrid("", bs, 1000);
    ReplayOptions o;
    o.per_request = true;
    const ReplayResult r = Replay(t, cfg.value(), o);
    CHECK(r.outcomes[1].hit_tokens == 1024);
  }
}

KvCacheManagerConfig Cfg(const std::string& hybrid, int64_t bs, int64_t blocks, VllmSemantics s) {
  auto c = KvCacheManagerConfigFromHybrid(hybrid, bs, blocks);
  REQUIRE(c.ok());
  c->semantics = s;
  return c.value();
}

TEST_CASE("Concurrency 1 equals the default mode", "[replay][property]") {
  const auto sem = GENERATE(VllmSemantics::kClassic, VllmSemantics::kLatest);
  const std::string hybrid = GENERATE(std::string(""), std::string("swa:64"),
                                      std::string("mamba-align"), std::string("mamba-all"));
  const RequestTrace t = SampleTokens();
  for (int64_t blocks : {60, 150, 400}) {
    const auto cfg = Cfg(hybrid, 16, blocks, sem);
    ReplayOptions one, def;
    one.concurrency = 1;
    one.per_request = def.per_request = true;
    const ReplayResult a = Replay(t, cfg, def);
    const ReplayResult b = Replay(t, cfg, one);
    CHECK(a.hit_tokens == b.hit_tokens);
    CHECK(a.not_served == b.not_served);
    REQUIRE(a.outcomes.size() == b.outcomes.size());
    for (size_t i = 0; i < a.outcomes.size(); ++i) {
      CHECK(a.outcomes[i].hit_tokens == b.outcomes[i].hit_tokens);
      CHECK(a.outcomes[i].served == b.outcomes[i].served);
    }
  }
}

TEST_CASE("Replay is deterministic and concurrency only lowers hits", "[replay]") {
  const RequestTrace t = SampleMooncake();
  const auto cfg = Cfg("", 16, 3000, VllmSemantics::kLatest);
  const ReplayResult a = Replay(t, cfg);
  const ReplayResult b = Replay(t, cfg);
  CHECK(a.hit_tokens == b.hit_tokens);
  CHECK(a.hit_tokens > 0);
  ReplayOptions c8;
  c8.concurrency = 8;
  const ReplayResult c = Replay(t, cfg, c8);
  CHECK(c.served + c.not_served == c.requests);
  CHECK(c.hit_tokens <= a.hit_tokens + 0);  // held blocks shrink the cache
}

// A trace whose prompts are never block-aligned (so no ghost copies): the curve is exact.
RequestTrace UnalignedTrace(uint64_t seed, int64_t B) {
  std::mt19937_64 rng(seed);
  RequestTrace t;
  std::vector<std::vector<TokenId>> sessions(6);
  TokenId next = 1;
  for (int i = 0; i < 300; ++i) {
    auto& h = sessions[rng() % sessions.size()];
    if (rng() % 6 == 0) h.clear();
    const int add = 1 + static_cast<int>(rng() % 70);
    for (int k = 0; k < add; ++k) h.push_back(next++);
    if (static_cast<int64_t>(h.size()) % B == 0) h.push_back(next++);
    t.AddTokens(std::to_string(i), h);
  }
  return t;
}

TEST_CASE("Curve equals separate replays where vLLM is a stack algorithm", "[replay][curve]") {
  const auto sem = GENERATE(VllmSemantics::kClassic, VllmSemantics::kLatest);
  const int64_t B = 16;
  const RequestTrace t = UnalignedTrace(99, B);
  auto cfg = Cfg("", B, 2, sem);
  auto curve = ReplayCurve(t, cfg);
  REQUIRE(curve.ok());
  REQUIRE(curve->points.size() > 5);
  int checked = 0;
  for (int64_t cap = curve->min_capacity_blocks; cap <= curve->saturation_blocks + 3; cap += 3) {
    cfg.num_blocks = cap;
    const ReplayResult r = Replay(t, cfg);
    REQUIRE(r.not_served == 0);
    CHECK(r.hit_tokens == curve->HitTokensAt(cap));
    ++checked;
  }
  CHECK(checked > 20);
  // The reported points agree with HitTokensAt.
  for (const auto& p : curve->points) CHECK(p.hit_tokens == curve->HitTokensAt(p.capacity_blocks));
}

TEST_CASE("Curve bound where vLLM is not a stack algorithm (block-aligned prompts)",
          "[replay][curve]") {
  const auto sem = GENERATE(VllmSemantics::kClassic, VllmSemantics::kLatest);
  const int64_t B = 16;
  // Block-aligned repeats: the capped last block is recomputed and duplicated (a ghost).
  RequestTrace t;
  std::mt19937_64 rng(5);
  int64_t dups = 0;
  std::vector<std::vector<TokenId>> docs(5);
  TokenId next = 1;
  for (auto& d : docs)
    for (int k = 0; k < 64; ++k) d.push_back(next++);
  for (int i = 0; i < 200; ++i) {
    std::vector<TokenId> p = docs[rng() % docs.size()];
    const int64_t blocks = 1 + static_cast<int64_t>(rng() % 4);
    p.resize(static_cast<size_t>(blocks * B));
    if (rng() % 2) {
      for (int k = 0; k < 1 + static_cast<int>(rng() % 40); ++k) p.push_back(next++);
    }
    if (static_cast<int64_t>(p.size()) % B == 0) ++dups;
    t.AddTokens(std::to_string(i), p);
  }
  auto cfg = Cfg("", B, 2, sem);
  auto curve = ReplayCurve(t, cfg);
  REQUIRE(curve.ok());
  int64_t differ = 0;
  for (int64_t cap = curve->min_capacity_blocks; cap <= curve->saturation_blocks + 2 * dups; ++cap) {
    cfg.num_blocks = cap;
    const ReplayResult r = Replay(t, cfg);
    const int64_t hi = curve->HitTokensAt(cap);
    const int64_t lo = curve->HitTokensAt(std::max<int64_t>(1, cap - dups));
    CHECK(r.hit_tokens <= hi);
    CHECK(r.hit_tokens >= lo);
    differ += r.hit_tokens != hi;
  }
  // Well past saturation plus every ghost, the two agree again.
  cfg.num_blocks = curve->saturation_blocks + 2 * dups + 1;
  CHECK(Replay(t, cfg).hit_tokens == curve->HitTokensAt(cfg.num_blocks));
  INFO("capacities where replay < curve: " << differ);
}

// Hybrid layouts are not a stack algorithm (docs/vllm-latest-hybrid.md §7), so their curve is
// sampled (below); what holds is an upper bound: the full-attention group references the same
// blocks at every capacity, and the other group's blocks, ghost copies and unhashed blocks
// only push them deeper, so a hybrid replay at U never beats the full-attention curve at U.
TEST_CASE("Hybrid replay is bounded by the full-attention curve", "[replay][curve]") {
  const auto sem = GENERATE(VllmSemantics::kClassic, VllmSemantics::kLatest);
  const bool dense = GENERATE(false, true);
  const std::string hybrid =
      GENERATE(std::string("swa:64"), std::string("mamba-align"), std::string("mamba-all"));
  if (sem == VllmSemantics::kClassic && dense) return;  // classic is always dense
  const RequestTrace t = SampleTokens();
  auto curve = ReplayCurve(t, Cfg("", 16, 2, sem));
  REQUIRE(curve.ok());
  int64_t checked = 0, below = 0;
  for (int64_t cap = curve->min_capacity_blocks; cap <= 3 * curve->saturation_blocks;
       cap += std::max<int64_t>(1, curve->saturation_blocks / 8)) {
    auto cfg = Cfg(hybrid, 16, cap, sem);
    if (dense) cfg.prefix_cache_retention_interval = KvCacheManagerConfig::kRetentionDense;
    const ReplayResult r = Replay(t, cfg);
    if (r.not_served > 0) continue;  // an unserved request references fewer blocks
    CHECK(r.hit_tokens <= curve->HitTokensAt(cap));
    below += r.hit_tokens < curve->HitTokensAt(cap);
    ++checked;
  }
  CHECK(checked >= 4);
  INFO("capacities where the hybrid replay is below the curve: " << below);
}

// A hybrid curve is sampled: separate replays at geometrically spaced capacities from the
// smallest pool that serves every request to the one where nothing is evicted. Each point is
// a replay at that capacity (so each must agree with Replay), the points rise in capacity,
// start at min_capacity_blocks and end at the bound asked for; and each stays under the
// full-attention curve (the bound above).
TEST_CASE("Hybrid curve: sampled replays, each exact, under the full-attention curve",
          "[replay][curve]") {
  const auto sem = GENERATE(VllmSemantics::kClassic, VllmSemantics::kLatest);
  const std::string hybrid = GENERATE(std::string("swa:64"), std::string("mamba-all"));
  const RequestTrace t = SampleTokens();
  auto full = ReplayCurve(t, Cfg("", 16, 2, sem));
  REQUIRE(full.ok());
  auto curve = ReplayCurve(t, Cfg(hybrid, 16, 2, sem), 4 * full->saturation_blocks);
  REQUIRE(curve.ok());
  CHECK(curve->sampled);
  REQUIRE(curve->points.size() >= 10);
  CHECK(curve->points.front().capacity_blocks == curve->min_capacity_blocks);
  CHECK(curve->points.back().capacity_blocks ==
        std::min(curve->saturation_blocks, 4 * full->saturation_blocks));
  for (size_t i = 0; i < curve->points.size(); ++i) {
    const CurvePoint& p = curve->points[i];
    if (i > 0) CHECK(p.capacity_blocks > curve->points[i - 1].capacity_blocks);
    if (i % 4 == 0) CHECK(Replay(t, Cfg(hybrid, 16, p.capacity_blocks, sem)).hit_tokens == p.hit_tokens);
    CHECK(p.hit_tokens <= full->HitTokensAt(p.capacity_blocks));
  }
}

TEST_CASE("Curve refuses what it does not model", "[replay][curve]") {
  const RequestTrace t = SampleTokens();
  auto cfg = Cfg("", 16, 100, VllmSemantics::kLatest);
  cfg.enable_caching = false;
  CHECK_FALSE(ReplayCurve(t, cfg).ok());
}

}  // namespace
}  // namespace kvsim
