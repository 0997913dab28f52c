// The KV cache manager against the worked examples of the vLLM reference (§8.7–8.10,
// §8.12–8.17), for both free-queue semantics where they differ. CheckInvariants() runs after
// every operation.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <numeric>
#include <utility>
#include <vector>

#include "core/int_math.h"
#include "core/kv_cache_manager.h"
#include "core/kv_group/chunked_local_policy.h"
#include "core/kv_group/full_attention_policy.h"
#include "core/kv_group/sliding_window_policy.h"
#include "core/page_planner.h"

namespace kvsim {
namespace {

using Ids = std::vector<BlockId>;

std::vector<TokenId> Repeat(TokenId v, int n) { return std::vector<TokenId>(n, v); }
std::vector<TokenId> Concat(std::vector<TokenId> a, const std::vector<TokenId>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
// vLLM's test prefix: block 0 all 0s, block 1 all 1s, block 2 all 2s (block 16).
std::vector<TokenId> CommonPrefix() {
  std::vector<TokenId> t;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 16; ++j) t.push_back(i);
  return t;
}
std::vector<TokenId> Range(int from, int n) {
  std::vector<TokenId> t(n);
  std::iota(t.begin(), t.end(), from);
  return t;
}

KvCacheManagerConfig FullConfig(int64_t block, int64_t num_blocks, VllmSemantics s) {
  KvCacheManagerConfig c;
  c.groups.push_back({KvGroupKind::kFullAttention, block});
  c.num_blocks = num_blocks;
  c.semantics = s;
  return c;
}

Ids Blocks(const KvCacheManager& m, RequestHandle h, int g = 0) {
  auto s = m.blocks(h, g);
  return Ids(s.begin(), s.end());
}

// What the scheduler does for a new request: look up, then allocate `n` new tokens
// (default: the rest of the prompt).
struct Admit {
  RequestHandle h;
  PrefixHit hit;
  bool ok;
};
Admit AdmitNew(KvCacheManager& m, const std::vector<TokenId>& prompt, int64_t n = -1,
               int64_t lookahead = 0) {
  const RequestHandle h = m.AddRequest(prompt);
  const PrefixHit hit = m.GetComputedBlocks(h, 0);
  m.CheckInvariants();
  if (n < 0) n = static_cast<int64_t>(prompt.size()) - hit.num_tokens;
  const bool ok = m.AllocateSlots(h, 0, n, hit.num_tokens, lookahead);
  m.CheckInvariants();
  return {h, hit, ok};
}

TEST_CASE("8.7 prefill: hits, ref counts and free-queue order", "[kv_manager][8.7]") {
  const auto sem = GENERATE(VllmSemantics::kClassic, VllmSemantics::kLatest);
  const bool latest = sem == VllmSemantics::kLatest;
  KvCacheManager m(FullConfig(16, 11, sem));
  const auto common = CommonPrefix();

  // 1. req0: 55 tokens, no hit, blocks [1,2,3,4]; 1–3 cached, 4 not.
  auto r0 = AdmitNew(m, Concat(common, Repeat(3, 7)));
  REQUIRE(r0.ok);
  CHECK(r0.hit.num_tokens == 0);
  CHECK(Blocks(m, r0.h) == Ids{1, 2, 3, 4});
  for (BlockId b : {1, 2, 3}) {
    CHECK(m.pool().is_cached(b));
    CHECK(m.pool().ref_cnt(b) == 1);
  }
  CHECK_FALSE(m.pool().is_cached(4));

  // 2. req1: same 48-token prefix + 5: hit [1,2,3], new [5], refs 2, free 5.
  auto r1 = AdmitNew(m, Concat(common, Repeat(5, 5)));
  REQUIRE(r1.ok);
  CHECK(r1.hit.num_tokens == 48);
  CHECK(Blocks(m, r1.h) == Ids{1, 2, 3, 5});
  for (BlockId b : {1, 2, 3}) CHECK(m.pool().ref_cnt(b) == 2);
  CHECK(m.num_free_blocks() == 5);

  // 3. Free req0 then req1.
  m.RemoveRequest(r0.h);
  m.CheckInvariants();
  m.RemoveRequest(r1.h);
  m.CheckInvariants();
  if (latest) {
    CHECK(m.pool().FreeQueue() == Ids{5, 4, 6, 7, 8, 9, 10, 3, 2, 1});
  } else {
    CHECK(m.pool().FreeQueue() == Ids{6, 7, 8, 9, 10, 4, 5, 3, 2, 1});
  }

  // 4. req2 = prefix + 6: hit [1,2,3], new [6] classic / [5] latest; free 6.
  auto r2 = AdmitNew(m, Concat(common, Repeat(7, 6)));
  REQUIRE(r2.ok);
  CHECK(r2.hit.num_tokens == 48);
  CHECK(Blocks(m, r2.h) == (latest ? Ids{1, 2, 3, 5} : Ids{1, 2, 3, 6}));
  CHECK(m.num_free_blocks() == 6);

  // 5. Free req2; req3 = 160 unrelated tokens takes the whole queue in order.
  m.RemoveRequest(r2.h);
  m.CheckInvariants();
  auto r3 = AdmitNew(m, Repeat(99, 160));
  REQUIRE(r3.ok);
  CHECK(r3.hit.num_tokens == 0);
  CHECK(Blocks(m, r3.h) ==
        (latest ? Ids{5, 4, 6, 7, 8, 9, 10, 3, 2, 1} : Ids{7, 8, 9, 10, 4, 5, 6, 3, 2, 1}));
  CHECK(m.num_free_blocks() == 0);
  // The hashes of the evicted blocks are gone: nothing of the common prefix hits now.
  const RequestHandle probe = m.AddRequest(Concat(common, Repeat(8, 3)));
  CHECK(m.GetComputedBlocks(probe, 0).num_tokens == 0);
}

TEST_CASE("8.8 LRU eviction", "[kv_manager][8.8]") {
  const auto sem = GENERATE(VllmSemantics::kClassic, VllmSemantics::kLatest);
  const bool latest = sem == VllmSemantics::kLatest;
  KvCacheManager m(FullConfig(16, 11, sem));
  const auto t0 = Range(0, 87);
  auto r0 = AdmitNew(m, t0);
  REQUIRE(r0.ok);
  CHECK(Blocks(m, r0.h) == Ids{1, 2, 3, 4, 5, 6});
  auto r1 = AdmitNew(m, Range(1000, 48));
  REQUIRE(r1.ok);
  CHECK(Blocks(m, r1.h) == Ids{7, 8, 9});
  CHECK(m.num_free_blocks() == 1);
  m.RemoveRequest(r0.h);
  m.CheckInvariants();
  if (latest) CHECK(m.pool().FreeQueue() == Ids{6, 10, 5, 4, 3, 2, 1});
  m.RemoveRequest(r1.h);
  m.CheckInvariants();
  CHECK(m.pool().FreeQueue() == (latest ? Ids{6, 10, 5, 4, 3, 2, 1, 9, 8, 7}
                                        : Ids{10, 6, 5, 4, 3, 2, 1, 9, 8, 7}));
  auto r2 = AdmitNew(m, Range(0, 35));
  REQUIRE(r2.ok);
  CHECK(r2.hit.num_tokens == 32);
  CHECK(Blocks(m, r2.h) == (latest ? Ids{1, 2, 6} : Ids{1, 2, 10}));
  CHECK(m.num_free_blocks() == 7);
}

TEST_CASE("8.8 computed blocks are not evicted", "[kv_manager][8.8]") {
  const auto sem = GENERATE(VllmSemantics::kClassic, VllmSemantics::kLatest);
  KvCacheManager m(FullConfig(16, 3, sem));
  auto r0 = AdmitNew(m, Range(0, 16));
  CHECK(Blocks(m, r0.h) == Ids{1});
  auto r1 = AdmitNew(m, Range(16, 16));
  CHECK(Blocks(m, r1.h) == Ids{2});
  m.RemoveRequest(r0.h);
  m.RemoveRequest(r1.h);
  m.CheckInvariants();
  auto r2 = AdmitNew(m, Range(0, 32));
  REQUIRE(r2.ok);
  CHECK(r2.hit.num_tokens == 16);
  CHECK(Blocks(m, r2.h) == Ids{1, 2});
}

TEST_CASE("8.9 decode caches blocks as they fill", "[kv_manager][8.9]") {
  KvCacheManager m(FullConfig(16, 11, VllmSemantics::kLatest));
  auto r0 = AdmitNew(m, Concat(CommonPrefix(), Repeat(3, 7)));
  REQUIRE(Blocks(m, r0.h) == Ids{1, 2, 3, 4});
  // 4 decode tokens: 59 tokens, no new block, last block still unhashed.
  m.AppendTokens(r0.h, Repeat(8, 4));
  REQUIRE(m.AllocateSlots(r0.h, 55, 4));
  m.CheckInvariants();
  CHECK(Blocks(m, r0.h).size() == 4);
  CHECK_FALSE(m.pool().is_cached(4));
  // 19 more: 78 tokens, one new block; the second-to-last is now hashed, the last is not.
  m.AppendTokens(r0.h, Repeat(8, 19));
  REQUIRE(m.AllocateSlots(r0.h, 59, 19));
  m.CheckInvariants();
  const Ids b = Blocks(m, r0.h);
  REQUIRE(b.size() == 5);
  CHECK(m.pool().is_cached(b[3]));
  CHECK_FALSE(m.pool().is_cached(b[4]));
  // Draft tokens never get cached: 2 scheduled drafts fill block 4 only with drafts.
  REQUIRE(m.AllocateSlots(r0.h, 78, 3));  // 1 bonus token slot + 2 drafts, nothing appended
  m.CheckInvariants();
  CHECK_FALSE(m.pool().is_cached(Blocks(m, r0.h)[4]));
}

TEST_CASE("8.10 lookahead slots", "[kv_manager][8.10]") {
  {
    KvCacheManager m(FullConfig(4, 11, VllmSemantics::kLatest));
    auto r = AdmitNew(m, Range(0, 3), 3, /*lookahead=*/2);
    REQUIRE(r.ok);
    CHECK(Blocks(m, r.h).size() == 2);
  }
  {
    KvCacheManager m(FullConfig(4, 11, VllmSemantics::kLatest));
    auto r = AdmitNew(m, Range(0, 3), 3, /*lookahead=*/4);
    REQUIRE(r.ok);
    CHECK(Blocks(m, r.h).size() == 2);
  }
}

// Runs a finder over a T/F pattern; returns the hit in blocks and the positions it filled.
struct PatternHit {
  int64_t n;
  std::vector<int64_t> real;  // positions < n holding a cached block
};
template <class F>
PatternHit RunPattern(const std::vector<bool>& pattern, F&& finder) {
  std::vector<int64_t> put_pos;
  auto cached = [&](int64_t j, int* out) {
    if (j >= static_cast<int64_t>(pattern.size()) || !pattern[static_cast<size_t>(j)]) return false;
    if (out) *out = static_cast<int>(j) + 1;
    return true;
  };
  auto put = [&](int64_t j, const int*) { put_pos.push_back(j); };
  int buf = 0;
  PatternHit r{finder(cached, put, &buf), {}};
  for (int64_t p : put_pos)
    if (p < r.n) r.real.push_back(p);
  return r;
}

TEST_CASE("8.12 sliding-window hit", "[kv_manager][8.12]") {
  const int64_t B = 2, W = 4;
  auto swa = [&](const std::vector<bool>& pat) {
    const int64_t max_len = static_cast<int64_t>(pat.size()) * B;
    return RunPattern(pat, [&](auto& c, auto& p, int* buf) {
      return FindSlidingWindowHit(max_len, B, W, B, false, c, p, buf);
    });
  };
  const bool T = true, F = false;
  CHECK(swa(std::vector<bool>(10, F)).n == 0);
  CHECK(swa({T}).n == 1);
  CHECK(swa({T, F}).n == 1);
  CHECK(swa({T, T}).n == 2);
  CHECK(swa({T, T, F}).n == 2);
  CHECK(swa({T, T, T}).n == 3);
  CHECK(swa({T, T, T, F}).n == 3);
  const auto a = swa({T, T, F, T, F, F, T, T, F, T, T, T});
  CHECK(a.n == 12);
  const auto b = swa({T, T, F, T, F, F, T, T, F, F, F});
  CHECK(b.n == 8);
  const auto c = swa({T, T, F, T, F, F, T, T, F, F, F, T});
  CHECK(c.n == 8);
  // The blocks before len − 2 are null.
  for (const auto& r : {a, b, c})
    for (int64_t p : r.real) CHECK(p >= r.n - 2);
}

TEST_CASE("8.13 sliding-window freeing", "[kv_manager][8.13]") {
  const auto sem = GENERATE(VllmSemantics::kClassic, VllmSemantics::kLatest);
  KvCacheManagerConfig c;
  c.groups.push_back({KvGroupKind::kSlidingWindow, 2, /*window=*/4});
  c.num_blocks = 20;
  c.semantics = sem;
  c.prefix_cache_retention_interval = KvCacheManagerConfig::kRetentionDense;  // §8 is dense
  KvCacheManager m(c);
  const RequestHandle h = m.AddRequest(Range(0, 22));
  REQUIRE(m.AllocateSlots(h, 0, 22));
  const Ids orig = Blocks(m, h);
  REQUIRE(orig.size() == 11);
  auto nulls = [&]() {
    int n = 0;
    for (BlockId b : Blocks(m, h)) n += b == kNullBlock;
    return n;
  };
  for (int64_t computed : {0, 4}) {
    m.RemoveSkippedBlocks(h, computed);
    m.CheckInvariants();
    CHECK(nulls() == 0);
  }
  m.RemoveSkippedBlocks(h, 5);
  CHECK(Blocks(m, h)[0] == kNullBlock);
  CHECK(nulls() == 1);
  m.RemoveSkippedBlocks(h, 6);
  CHECK(nulls() == 1);
  m.RemoveSkippedBlocks(h, 7);
  CHECK(nulls() == 2);
  CHECK(Blocks(m, h)[1] == kNullBlock);
  m.RemoveSkippedBlocks(h, 11);
  m.CheckInvariants();
  CHECK(nulls() == 4);
  // The free order: block 3 then block 2 (the longer prefix is evicted first).
  const Ids q = m.pool().FreeQueue();
  REQUIRE(q.size() >= 2);
  CHECK(q[q.size() - 2] == orig[3]);
  CHECK(q[q.size() - 1] == orig[2]);
}

TEST_CASE("8.14 chunked-local hit", "[kv_manager][8.14]") {
  const int64_t B = 2, C = 4;
  auto run = [&](const std::vector<bool>& pat, int64_t tail) {
    const int64_t max_len = 2 * static_cast<int64_t>(pat.size()) + tail;
    return RunPattern(pat, [&](auto& c, auto& p, int* buf) {
      return FindChunkedLocalHit(max_len, B, C, c, p, buf);
    }).n;
  };
  const bool T = true, F = false;
  for (int64_t tail : {0, 1}) {
    CHECK(run({T}, tail) == 1);
    CHECK(run({T, F}, tail) == 2);
  }
  CHECK(run({T, T}, 0) == 2);
  CHECK(run({T, T, F}, 0) == 2);
  CHECK(run({T, T, T}, 0) == 3);
  CHECK(run({T, T, T, F}, 0) == 4);
  for (bool any : {true, false}) {
    std::vector<bool> eight(8, any);
    auto p = eight;
    p.push_back(T);
    CHECK(run(p, 1) == 9);
    p.back() = F;
    CHECK(run(p, 1) == 8);
    for (auto two : {std::vector<bool>{T, T}, {T, F}, {F, T}, {F, F}}) {
      auto q = eight;
      q.insert(q.end(), two.begin(), two.end());
      CHECK(run(q, 0) == 10);
      CHECK(run(q, 1) == 10);
    }
  }
}

KvCacheManagerConfig HybridFullTwoSwa(VllmSemantics s) {
  KvCacheManagerConfig c;
  c.groups.push_back({KvGroupKind::kFullAttention, 16});
  c.groups.push_back({KvGroupKind::kSlidingWindow, 16, 32});
  c.groups.push_back({KvGroupKind::kSlidingWindow, 16, 32});
  c.num_blocks = 21;
  c.semantics = s;
  c.prefix_cache_retention_interval = KvCacheManagerConfig::kRetentionDense;  // §8 is dense
  return c;
}

TEST_CASE("8.15 hybrid full + 2×SWA hit", "[kv_manager][8.15]") {
  const auto sem = GENERATE(VllmSemantics::kClassic, VllmSemantics::kLatest);
  const auto common = CommonPrefix();
  const auto p0 = Concat(common, Repeat(3, 7));
  const auto p1 = Concat(common, Repeat(5, 5));
  {
    KvCacheManager m(HybridFullTwoSwa(sem));
    auto r0 = AdmitNew(m, p0);
    REQUIRE(r0.ok);
    CHECK(Blocks(m, r0.h, 0) == Ids{1, 2, 3, 4});
    CHECK(Blocks(m, r0.h, 1) == Ids{5, 6, 7, 8});
    CHECK(Blocks(m, r0.h, 2) == Ids{9, 10, 11, 12});
    auto r1 = AdmitNew(m, p1);
    REQUIRE(r1.ok);
    CHECK(r1.hit.num_tokens == 48);
    CHECK(Blocks(m, r1.h, 0) == Ids{1, 2, 3, 13});
    CHECK(Blocks(m, r1.h, 1) == Ids{0, 6, 7, 14});
    CHECK(Blocks(m, r1.h, 2) == Ids{0, 10, 11, 15});
  }
  // Removing single cached hashes: (block ids to evict) → hit in blocks.
  struct Case {
    Ids evict;
    int64_t blocks;
  };
  const std::vector<Case> cases = {
      {{5, 9}, 3},  // block 0 of both SWA groups
      {{1}, 0},     // block 0 of full
      {{3, 7, 11}, 2},
      {{3}, 2},
      {{7}, 2},
      {{3, 5, 9}, 0},
  };
  for (const Case& c : cases) {
    KvCacheManager m(HybridFullTwoSwa(sem));
    auto r0 = AdmitNew(m, p0);
    auto r1 = AdmitNew(m, p1);
    m.RemoveRequest(r0.h);
    m.RemoveRequest(r1.h);
    for (BlockId b : c.evict) REQUIRE(m.mutable_pool().EvictCachedBlock(b));
    m.CheckInvariants();
    const RequestHandle h = m.AddRequest(p1);
    CHECK(m.GetComputedBlocks(h, 0).num_tokens == c.blocks * 16);
  }
}

TEST_CASE("8.16 different block sizes: LCM alignment", "[kv_manager][8.16]") {
  KvCacheManagerConfig c;
  c.groups.push_back({KvGroupKind::kFullAttention, 32});
  c.groups.push_back({KvGroupKind::kSlidingWindow, 16, 32});
  c.num_blocks = 100;
  c.prefix_cache_retention_interval = KvCacheManagerConfig::kRetentionDense;  // §8 is dense
  REQUIRE(c.resolved_hash_block_size() == 16);
  REQUIRE(c.scheduler_block_size() == 32);
  KvCacheManager m(c);
  const auto t = Range(0, 160);
  const RequestHandle h0 = m.AddRequest(t);
  REQUIRE(m.AllocateSlots(h0, 0, 112));
  m.CheckInvariants();
  CHECK(Blocks(m, h0, 0) == Ids{1, 2, 3, 4});
  CHECK(Blocks(m, h0, 1) == Ids{5, 6, 7, 8, 9, 10, 11});
  auto hit_of = [&](int n) {
    const RequestHandle h = m.AddRequest(Range(0, n));
    const auto hit = m.GetComputedBlocks(h, 0);
    m.RemoveRequest(h);
    return hit.num_tokens;
  };
  CHECK(hit_of(113) == 96);  // full 3 blocks + SWA 6 blocks
  CHECK(hit_of(97) == 96);
  m.mutable_pool().EvictCachedBlock(10);
  m.mutable_pool().EvictCachedBlock(11);
  m.CheckInvariants();
  CHECK(hit_of(113) == 64);  // SWA alone would allow 80, but hits are multiples of 32
}

// A dense-caching hybrid of `groups` (the §8 examples are dense), with or without EAGLE.
KvCacheManagerConfig DenseHybrid(std::vector<KvGroupConfig> groups, int64_t num_blocks,
                                 VllmSemantics s, bool eagle) {
  KvCacheManagerConfig c;
  c.groups = std::move(groups);
  c.num_blocks = num_blocks;
  c.semantics = s;
  c.use_eagle = eagle;
  c.prefix_cache_retention_interval = KvCacheManagerConfig::kRetentionDense;
  REQUIRE(c.Validate().ok());
  return c;
}

// EAGLE in a hybrid (reference §5.4–5.5; docs/vllm-latest-hybrid.md §6): each lookup unit
// drops its last block once per candidate length, a dropping lookup looks one block past the
// candidate, and one full-attention unit plus one other stops after one pass. Full 16 + SWA
// (B 16, W 32: a hit needs cdiv(31, 16) = 2 blocks, 3 with EAGLE), dense caching. A 97-token
// prompt leaves blocks 0–5 cached in both groups. The same prompt again (max 96 tokens):
//   full: blocks 0–5 hit, drop one → 80;
//   SWA: looks up to min(80 + 16, 96) = 96 → the run 3, 4, 5 ends at block 6, drop one → 80.
// Hit 80, the single-group EAGLE hit. Re-running the SWA lookup on each shortened length
// (dropping again each time) would spiral down to 0 (vLLM issue #32802).
TEST_CASE("EAGLE in a full + SWA hybrid drops one block once", "[kv_manager][eagle]") {
  const auto sem = GENERATE(VllmSemantics::kClassic, VllmSemantics::kLatest);
  for (const bool eagle : {false, true}) {
    KvCacheManager m(
        DenseHybrid({{KvGroupKind::kFullAttention, 16}, {KvGroupKind::kSlidingWindow, 16, 32}}, 40,
                    sem, eagle));
    auto r0 = AdmitNew(m, Range(0, 97));
    REQUIRE(r0.ok);
    m.RemoveRequest(r0.h);
    auto r1 = AdmitNew(m, Range(0, 97));
    REQUIRE(r1.ok);
    CHECK(r1.hit.num_tokens == (eagle ? 80 : 96));
    CHECK(m.blocks(r1.h, 0).size() == 7);
  }
}

// Only the groups that hold the drafter's layers drop the EAGLE block (vLLM's eagle groups;
// gpt-oss + EAGLE3: the drafter's layer joins the full-attention group). Full 16 + SWA (B 16,
// W 32), dense, a 97-token prompt cached, then SWA block 5 evicted; the same prompt again:
//   every group EAGLE: full 6 → 5 blocks (80); SWA needs 3 blocks ending at ≤ 96: 2, 3, 4
//     end at 80, drop one → 64;
//   only full EAGLE: full 80; SWA needs 2 blocks ending at ≤ 80: 3, 4 → 80, no drop → 80.
TEST_CASE("Only the drafter's groups drop the EAGLE block", "[kv_manager][eagle]") {
  const auto sem = GENERATE(VllmSemantics::kClassic, VllmSemantics::kLatest);
  for (const bool swa_eagle : {true, false}) {
    KvGroupConfig swa{KvGroupKind::kSlidingWindow, 16, 32};
    swa.eagle_group = swa_eagle;
    KvCacheManager m(DenseHybrid({{KvGroupKind::kFullAttention, 16}, swa}, 40, sem, true));
    auto r0 = AdmitNew(m, Range(0, 97));
    REQUIRE(r0.ok);
    REQUIRE(Blocks(m, r0.h, 1) == Ids{8, 9, 10, 11, 12, 13, 14});
    m.RemoveRequest(r0.h);
    REQUIRE(m.mutable_pool().EvictCachedBlock(13));
    const RequestHandle h = m.AddRequest(Range(0, 97));
    CHECK(m.GetComputedBlocks(h, 0).num_tokens == (swa_eagle ? 64 : 80));
  }
}

// vLLM's own EAGLE hybrid case (tests/v1/core/test_prefix_caching.py,
// test_prefill_hybrid_model_eagle, in its coordinated single-drop form): full + 2 × SWA
// (W 31: 2 blocks, 3 with EAGLE), block 16. Request 0 (96 + 7 tokens) caches blocks 0–5 of
// every group (full 1–6, SWA 8–13 and 15–20); a request with the same 96 tokens + 5 hits
// 5 blocks (80 tokens): full 1–5, SWA [null, null, 10, 11, 12], of which the table keeps
// [null, null, null, 11, 12] (with 80 tokens computed the window starts at token 80 − 31 + 1
// = 50, so block 2 is skipped when the hit is added). With cached hashes removed:
//   SWA block 0 gone (outside the window)        → 5;   full block 0 gone → 0;
//   block 5 gone in every group, or in full only → 4 (full hits 5, drops one);
//   SWA block 4 gone in one SWA group             → 3 (the run 1–3 ends at 4, drops one);
//   full block 5 and SWA block 0 gone             → 4.
TEST_CASE("vLLM's hybrid EAGLE case: full + 2 SWA", "[kv_manager][eagle]") {
  const auto sem = GENERATE(VllmSemantics::kClassic, VllmSemantics::kLatest);
  const auto common = [] {
    std::vector<TokenId> t;
    for (int i = 0; i < 6; ++i)
      for (int k = 0; k < 16; ++k) t.push_back(i);
    return t;
  }();
  auto run = [&](const Ids& evict, Ids* full = nullptr, Ids* swa = nullptr) {
    KvCacheManager m(DenseHybrid({{KvGroupKind::kFullAttention, 16},
                                  {KvGroupKind::kSlidingWindow, 16, 31},
                                  {KvGroupKind::kSlidingWindow, 16, 31}},
                                 31, sem, true));
    auto r0 = AdmitNew(m, Concat(common, Repeat(6, 7)));
    REQUIRE(r0.ok);
    REQUIRE(Blocks(m, r0.h, 0) == Ids{1, 2, 3, 4, 5, 6, 7});
    REQUIRE(Blocks(m, r0.h, 1) == Ids{8, 9, 10, 11, 12, 13, 14});
    REQUIRE(Blocks(m, r0.h, 2) == Ids{15, 16, 17, 18, 19, 20, 21});
    m.RemoveRequest(r0.h);
    for (BlockId b : evict) REQUIRE(m.mutable_pool().EvictCachedBlock(b));
    const RequestHandle h = m.AddRequest(Concat(common, Repeat(6, 5)));
    const PrefixHit hit = m.GetComputedBlocks(h, 0);
    if (full != nullptr) {
      REQUIRE(m.AllocateSlots(h, 0, 101 - hit.num_tokens, hit.num_tokens));
      *full = Blocks(m, h, 0);
      *swa = Blocks(m, h, 1);
    }
    return hit.num_tokens / 16;
  };
  Ids full, swa;
  CHECK(run({}, &full, &swa) == 5);
  CHECK(Ids(full.begin(), full.begin() + 5) == Ids{1, 2, 3, 4, 5});
  CHECK(Ids(swa.begin(), swa.begin() + 5) == Ids{0, 0, 0, 11, 12});
  CHECK(run({8, 15}) == 5);
  CHECK(run({1}) == 0);
  CHECK(run({6, 13, 20}) == 4);
  CHECK(run({6}) == 4);
  CHECK(run({12}) == 3);
  CHECK(run({19}) == 3);
  CHECK(run({6, 8, 15}) == 4);
}

// The SWA finder with EAGLE when the block (16) is finer than the alignment (32), W 17: a
// hit needs cdiv(16, 16) + 1 = 2 blocks. A run's right end is checked where it will be after
// the drop (block i, not i + 1), and the hit is re-aligned after the drop.
TEST_CASE("SWA hit with EAGLE and a coarser alignment", "[kv_manager][eagle]") {
  const bool T = true, F = false;
  auto swa = [](const std::vector<bool>& pat, int64_t W) {
    const int64_t max_len = static_cast<int64_t>(pat.size()) * 16;
    return RunPattern(pat, [&](auto& c, auto& p, int* buf) {
      return FindSlidingWindowHit(max_len, 16, W, 32, true, c, p, buf);
    });
  };
  // Blocks 0–5 cached: block 5 would end at 80 after the drop (not aligned), skipped; the run
  // 3–4 → 5, drop → 4 (64 tokens). Checking block 5's own end (96) would give 6, drop → 5:
  // 80 tokens, off the alignment.
  CHECK(swa(std::vector<bool>(6, T), 17).n == 4);
  // W 49: 3 + 1 = 4 blocks needed; only blocks 0–2 cached, so the leading run counts. Block 2
  // ends at 32 after the drop, kept; run 0–2 → 3, re-aligned → 2, drop → 1, re-aligned → 0.
  // Without the re-alignment after the drop: 1 (16 tokens).
  CHECK(swa({T, T, T, F, F, F}, 49).n == 0);
}

// [latest] With EAGLE a hybrid caches one group block past the scheduler-block boundary (the
// block a dropping lookup peeks at). Full 32 + SWA 16 (scheduler block 32), an 81-token
// prompt: the boundary is 64; full attention caches 2 blocks either way; SWA caches
// min(81, 64 + 16) / 16 = 5 blocks in latest, 64 / 16 = 4 in classic.
TEST_CASE("EAGLE lookahead block cached past the scheduler block", "[kv_manager][eagle]") {
  for (const auto sem : {VllmSemantics::kClassic, VllmSemantics::kLatest}) {
    KvCacheManager m(DenseHybrid(
        {{KvGroupKind::kFullAttention, 32}, {KvGroupKind::kSlidingWindow, 16, 17}}, 40, sem, true));
    auto r = AdmitNew(m, Range(0, 81));
    REQUIRE(r.ok);
    auto cached = [&](int g) {
      int n = 0;
      for (BlockId b : m.blocks(r.h, g)) n += m.pool().is_cached(b);
      return n;
    };
    CHECK(cached(0) == 2);
    CHECK(cached(1) == (sem == VllmSemantics::kLatest ? 5 : 4));
  }
}

TEST_CASE("8.17 Mamba align: shared prefix and the aligned split", "[kv_manager][8.17]") {
  const auto sem = GENERATE(VllmSemantics::kClassic, VllmSemantics::kLatest);
  auto cfg = KvCacheManagerConfigFromHybrid("mamba-align", 16, 100);
  REQUIRE(cfg.ok());
  cfg->semantics = sem;
  cfg->prefix_cache_retention_interval = KvCacheManagerConfig::kRetentionDense;  // §8 is dense
  KvCacheManager m(cfg.value());
  const auto t0 = Range(0, 48);
  const RequestHandle h0 = m.AddRequest(t0);
  REQUIRE(m.AllocateSlots(h0, 0, 48));
  m.CheckInvariants();
  const Ids mamba = Blocks(m, h0, 1);
  REQUIRE(mamba.size() == 3);
  CHECK(mamba[0] == kNullBlock);
  CHECK(mamba[1] == kNullBlock);
  CHECK(m.pool().is_cached(mamba[2]));

  auto t1 = Concat(t0, Range(500, 7));
  const RequestHandle h1 = m.AddRequest(t1);
  const PrefixHit hit1 = m.GetComputedBlocks(h1, 0);
  CHECK(hit1.num_tokens == 48);
  CHECK(hit1.shared_prefix_tokens - hit1.num_tokens == 0);

  auto t2 = t0;
  t2.back() = 9999;
  const RequestHandle h2 = m.AddRequest(t2);
  const PrefixHit hit2 = m.GetComputedBlocks(h2, 0);
  CHECK(hit2.num_tokens == 0);
  if (sem == VllmSemantics::kLatest) {
    CHECK(hit2.shared_prefix_tokens == 32);
    CHECK(m.MambaAlignedSplit(h2, 0, 48, hit2.shared_prefix_tokens, 48) == 32);
  } else {
    CHECK(m.MambaAlignedSplit(h2, 0, 48, hit2.shared_prefix_tokens, 48) == 48);
  }
}

TEST_CASE("Mamba align keeps at most 2 live state blocks while decoding", "[kv_manager]") {
  auto cfg = KvCacheManagerConfigFromHybrid("mamba-align", 16, 100);
  cfg->prefix_cache_retention_interval = KvCacheManagerConfig::kRetentionDense;
  KvCacheManager m(cfg.value());
  const RequestHandle h = m.AddRequest(Range(0, 48));
  REQUIRE(m.AllocateSlots(h, 0, 48));
  int64_t computed = 48;
  for (int step = 0; step < 40; ++step) {
    m.AppendTokens(h, Repeat(7, 1));
    REQUIRE(m.AllocateSlots(h, computed, 1));
    m.CheckInvariants();
    ++computed;
    int live = 0;
    for (BlockId b : Blocks(m, h, 1)) live += b != kNullBlock;
    CHECK(live <= 2);
    CHECK(static_cast<int64_t>(Blocks(m, h, 1).size()) == CeilDiv(computed, 16));
  }
  // States were cached at every block boundary crossed at a step end.
  const RequestHandle probe = m.AddRequest(Concat(Range(0, 48), Repeat(7, 33)));
  CHECK(m.GetComputedBlocks(probe, 0).num_tokens == 80);
}

TEST_CASE("A failed allocation changes nothing", "[kv_manager]") {
  const auto sem = GENERATE(VllmSemantics::kClassic, VllmSemantics::kLatest);
  KvCacheManager m(FullConfig(16, 6, sem));
  auto r0 = AdmitNew(m, Range(0, 40));
  REQUIRE(r0.ok);
  m.RemoveRequest(r0.h);
  const Ids queue = m.pool().FreeQueue();
  const int64_t cached = m.pool().num_cached_blocks();
  const RequestHandle h = m.AddRequest(Concat(Range(0, 32), Range(100, 60)));
  const PrefixHit hit = m.GetComputedBlocks(h, 0);
  CHECK(hit.num_tokens == 32);
  CHECK_FALSE(m.AllocateSlots(h, 0, 60, hit.num_tokens, 0, true));
  m.CheckInvariants();
  CHECK(m.pool().FreeQueue() == queue);
  CHECK(m.pool().num_cached_blocks() == cached);
  CHECK(Blocks(m, h).empty());
}

TEST_CASE("full_sequence_must_fit checks the whole prompt first", "[kv_manager]") {
  KvCacheManager m(FullConfig(16, 5, VllmSemantics::kLatest));  // 4 usable
  const RequestHandle h = m.AddRequest(Range(0, 80));           // 5 blocks
  CHECK(m.AllocateSlots(h, 0, 16, 0, 0, false));                 // a first chunk fits
  m.Free(h);
  CHECK_FALSE(m.AllocateSlots(h, 0, 16, 0, 0, true));  // but the whole prompt does not
  m.CheckInvariants();
}

TEST_CASE("8.18 per-request block maxima", "[kv_manager][8.18]") {
  KvCacheSpec full;
  full.block_size = 16;
  full.num_kv_heads = 32;
  full.head_size = 128;
  full.head_size_v = 128;
  full.dtype = DType::kFloat16;
  CHECK(MaxBlocksPerRequest(full, 16384, 1024, MambaCacheMode::kNone) == 1024);
  KvCacheSpec swa = full;
  swa.kind = LayerKind::kSlidingWindow;
  swa.sliding_window = 1024;
  const int64_t per_full = MaxBlocksPerRequest(full, 16384, 1024, MambaCacheMode::kNone);
  const int64_t per_swa = MaxBlocksPerRequest(swa, 16384, 1024, MambaCacheMode::kNone);
  CHECK(per_full == 1024);
  CHECK(per_swa == 129);  // cdiv(1023 + 1024, 16) + 1
  // The concurrency these maxima give (1.5, 3 and 3 on §8.18's pools) is checked where the
  // planner computes it: page_planner_test "§8.18 capacity".
}

TEST_CASE("Config from the hybrid shorthand", "[kv_manager]") {
  CHECK(KvCacheManagerConfigFromHybrid("", 16, 10)->groups.size() == 1);
  auto swa = KvCacheManagerConfigFromHybrid("swa:128", 16, 10);
  REQUIRE(swa.ok());
  CHECK(swa->groups[1].kind == KvGroupKind::kSlidingWindow);
  CHECK(swa->groups[1].sliding_window == 128);
  CHECK(KvCacheManagerConfigFromHybrid("mamba-all", 16, 10)->groups[1].mamba_mode ==
        MambaCacheMode::kAll);
  CHECK_FALSE(KvCacheManagerConfigFromHybrid("swa:", 16, 10).ok());
  CHECK_FALSE(KvCacheManagerConfigFromHybrid("swa:x", 16, 10).ok());
  CHECK_FALSE(KvCacheManagerConfigFromHybrid("mamba", 16, 10).ok());
  CHECK_FALSE(KvCacheManagerConfigFromHybrid("", 0, 10).ok());
}

}  // namespace
}  // namespace kvsim
