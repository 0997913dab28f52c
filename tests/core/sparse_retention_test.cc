// The latest snapshot's hybrid rules (docs/vllm-latest-hybrid.md): sparse retention of
// sliding-window and Mamba checkpoints, the shared-prefix junction and the latest Mamba
// `align` chunk split. Each TEST_CASE named "LH n" is worked example n of that note; the
// expected values are the note's hand work.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <numeric>
#include <vector>

#include "core/kv_cache_manager.h"
#include "core/kv_group/mamba_align_policy.h"
#include "core/kv_group/sliding_window_policy.h"
#include "core/vllm_semantics.h"

namespace kvsim {
namespace {

std::vector<TokenId> Range(int from, int n) {
  std::vector<TokenId> t(n);
  std::iota(t.begin(), t.end(), from);
  return t;
}
std::vector<TokenId> Concat(std::vector<TokenId> a, const std::vector<TokenId>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
// The blocks [start, end) a mask keeps (absolute indices); "all" when dense.
std::vector<int64_t> Kept(bool sparse, int64_t start, const std::vector<uint8_t>& mask) {
  if (!sparse) return {-1};
  std::vector<int64_t> out;
  for (size_t i = 0; i < mask.size(); ++i)
    if (mask[i]) out.push_back(start + static_cast<int64_t>(i));
  return out;
}
const std::vector<int64_t> kAll = {-1};

TEST_CASE("LH 1 sliding-window retention masks", "[retention]") {
  std::vector<uint8_t> mask;
  // W = 33, B = 16: a hit needs cdiv(32, 16) = 2 blocks. Prompt 100: replay boundary 99 →
  // 96 → blocks [4, 6). Interval 0: nothing else.
  const int64_t replay[] = {99};
  bool s = SlidingWindowRetentionMask(0, 6, 16, 33, 16, false, 0, replay, mask);
  CHECK(Kept(s, 0, mask) == std::vector<int64_t>{4, 5});
  // Junction 64 too: blocks [2, 4).
  const int64_t both[] = {99, 64};
  s = SlidingWindowRetentionMask(0, 6, 16, 33, 16, false, 0, both, mask);
  CHECK(Kept(s, 0, mask) == std::vector<int64_t>{2, 3, 4, 5});
  // Only the part inside [start, end) is reported: a later chunk caching blocks [3, 6).
  s = SlidingWindowRetentionMask(3, 6, 16, 33, 16, false, 0, both, mask);
  CHECK(Kept(s, 3, mask) == std::vector<int64_t>{3, 4, 5});
  // A boundary before the first `need` blocks keeps what exists: 20 → 16 → block 0 only.
  const int64_t early[] = {20};
  s = SlidingWindowRetentionMask(0, 6, 16, 33, 16, false, 0, early, mask);
  CHECK(Kept(s, 0, mask) == std::vector<int64_t>{0});
  // Interval 64 (4 blocks per segment), W = 17 (need 1): the last block of each segment
  // (3, 7) plus the replay boundary 99 → 96 → block 5.
  s = SlidingWindowRetentionMask(0, 9, 16, 17, 16, false, 64, replay, mask);
  CHECK(Kept(s, 0, mask) == std::vector<int64_t>{3, 5, 7});
  // EAGLE: need 2, and the run ends one block past the boundary (shift 1): segment tails
  // where (i − 1) mod 4 ∈ {2, 3} → 3, 4, 7, 8; boundary 96 → end block 7 → [5, 7).
  s = SlidingWindowRetentionMask(0, 9, 16, 17, 16, true, 64, replay, mask);
  CHECK(Kept(s, 0, mask) == std::vector<int64_t>{3, 4, 5, 6, 7, 8});
  // A window that spans a whole segment caches everything: W = 65 needs 4 blocks ≥ 64/16.
  CHECK_FALSE(SlidingWindowRetentionMask(0, 9, 16, 65, 16, false, 64, replay, mask));
  // null (dense) with alignment = B: every block.
  CHECK_FALSE(SlidingWindowRetentionMask(0, 9, 16, 17, 16, false, -1, replay, mask));
  // null with alignment 32 = 2 blocks and need 1: tails at every aligned boundary only
  // (odd blocks), and the replay boundary is not added.
  s = SlidingWindowRetentionMask(0, 6, 16, 17, 32, false, -1, replay, mask);
  CHECK(Kept(s, 0, mask) == std::vector<int64_t>{1, 3, 5});
}

TEST_CASE("LH 2 Mamba retention masks", "[retention]") {
  std::vector<uint8_t> mask;
  const int64_t replay[] = {99};
  // Interval 0, B = 16, prompt 100: only the state at 96 (block 5).
  bool s = MambaRetentionMask(0, 6, 16, 16, 0, replay, mask);
  CHECK(Kept(s, 0, mask) == std::vector<int64_t>{5});
  // With the junction 64: block 3 as well.
  const int64_t both[] = {99, 64};
  s = MambaRetentionMask(0, 6, 16, 16, 0, both, mask);
  CHECK(Kept(s, 0, mask) == std::vector<int64_t>{3, 5});
  // Interval 32 (2 blocks): blocks 1, 3, 5 (5 is also the replay boundary).
  s = MambaRetentionMask(0, 6, 16, 16, 32, replay, mask);
  CHECK(Kept(s, 0, mask) == std::vector<int64_t>{1, 3, 5});
  // Interval 64 over blocks [5, 12): the segment ends 7 and 11 (block 5 = replay boundary).
  s = MambaRetentionMask(5, 12, 16, 16, 64, replay, mask);
  CHECK(Kept(s, 5, mask) == std::vector<int64_t>{5, 7, 11});
  // Scheduler block 32 (Mamba 16): the boundary 99 floors to 96 → block 5; 40 → 32 → 1.
  const int64_t coarse[] = {99, 40};
  s = MambaRetentionMask(0, 6, 16, 32, 0, coarse, mask);
  CHECK(Kept(s, 0, mask) == std::vector<int64_t>{1, 5});
  // A boundary below one block keeps nothing; an interval of one block is dense; null too.
  const int64_t tiny[] = {10};
  s = MambaRetentionMask(0, 6, 16, 16, 0, tiny, mask);
  CHECK(Kept(s, 0, mask).empty());
  CHECK_FALSE(MambaRetentionMask(0, 6, 16, 16, 16, replay, mask));
  CHECK_FALSE(MambaRetentionMask(0, 6, 16, 16, -1, replay, mask));
}

KvCacheManagerConfig Hybrid(const char* hybrid, int64_t retention) {
  auto c = KvCacheManagerConfigFromHybrid(hybrid, 16, 200);
  REQUIRE(c.ok());
  c->prefix_cache_retention_interval = retention;
  return c.value();
}

// Admits a whole prompt (one allocation); returns its hit and whether it was admitted.
PrefixHit AdmitWhole(KvCacheManager& m, RequestHandle h) {
  const PrefixHit hit = m.GetComputedBlocks(h, 0);
  REQUIRE(m.AllocateSlots(h, 0, m.num_tokens(h) - hit.num_tokens, hit.num_tokens, 0, true));
  m.CheckInvariants();
  return hit;
}

TEST_CASE("LH 3 SWA: sparse retention loses a hit, the junction pins it", "[retention]") {
  const auto A = Range(0, 100);                        // request 1
  const auto B = Concat(Range(0, 64), Range(1000, 36));  // shares A's first 64 tokens
  const auto C = Concat(Range(0, 64), Range(2000, 50));  // shares them too
  for (const int64_t retention : {int64_t{0}, KvCacheManagerConfig::kRetentionDense}) {
    KvCacheManager m(Hybrid("swa:33", retention));
    const RequestHandle a = m.AddRequest(A);
    CHECK(AdmitWhole(m, a).num_tokens == 0);
    // Cached: full blocks 0–5; SWA blocks 4 and 5 only (sparse) or 0–5 (dense).
    int swa_cached = 0;
    for (BlockId b : m.blocks(a, 1)) swa_cached += m.pool().is_cached(b);
    CHECK(swa_cached == (retention == 0 ? 2 : 6));
    m.RemoveRequest(a);
    // Identical prompt: the run ending at 96 is there in both modes.
    const RequestHandle a2 = m.AddRequest(A);
    CHECK(AdmitWhole(m, a2).num_tokens == 96);
    m.RemoveRequest(a2);
    const RequestHandle b = m.AddRequest(B);
    const PrefixHit hb = AdmitWhole(m, b);
    if (retention == 0) {
      CHECK(hb.num_tokens == 0);              // SWA blocks 2–3 were never hashed
      CHECK(hb.shared_prefix_boundary() == 64);  // full attention found 64
    } else {
      CHECK(hb.num_tokens == 64);
      CHECK(hb.shared_prefix_boundary() == 0);
    }
    m.RemoveRequest(b);
    // Request B kept the window ending at its junction: C now hits 64 in both modes.
    const RequestHandle c = m.AddRequest(C);
    CHECK(AdmitWhole(m, c).num_tokens == 64);
    m.RemoveRequest(c);
  }
}

TEST_CASE("LH 4 Mamba all: only the replay boundary and the junction", "[retention]") {
  KvCacheManager m(Hybrid("mamba-all", 0));
  const RequestHandle a = m.AddRequest(Range(0, 100));
  AdmitWhole(m, a);
  // Mamba blocks 0–5 are real; only block 5 (state at 96) got a hash.
  const auto mb = m.blocks(a, 1);
  REQUIRE(mb.size() == 7);
  for (int i = 0; i < 6; ++i) CHECK(m.pool().is_cached(mb[static_cast<size_t>(i)]) == (i == 5));
  m.RemoveRequest(a);
  const RequestHandle b = m.AddRequest(Concat(Range(0, 80), Range(1000, 20)));
  const PrefixHit hb = AdmitWhole(m, b);
  CHECK(hb.num_tokens == 0);
  CHECK(hb.shared_prefix_boundary() == 80);
  m.RemoveRequest(b);
  const RequestHandle c = m.AddRequest(Concat(Range(0, 80), Range(3000, 40)));
  CHECK(AdmitWhole(m, c).num_tokens == 80);
  m.RemoveRequest(c);
  // Periodic checkpoints (interval 32): states at blocks 1, 3, 5. A 90-token shared prefix:
  // full attention finds 80, Mamba has no state at 80 (block 4) but one at 64 (block 3).
  KvCacheManager p(Hybrid("mamba-all", 32));
  const RequestHandle pa = p.AddRequest(Range(0, 100));
  AdmitWhole(p, pa);
  p.RemoveRequest(pa);
  const RequestHandle pb = p.AddRequest(Concat(Range(0, 90), Range(1000, 10)));
  const PrefixHit hp = AdmitWhole(p, pb);
  CHECK(hp.num_tokens == 64);
  CHECK(hp.shared_prefix_boundary() == 80);
}

TEST_CASE("LH 5 Mamba align: the junction split caches the shared state", "[retention]") {
  const auto sem = GENERATE(VllmSemantics::kClassic, VllmSemantics::kLatest);
  auto cfg = KvCacheManagerConfigFromHybrid("mamba-align", 16, 200);
  REQUIRE(cfg.ok());
  cfg->semantics = sem;
  KvCacheManager m(cfg.value());
  // Admits a prompt in the chunks the split makes (no token budget); returns the chunks.
  auto admit = [&](RequestHandle h, PrefixHit& hit) {
    hit = m.GetComputedBlocks(h, 0);
    std::vector<int64_t> chunks;
    int64_t comp = hit.num_tokens;
    const int64_t P = m.num_tokens(h);
    while (comp < P) {
      const int64_t n =
          m.MambaAlignedSplit(h, comp, P - comp, hit.shared_prefix_tokens, INT64_MAX);
      REQUIRE(n > 0);
      REQUIRE(m.AllocateSlots(h, comp == hit.num_tokens ? 0 : comp, n,
                              comp == hit.num_tokens ? hit.num_tokens : 0));
      m.CheckInvariants();
      chunks.push_back(n);
      comp += n;
    }
    return chunks;
  };
  PrefixHit hit;
  const RequestHandle a = m.AddRequest(Range(0, 100));
  CHECK(admit(a, hit) == std::vector<int64_t>{96, 4});  // the last cacheable boundary 96
  m.RemoveRequest(a);
  const RequestHandle b = m.AddRequest(Concat(Range(0, 64), Range(1000, 36)));
  const auto chunks_b = admit(b, hit);
  CHECK(hit.num_tokens == 0);
  m.RemoveRequest(b);
  const RequestHandle c = m.AddRequest(Concat(Range(0, 64), Range(2000, 50)));
  const auto chunks_c = admit(c, hit);
  if (sem == VllmSemantics::kLatest) {
    CHECK(chunks_b == std::vector<int64_t>{64, 32, 4});  // junction 64, then 96
    CHECK(hit.num_tokens == 64);
    CHECK(chunks_c == std::vector<int64_t>{48, 2});  // 64 → 112 (last cacheable), tail
  } else {
    CHECK(chunks_b == std::vector<int64_t>{96, 4});
    CHECK(hit.num_tokens == 0);
  }
}

TEST_CASE("LH 6 the latest Mamba align split, stop by stop", "[retention][split]") {
  struct Case {
    const char* what;
    int64_t start, n, num_tokens, prompt, B, hash_block;
    bool partial, eagle;
    int64_t junction, limit, want;
  };
  const int64_t kBig = 8192;
  const Case cases[] = {
      {"junction floored to a block", 0, 100, 100, 100, 16, 16, false, false, 72, kBig, 64},
      {"junction on a block", 0, 100, 100, 100, 16, 16, false, false, 64, kBig, 64},
      {"junction inside the first block: ignored", 0, 100, 100, 100, 16, 16, false, false, 10,
       kBig, 96},
      {"junction at the start: ignored", 64, 36, 100, 100, 16, 16, false, false, 64, kBig, 32},
      {"last cacheable boundary", 0, 8192, 1000, 1000, 544, 544, false, false, 0, kBig, 544},
      {"chunk rounded down to a block", 0, 8192, 20000, 20000, 544, 544, false, false, 0, kBig,
       8160},
      {"short chunk, block fits the limit: wait", 0, 300, 2000, 2000, 544, 544, false, false, 0,
       kBig, 0},
      {"block larger than the limit: sub-block", 0, 256, 2000, 2000, 544, 544, false, false, 0,
       256, 256},
      {"  ... second sub-block chunk", 256, 256, 2000, 2000, 544, 544, false, false, 0, 256, 256},
      {"  ... re-aligns at the block it reaches", 512, 256, 2000, 2000, 544, 544, false, false,
       0, 256, 32},
      {"mid-block start stops at the next block", 40, 100, 200, 200, 16, 16, false, false, 0,
       kBig, 8},
      {"finer prefix_match_unit: prompt's last hash boundary", 128, 22, 150, 150, 64, 16, true,
       false, 0, kBig, 16},
      {"resumed with outputs: still split", 0, 120, 120, 100, 16, 16, false, false, 0, kBig,
       112},
      {"decoding: no split", 119, 1, 120, 100, 16, 16, false, false, 0, kBig, 1},
      {"EAGLE: one block less cacheable", 0, 100, 100, 100, 16, 16, false, true, 0, kBig, 80},
      // vLLM #51113: chunks short of the prefill's end are block-aligned even past the last
      // cacheable boundary, and a mid-block start always stops at its next block.
      {"short of the prefill end, past the last boundary: wait", 96, 3, 100, 100, 16, 16, false,
       false, 0, kBig, 0},
      {"EAGLE: rounded to the block past the last cacheable one", 176, 20, 200, 200, 16, 16,
       false, true, 0, kBig, 16},
      {"EAGLE: mid-block start, rounded to its next block", 185, 10, 200, 200, 16, 16, false,
       true, 0, kBig, 7},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    CHECK(LatestMambaAlignedSplit(c.start, c.n, c.num_tokens, c.prompt, c.B, c.hash_block,
                                  c.partial, c.eagle, c.junction, c.limit) == c.want);
  }
}

TEST_CASE("LH 7 a Mamba hit on a state cached in the same step waits a step", "[retention]") {
  const auto sem = GENERATE(VllmSemantics::kClassic, VllmSemantics::kLatest);
  auto cfg = KvCacheManagerConfigFromHybrid("mamba-align", 16, 200);
  REQUIRE(cfg.ok());
  cfg->semantics = sem;
  for (const bool stepping : {false, true}) {
    KvCacheManager m(cfg.value());
    if (stepping) m.NewStepStarts();
    // A: 100 tokens in chunks 96 + 4; the state at 96 is cached in this step.
    const RequestHandle a = m.AddRequest(Range(0, 100));
    REQUIRE(m.AllocateSlots(a, 0, 96));
    REQUIRE(m.AllocateSlots(a, 96, 4));
    // B: the same prompt hits 96 (full blocks 0–5, Mamba state 5).
    const RequestHandle b = m.AddRequest(Range(0, 100));
    PrefixHit hit = m.GetComputedBlocks(b, 0);
    REQUIRE(hit.num_tokens == 96);
    // With steps, that state is from this step: B is refused, and changes nothing.
    const int64_t free_before = m.num_free_blocks();
    CHECK(m.AllocateSlots(b, 0, 4, 96) == !stepping);
    if (stepping) {
      CHECK(m.num_free_blocks() == free_before);
      m.CheckInvariants();
      m.NewStepStarts();  // next step: the same hit is admitted
      hit = m.GetComputedBlocks(b, 0);
      REQUIRE(hit.num_tokens == 96);
      CHECK(m.AllocateSlots(b, 0, 4, 96));
    }
    m.CheckInvariants();
  }
}

TEST_CASE("Retention settings: profile defaults and validation", "[retention]") {
  KvCacheManagerConfig c = Hybrid("swa:33", KvCacheManagerConfig::kRetentionProfileDefault);
  CHECK(c.effective_retention_interval() == 0);
  c.semantics = VllmSemantics::kClassic;
  CHECK(c.effective_retention_interval() == KvCacheManagerConfig::kRetentionDense);
  CHECK(c.Validate().ok());
  c.prefix_cache_retention_interval = 0;  // classic has no sparse retention
  CHECK_FALSE(c.Validate().ok());
  c.semantics = VllmSemantics::kLatest;
  CHECK(c.Validate().ok());
  c.prefix_cache_retention_interval = -5;
  CHECK_FALSE(c.Validate().ok());
  // A positive interval is a whole number of scheduler blocks (16 here).
  c.prefix_cache_retention_interval = 64;
  CHECK(c.Validate().ok());
  c.prefix_cache_retention_interval = 40;
  const Status bad = c.Validate();
  CHECK_FALSE(bad.ok());
  CHECK(bad.message().find("multiple of the scheduler block size 16") != std::string::npos);
}

}  // namespace
}  // namespace kvsim
