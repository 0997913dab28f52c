// The replay's fast path against the general one. Replay normally hashes each prompt straight
// from the trace's hash ids (RequestTrace::PromptBlockHashes → AddRequestWithHashes), and a
// single full-attention group takes the manager's specialized lookup and batched caching; the
// general path materializes the tokens (AddRequest) and runs the hybrid coordinator
// (disable_fast_paths). On random streams with eviction both must give the same hit, request
// by request.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <random>
#include <string>
#include <vector>

#include "core/vllm_semantics.h"
#include "sim/replay/replay.h"
#include "sim/trace/request_trace.h"

namespace kvsim {
namespace {

// Hash-id sessions that grow turn by turn and restart at random, with a shared first id,
// `block_tokens` per id, prompts that end mid-id, exactly on a block boundary, or run past the
// last id (padding).
RequestTrace RandomHashIdTrace(uint64_t seed, int64_t requests, int64_t block_tokens) {
  std::mt19937_64 rng(seed);
  RequestTrace t;
  std::vector<std::vector<int64_t>> sessions(12);
  int64_t next_id = 1;
  for (int64_t i = 0; i < requests; ++i) {
    auto& s = sessions[rng() % sessions.size()];
    if (s.empty() || rng() % 6 == 0) s.assign(1, 0);
    for (int64_t k = 0, n = 1 + static_cast<int64_t>(rng() % 5); k < n; ++k) s.push_back(next_id++);
    const int64_t full = static_cast<int64_t>(s.size()) * block_tokens;
    int64_t input = 0;
    switch (rng() % 4) {
      case 0: input = full; break;                                       // aligned
      case 1: input = full + 1 + static_cast<int64_t>(rng() % 40); break;  // padding
      default: input = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(full)); break;
    }
    t.AddHashIds(std::to_string(i), s, input, block_tokens);
  }
  return t;
}

void CheckSameOutcomes(const RequestTrace& t, KvCacheManagerConfig cfg, int64_t concurrency) {
  ReplayOptions fast, general;
  fast.per_request = general.per_request = true;
  fast.concurrency = general.concurrency = concurrency;
  general.materialize_tokens = true;
  const ReplayResult a = Replay(t, cfg, fast);
  cfg.disable_fast_paths = true;
  const ReplayResult b = Replay(t, cfg, general);
  REQUIRE(a.outcomes.size() == b.outcomes.size());
  for (size_t i = 0; i < a.outcomes.size(); ++i) {
    INFO("request " << i);
    REQUIRE(a.outcomes[i].hit_tokens == b.outcomes[i].hit_tokens);
    REQUIRE(a.outcomes[i].served == b.outcomes[i].served);
  }
  CHECK(a.hit_tokens == b.hit_tokens);
  CHECK(a.prompt_tokens == b.prompt_tokens);
}

TEST_CASE("Trace block hashes equal hashing the materialized prompt", "[trace][block_hash]") {
  RequestTrace t;
  const std::vector<int64_t> ids = {0, 7, 3, 1000};
  for (int64_t bt : {16, 48, 64, 512}) {
    for (int64_t input : {int64_t{1}, bt - 1, bt, 3 * bt + 5, 4 * bt, 4 * bt + 37, 6 * bt + 3})
      t.AddHashIds("", ids, input, bt);
  }
  std::vector<TokenId> toks(777);
  for (size_t k = 0; k < toks.size(); ++k) toks[k] = static_cast<TokenId>(k * 31 % 1000);
  t.AddTokens("tok", toks);
  t.AddHashIds("big", std::vector<int64_t>{(int64_t{1} << 31) / 512 - 1}, 512, 512);  // max id
  std::vector<TokenId> prompt, tail;
  std::vector<BlockHash> want, got;
  for (int64_t B : {1, 16, 32, 48, 64, 128, 256, 512, 1000, 2048, 4096}) {
    for (size_t i = 0; i < t.size(); ++i) {
      INFO("block " << B << " request " << i);
      t.PromptTokens(i, prompt);
      want.clear();
      HashFullBlocks(kNoneHash, prompt, B, want);
      t.PromptBlockHashes(i, B, got, tail);
      CHECK(got == want);
      const size_t nfull = prompt.size() / static_cast<size_t>(B) * static_cast<size_t>(B);
      CHECK(tail == std::vector<TokenId>(prompt.begin() + static_cast<long>(nfull), prompt.end()));
      // The per-block first tokens, where the request has them, describe the same blocks.
      std::vector<TokenId> firsts, tail2;
      if (t.PromptBlockFirstTokens(i, B, firsts, tail2)) {
        CHECK(tail2 == tail);
        REQUIRE(firsts.size() == want.size());
        for (size_t k = 0; k < firsts.size(); ++k)
          for (int64_t j = 0; j < B; ++j)
            REQUIRE(prompt[k * static_cast<size_t>(B) + static_cast<size_t>(j)] ==
                    firsts[k] + static_cast<TokenId>(j));
      }
    }
  }
}

TEST_CASE("Two block-16 chains hashed in lockstep equal hashing each alone", "[block_hash]") {
  RequestTrace t;
  t.AddHashIds("a", std::vector<int64_t>{0, 5, 9}, 3 * 512 - 7, 512);
  t.AddHashIds("b", std::vector<int64_t>{0, 6}, 700, 512);
  t.AddHashIds("c", std::vector<int64_t>{3}, 15, 512);  // no full block
  std::vector<TokenId> fa, fb, ta, tb;
  std::vector<BlockHash> ha, hb, want;
  for (size_t i = 0; i < t.size(); ++i) {
    for (size_t j = 0; j < t.size(); ++j) {
      REQUIRE(t.PromptBlockFirstTokens(i, 16, fa, ta));
      REQUIRE(t.PromptBlockFirstTokens(j, 16, fb, tb));
      HashConsecutive16Pair(fa, ha, fb, hb);
      t.PromptBlockHashes(i, 16, want, ta);
      CHECK(ha == want);
      t.PromptBlockHashes(j, 16, want, tb);
      CHECK(hb == want);
    }
  }
}

TEST_CASE("Fast path equals the general path on random streams with eviction",
          "[replay][property]") {
  const auto sem = GENERATE(VllmSemantics::kClassic, VllmSemantics::kLatest);
  const int64_t block_tokens = GENERATE(16, 64, 512);
  for (uint64_t seed : {1, 2, 3}) {
    const RequestTrace t = RandomHashIdTrace(seed, 300, block_tokens);
    for (int64_t B : {16, 32, 48}) {  // 48 never divides the ids: the materializing branch
      for (int64_t blocks : {40, 160, 700}) {
        auto cfg = KvCacheManagerConfigFromHybrid("", B, blocks);
        REQUIRE(cfg.ok());
        cfg->semantics = sem;
        INFO("seed " << seed << " block " << B << " blocks " << blocks);
        CheckSameOutcomes(t, cfg.value(), 0);
        CheckSameOutcomes(t, cfg.value(), 3);
      }
    }
  }
}

TEST_CASE("Hashed prompts equal token prompts for hybrid layouts", "[replay][property]") {
  const std::string hybrid = GENERATE(std::string("swa:64"), std::string("mamba-align"),
                                      std::string("mamba-all"));
  const RequestTrace t = RandomHashIdTrace(9, 200, 64);
  for (int64_t blocks : {60, 300}) {
    auto cfg = KvCacheManagerConfigFromHybrid(hybrid, 16, blocks);
    REQUIRE(cfg.ok());
    CheckSameOutcomes(t, cfg.value(), 0);
  }
}

TEST_CASE("The generated Mooncake-shaped trace replays the same both ways", "[replay][property]") {
  const RequestTrace t = GenerateMooncakeStyleTrace(5, 400, 40);
  for (int64_t B : {16, 512}) {
    auto cfg = KvCacheManagerConfigFromHybrid("", B, 200000 / B + 1);
    REQUIRE(cfg.ok());
    CheckSameOutcomes(t, cfg.value(), 0);
  }
}

}  // namespace
}  // namespace kvsim
