// Property tests: random request streams (shared prefixes, prefill chunks, decode with
// lookahead, preemption, finishing) under eviction pressure, for every group type and both
// semantics. After every operation the pool and the manager's tables must be consistent and
// blocks conserved; a failed allocation must change nothing; runs are deterministic.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <random>
#include <string>
#include <vector>

#include "core/kv_cache_manager.h"
#include "core/vllm_semantics.h"

namespace kvsim {
namespace {

struct Live {
  RequestHandle h;
  std::vector<TokenId> tokens;  // prompt + accepted outputs
  int64_t computed = 0;
  bool running = false;
};

// Returns a fingerprint of the run (hit tokens and queue order) for determinism checks.
uint64_t RunStream(const KvCacheManagerConfig& cfg, uint64_t seed, int steps) {
  std::mt19937_64 rng(seed);
  KvCacheManager m(cfg);
  std::vector<std::vector<TokenId>> docs(4);
  TokenId next = 1;
  for (auto& d : docs)
    for (int k = 0; k < 200; ++k) d.push_back(next++);
  std::vector<Live> live;
  uint64_t fp = 1469598103934665603ULL;
  auto mix = [&](uint64_t v) { fp = (fp ^ v) * 1099511628211ULL; };
  const int64_t chunk = 48;
  for (int step = 0; step < steps; ++step) {
    const int op = static_cast<int>(rng() % 10);
    if (op < 3 || live.empty()) {
      // A new request: a shared document prefix plus a unique tail.
      std::vector<TokenId> p = docs[rng() % docs.size()];
      p.resize(static_cast<size_t>(rng() % 200));
      for (int k = 0, n = 1 + static_cast<int>(rng() % 60); k < n; ++k) p.push_back(next++);
      live.push_back({m.AddRequest(p), p, 0, false});
    } else if (op < 8) {
      // Schedule one request: admit (lookup + first chunk) or continue / decode.
      Live& r = live[rng() % live.size()];
      const int64_t ntok = static_cast<int64_t>(r.tokens.size());
      if (!r.running) {
        const PrefixHit hit = m.GetComputedBlocks(r.h, 0);
        m.CheckInvariants();
        REQUIRE(hit.num_tokens < ntok);
        REQUIRE(hit.num_tokens % cfg.scheduler_block_size() == 0);
        int64_t n = std::min(chunk, ntok - hit.num_tokens);
        n = m.MambaAlignedSplit(r.h, hit.num_tokens, n, hit.shared_prefix_tokens, chunk);
        if (n <= 0) continue;
        const auto before = m.pool().FreeQueue();
        const bool ok = m.AllocateSlots(r.h, 0, n, hit.num_tokens, 0, true);
        m.CheckInvariants();
        if (ok) {
          r.running = true;
          r.computed = hit.num_tokens + n;
          mix(static_cast<uint64_t>(hit.num_tokens));
        } else if (cfg.groups.size() == 1 || cfg.groups[0].kind == KvGroupKind::kFullAttention) {
          // Nothing may change on failure (a new request has no out-of-window blocks).
          CHECK(m.pool().FreeQueue() == before);
        }
      } else if (r.computed < ntok) {
        int64_t n = std::min(chunk, ntok - r.computed);
        n = m.MambaAlignedSplit(r.h, r.computed, n, 0, chunk);
        if (n > 0 && m.AllocateSlots(r.h, r.computed, n)) r.computed += n;
        m.CheckInvariants();
      } else {
        // Decode: one token plus up to 2 lookahead slots; the token joins the sequence.
        const TokenId t = next++;
        r.tokens.push_back(t);
        m.AppendTokens(r.h, {&t, 1});
        const int64_t la = static_cast<int64_t>(rng() % 3);
        if (m.AllocateSlots(r.h, r.computed, 1, 0, la)) {
          ++r.computed;
        } else {  // out of blocks: the request preempts itself (recompute later)
          m.Free(r.h);
          r.running = false;
          r.computed = 0;
        }
        m.CheckInvariants();
      }
    } else if (op == 8) {
      // Preempt: free, reset progress.
      Live& r = live[rng() % live.size()];
      m.Free(r.h);
      r.running = false;
      r.computed = 0;
      m.CheckInvariants();
    } else {
      const size_t i = rng() % live.size();
      m.RemoveRequest(live[i].h);
      live.erase(live.begin() + static_cast<long>(i));
      m.CheckInvariants();
    }
    mix(static_cast<uint64_t>(m.num_free_blocks()));
  }
  for (const BlockId b : m.pool().FreeQueue()) mix(static_cast<uint64_t>(b));
  for (auto& r : live) m.RemoveRequest(r.h);
  m.CheckInvariants();
  REQUIRE(m.num_free_blocks() == cfg.num_blocks - 1);  // every block came back
  return fp;
}

TEST_CASE("Random request streams keep every invariant", "[kv_manager][property]") {
  const auto sem = GENERATE(VllmSemantics::kClassic, VllmSemantics::kLatest);
  const std::string hybrid = GENERATE(std::string(""), std::string("swa:40"),
                                      std::string("mamba-align"), std::string("mamba-all"));
  auto cfg = KvCacheManagerConfigFromHybrid(hybrid, 16, 90);
  REQUIRE(cfg.ok());
  cfg->semantics = sem;
  for (uint64_t seed : {1, 2, 3}) {
    const uint64_t a = RunStream(cfg.value(), seed, 1500);
    const uint64_t b = RunStream(cfg.value(), seed, 1500);
    CHECK(a == b);  // deterministic
  }
}

TEST_CASE("Random streams over other group layouts", "[kv_manager][property]") {
  const auto sem = GENERATE(VllmSemantics::kClassic, VllmSemantics::kLatest);
  std::vector<KvCacheManagerConfig> cfgs;
  {
    KvCacheManagerConfig c;  // chunked local + full
    c.groups = {{KvGroupKind::kFullAttention, 16}, {KvGroupKind::kChunkedLocal, 16, 0, 64}};
    cfgs.push_back(c);
  }
  {
    KvCacheManagerConfig c;  // different block sizes (hash block 16, scheduler block 32)
    c.groups = {{KvGroupKind::kFullAttention, 32}, {KvGroupKind::kSlidingWindow, 16, 32}};
    cfgs.push_back(c);
  }
  {
    KvCacheManagerConfig c;  // Qwen3-Next shape: full + 3 identical Mamba align groups
    KvGroupConfig mamba{KvGroupKind::kMamba, 16};
    c.groups = {{KvGroupKind::kFullAttention, 16}, mamba, mamba, mamba};
    cfgs.push_back(c);
  }
  {
    KvCacheManagerConfig c;  // EAGLE with SWA
    c.groups = {{KvGroupKind::kFullAttention, 16}, {KvGroupKind::kSlidingWindow, 16, 48}};
    c.use_eagle = true;
    cfgs.push_back(c);
  }
  for (auto& c : cfgs) {
    c.num_blocks = 120;
    c.semantics = sem;
    REQUIRE(c.Validate().ok());
    RunStream(c, 7, 1200);
  }
}

}  // namespace
}  // namespace kvsim
