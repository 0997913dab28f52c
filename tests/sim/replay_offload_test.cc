// kvsim replay with a CPU offloading tier: a tiny trace worked out by hand, and invariants on
// the shipped sample trace (the GPU side is unchanged by the tier).
#include <catch2/catch_test_macros.hpp>

#include <string>

#include "core/offload/offload_config.h"
#include "sim/embedded_data.h"
#include "sim/replay/replay.h"
#include "sim/trace/request_trace.h"

namespace kvsim {
namespace {

std::string TokensLine(int first, int n) {
  std::string s = "{\"tokens\": [";
  for (int i = 0; i < n; ++i) s += (i ? "," : "") + std::to_string(first + i);
  return s + "]}\n";
}

OffloadConnectorConfig Offload(const KvCacheManagerConfig& kv, int64_t cpu_blocks,
                               int64_t obs = 0) {
  OffloadOptions o;
  o.num_cpu_blocks = cpu_blocks;
  o.offload_block_size = obs;
  auto c = MakeOffloadConnectorConfig(kv, o);
  REQUIRE(c.ok());
  return *c;
}

TEST_CASE("Replay with a CPU tier: a hand-checked three-request trace", "[offload]") {
  // r0 = tokens 0..39, r1 = 1000..1039, r2 = r0 again. Block 16, 4 GPU blocks (3 usable):
  // r1's three blocks evict all of r0's, so r2 has no GPU hit.
  auto trace = RequestTrace::Parse(TokensLine(0, 40) + TokensLine(1000, 40) + TokensLine(0, 40),
                                   "tiny.jsonl");
  REQUIRE(trace.ok());
  auto kv = KvCacheManagerConfigFromHybrid("", 16, 4);
  REQUIRE(kv.ok());
  ReplayOptions opts;
  opts.per_request = true;

  SECTION("a tier that holds everything") {
    const OffloadConnectorConfig off = Offload(*kv, 8);
    opts.offload = &off;
    const ReplayResult r = Replay(*trace, *kv, opts);
    // r0 and r1 each store their 2 full blocks; r2 finds r0's 2 blocks: e = 32 (40 tokens,
    // 2 keys: max_hit = 32), loads them, and stores nothing new (cursor at 2).
    CHECK(r.prompt_tokens == 120);
    CHECK(r.hit_tokens == 0);
    CHECK(r.cpu_hit_tokens == 32);
    CHECK(r.outcomes[2].cpu_hit_tokens == 32);
    CHECK(r.cpu_blocks_stored == 4);
    CHECK(r.cpu_blocks_loaded == 2);
    CHECK(r.cpu_blocks_evicted == 0);
    CHECK(r.full_cpu_hits == 0);
  }
  SECTION("a tier of 2 blocks (LRU): r1 evicts r0's blocks, r2 misses and stores them again") {
    const OffloadConnectorConfig off = Offload(*kv, 2);
    opts.offload = &off;
    const ReplayResult r = Replay(*trace, *kv, opts);
    CHECK(r.cpu_hit_tokens == 0);
    CHECK(r.cpu_blocks_stored == 6);
    CHECK(r.cpu_blocks_evicted == 4);
  }
  SECTION("offloaded block 32: one key per request (40 // 32), r2 hits 32") {
    const OffloadConnectorConfig off = Offload(*kv, 8, 32);
    opts.offload = &off;
    const ReplayResult r = Replay(*trace, *kv, opts);
    CHECK(r.cpu_blocks_stored == 2);
    CHECK(r.cpu_hit_tokens == 32);
  }
  SECTION("a prompt of whole blocks seen before: the CPU hit covers every token") {
    // s0 = s1 = tokens 0..31 (2 full blocks), with room for both in the GPU: the GPU hit of
    // s1 is capped at 31 → 16; the CPU then adds block 1 (32 − 16 ≥ 16): e = 16, a full hit.
    auto t2 = RequestTrace::Parse(TokensLine(0, 32) + TokensLine(0, 32), "full.jsonl");
    REQUIRE(t2.ok());
    auto kv2 = KvCacheManagerConfigFromHybrid("", 16, 10);
    REQUIRE(kv2.ok());
    const OffloadConnectorConfig off = Offload(*kv2, 8);
    opts.offload = &off;
    const ReplayResult r = Replay(*t2, *kv2, opts);
    CHECK(r.hit_tokens == 16);
    CHECK(r.cpu_hit_tokens == 16);
    CHECK(r.full_cpu_hits == 1);
  }
}

TEST_CASE("Replay with a CPU tier leaves the GPU hits of the sample trace unchanged",
          "[offload]") {
  const std::string* text = FindEmbeddedFile("scenarios/traces/sample_tokens.jsonl");
  REQUIRE(text != nullptr);
  auto trace = RequestTrace::Parse(*text, "sample_tokens.jsonl");
  REQUIRE(trace.ok());
  auto kv = KvCacheManagerConfigFromHybrid("", 16, 200);
  REQUIRE(kv.ok());
  const ReplayResult plain = Replay(*trace, *kv);
  CHECK(plain.hit_tokens == 28944);  // README's figure for this trace at 200 blocks
  const OffloadConnectorConfig off = Offload(*kv, 4000);
  ReplayOptions opts;
  opts.offload = &off;
  const ReplayResult r = Replay(*trace, *kv, opts);
  CHECK(r.hit_tokens == plain.hit_tokens);
  CHECK(r.cpu_hit_tokens > 0);
  CHECK(r.hit_tokens + r.cpu_hit_tokens <= r.prompt_tokens);
  CHECK(r.cpu_blocks_evicted == 0);  // 4000 blocks hold every stored block
  CHECK(r.cpu_store_failures == 0);
}


TEST_CASE("Replay with a CPU tier: a finished request frees out-of-window blocks first",
          "[offload]") {
  // vLLM's _connector_finished runs remove_skipped_blocks before the free. Full attention +
  // sliding window W = 17, block 16, dense retention, 8 usable blocks. A (64 tokens) holds full
  // blocks 1-4 and window blocks 5-8. Finishing, its 3 out-of-window blocks go first, highest
  // first (7, 6, 5), then the tables reversed (4, 3, 2, 1, then 8): free queue 7 6 5 4 3 2 1 8.
  // X (16 other tokens) takes 7 and 6: A's window blocks 1 and 2. A again: the full group
  // hits 48 (capped at 63), but the window needs the block just before the hit end: block 2
  // (48) and block 1 (32) are gone, block 0 (16) is there → GPU hit 16. (Freed in table order
  // instead, X would take full blocks 4 and 3 and A would hit 32.)
  auto trace = RequestTrace::Parse(TokensLine(0, 64) + TokensLine(1000, 16) + TokensLine(0, 64),
                                   "swa.jsonl");
  REQUIRE(trace.ok());
  for (VllmSemantics sem : {VllmSemantics::kClassic, VllmSemantics::kLatest}) {
    auto kv = KvCacheManagerConfigFromHybrid("swa:17", 16, 9);
    REQUIRE(kv.ok());
    kv->semantics = sem;
    kv->prefix_cache_retention_interval = KvCacheManagerConfig::kRetentionDense;
    const OffloadConnectorConfig off = Offload(*kv, 1);
    ReplayOptions opts;
    opts.per_request = true;
    opts.offload = &off;
    const ReplayResult r = Replay(*trace, *kv, opts);
    REQUIRE(r.outcomes.size() == 3);
    CHECK(r.outcomes[2].hit_tokens == 16);
  }
}

}  // namespace
}  // namespace kvsim
