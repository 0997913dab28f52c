// The decode fast path of AllocateSlots (one full-attention group whose blocks already cover
// the demand) against the general path (disable_fast_paths), fed the same random stream of
// the scheduler's calls: prefill chunks with lookahead, decode steps with in-flight tokens,
// watermark and reserved blocks, delayed caching, external (loaded) tokens, preemption and
// finishing, under eviction pressure. Every call must return the same answer, and afterwards
// both managers must hold the same blocks, the same free queue and the same prefix cache.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <random>
#include <vector>

#include "core/kv_cache_manager.h"
#include "core/vllm_semantics.h"

namespace kvsim {
namespace {

struct Live {
  RequestHandle fast, general;
  std::vector<TokenId> tokens;
  int64_t computed = 0;
  bool running = false;
};

void RequireSame(const KvCacheManager& a, const KvCacheManager& b, const std::vector<Live>& live) {
  REQUIRE(a.num_free_blocks() == b.num_free_blocks());
  REQUIRE(a.pool().FreeQueue() == b.pool().FreeQueue());
  for (const Live& r : live) {
    const auto x = a.blocks(r.fast, 0), y = b.blocks(r.general, 0);
    REQUIRE(std::vector<BlockId>(x.begin(), x.end()) == std::vector<BlockId>(y.begin(), y.end()));
  }
}

void RunBoth(KvCacheManagerConfig cfg, uint64_t seed, int ops) {
  KvCacheManager fast(cfg);
  cfg.disable_fast_paths = true;
  KvCacheManager general(cfg);
  std::mt19937_64 rng(seed);
  std::vector<std::vector<TokenId>> docs(3);
  TokenId next = 1;
  for (auto& d : docs)
    for (int k = 0; k < 120; ++k) d.push_back(next++);
  std::vector<Live> live;
  auto both = [&](auto&& call) {
    const bool a = call(fast, true), b = call(general, false);
    REQUIRE(a == b);
    return a;
  };
  for (int op = 0; op < ops; ++op) {
    INFO("op " << op);
    const int kind = static_cast<int>(rng() % 12);
    const int64_t watermark = rng() % 3 == 0 ? static_cast<int64_t>(rng() % 6) : 0;
    const int64_t reserved = rng() % 4 == 0 ? static_cast<int64_t>(rng() % 5) : 0;
    const bool delay = rng() % 8 == 0;
    if (kind < 3 || live.empty()) {
      std::vector<TokenId> p = docs[rng() % docs.size()];
      p.resize(static_cast<size_t>(rng() % 120));
      for (int k = 0, n = 1 + static_cast<int>(rng() % 40); k < n; ++k) p.push_back(next++);
      live.push_back({fast.AddRequest(p), general.AddRequest(p), p, 0, false});
    } else if (kind < 10) {
      Live& r = live[rng() % live.size()];
      const int64_t ntok = static_cast<int64_t>(r.tokens.size());
      if (!r.running) {
        const PrefixHit ha = fast.GetComputedBlocks(r.fast, 0);
        const PrefixHit hb = general.GetComputedBlocks(r.general, 0);
        REQUIRE(ha.num_tokens == hb.num_tokens);
        const int64_t n = std::min<int64_t>(40, ntok - ha.num_tokens);
        const int64_t la = static_cast<int64_t>(rng() % 3);
        const bool ok = both([&](KvCacheManager& m, bool is_fast) {
          return m.AllocateSlots(is_fast ? r.fast : r.general, 0, n, ha.num_tokens, la, true, 0,
                                 0, delay, reserved, watermark);
        });
        if (ok) {
          r.running = true;
          r.computed = ha.num_tokens + n;
        }
      } else {
        // A prefill chunk, or a decode step (one token, lookahead, maybe one in flight, maybe
        // an external load's tokens) after the previous step's token joined the sequence.
        int64_t n = 1, ext = 0;
        if (r.computed < ntok) {
          n = std::min<int64_t>(1 + static_cast<int64_t>(rng() % 40), ntok - r.computed);
        } else {
          const TokenId t = next++;
          r.tokens.push_back(t);
          fast.AppendTokens(r.fast, {&t, 1});
          general.AppendTokens(r.general, {&t, 1});
          if (rng() % 10 == 0) ext = 1 + static_cast<int64_t>(rng() % 20);
        }
        const int64_t la = static_cast<int64_t>(rng() % 3);
        const int64_t in_flight = static_cast<int64_t>(rng() % 2);
        const bool ok = both([&](KvCacheManager& m, bool is_fast) {
          return m.AllocateSlots(is_fast ? r.fast : r.general, r.computed, n, 0, la, false,
                                 in_flight, ext, delay, reserved, watermark);
        });
        if (ok) {
          r.computed += n + ext;
          if (delay) {
            fast.CacheBlocks(r.fast, r.computed);
            general.CacheBlocks(r.general, r.computed);
          }
        } else {
          fast.Free(r.fast);
          general.Free(r.general);
          r.running = false;
          r.computed = 0;
        }
      }
    } else if (kind == 10) {
      Live& r = live[rng() % live.size()];
      fast.Free(r.fast);
      general.Free(r.general);
      r.running = false;
      r.computed = 0;
    } else {
      const size_t i = rng() % live.size();
      fast.RemoveRequest(live[i].fast);
      general.RemoveRequest(live[i].general);
      live.erase(live.begin() + static_cast<long>(i));
    }
    fast.CheckInvariants();
    RequireSame(fast, general, live);
  }
}

TEST_CASE("AllocateSlots' decode fast path decides as the general path does",
          "[kv_manager][fast_path]") {
  const auto sem = GENERATE(VllmSemantics::kClassic, VllmSemantics::kLatest);
  const int64_t block = GENERATE(int64_t{1}, int64_t{16}, int64_t{64});
  KvCacheManagerConfig cfg;
  cfg.groups = {{KvGroupKind::kFullAttention, block}};
  cfg.num_blocks = block == 1 ? 900 : 70;
  cfg.semantics = sem;
  REQUIRE(cfg.Validate().ok());
  for (uint64_t seed : {11, 12, 13}) RunBoth(cfg, seed, 2500);
  cfg.max_model_len = 150;  // demands clamped at max_model_len
  for (uint64_t seed : {21, 22}) RunBoth(cfg, seed, 1500);
}

}  // namespace
}  // namespace kvsim
