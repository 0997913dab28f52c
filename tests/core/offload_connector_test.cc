// OffloadConnector (the scheduler side of vLLM's CPU offloading): every worked example and rule
// of kv-offload.md §2–§9, with expected values worked out by hand from the reference.
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <vector>

#include "core/offload/arc_policy.h"
#include "core/offload/offload_connector.h"
#include "core/vllm_semantics.h"

namespace kvsim {
namespace {

// A request as a test driver holds it: tokens, their 16-token block hashes, progress.
struct Req {
  OffloadRequestId id;
  std::vector<TokenId> tokens;
  int64_t prompt = 0;
  int64_t computed = 0;
  std::vector<BlockHash> hashes;

  Req(OffloadRequestId i, std::vector<TokenId> t) : id(i), tokens(std::move(t)) {
    prompt = static_cast<int64_t>(tokens.size());
    Rehash();
  }
  void Rehash() {
    hashes.clear();
    HashFullBlocks(kNoneHash, tokens, 16, hashes);
  }
  void Append(int n, TokenId first) {
    for (int i = 0; i < n; ++i) tokens.push_back(first + i);
    Rehash();
  }
  OffloadRequestView View() const {
    return {id, static_cast<int64_t>(tokens.size()), prompt, computed, hashes};
  }
};

std::vector<TokenId> Range(TokenId first, int n) {
  std::vector<TokenId> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), first);
  return v;
}

OffloadConnectorConfig Cfg(int64_t bs, int64_t f, int64_t cpu_blocks,
                           CpuEvictionPolicyKind policy = CpuEvictionPolicyKind::kLru,
                           VllmSemantics sem = VllmSemantics::kClassic) {
  OffloadConnectorConfig c;
  c.groups = {OffloadGroupConfig{bs, 0}};
  c.block_size_factor = f;
  c.hash_block_size = 16;
  c.semantics = sem;
  c.tier.num_blocks = cpu_blocks;
  c.tier.policy = policy;
  return c;
}

// One step's store jobs for requests scheduled with `n` tokens each (kind running).
std::vector<StoreJob> Stores(OffloadConnector& c, std::vector<std::pair<const Req*, int64_t>> reqs,
                             std::vector<StoreFailure>* failures = nullptr,
                             StoreCandidate::Kind kind = StoreCandidate::Kind::kRunning) {
  std::vector<StoreCandidate> cands;
  for (auto& [r, n] : reqs) cands.push_back({r->View(), n, kind, {}});
  const auto order = StoreVisitOrder(c.config().semantics, cands);
  return c.BuildStoreJobs(order, failures);
}

// Stores the whole prompt of `r` in one step and completes the copy.
void StoreAll(OffloadConnector& c, Req& r) {
  auto jobs = Stores(c, {{&r, r.prompt - r.computed}});
  for (const auto& j : jobs) c.CompleteJob(j.id);
}

TEST_CASE("Offload keys: the hash of the last hash block inside each full offloaded block",
          "[offload]") {
  Req r(1, Range(0, 150));  // 9 full 16-token blocks
  std::vector<OffloadKey> keys;
  ExtendOffloadKeys(r.hashes, /*hashes_per_block=*/4, /*group=*/2, keys);  // obs 64
  REQUIRE(keys.size() == 2);  // 150 // 64: the partial tail gets no key
  CHECK(keys[0] == OffloadKey{r.hashes[3], 2});
  CHECK(keys[1] == OffloadKey{r.hashes[7], 2});
}

TEST_CASE("§4: a full CPU hit covers every token and the request restarts at num_tokens − 1",
          "[offload]") {
  OffloadConnector c(Cfg(16, 4, 64));  // obs 64
  Req first(1, Range(0, 256));
  StoreAll(c, first);
  CHECK(c.tier().num_ready() == 4);
  Req again(2, Range(0, 256));
  const CpuHit hit = c.Lookup(again.View(), /*gpu_hit=*/0);
  CHECK_FALSE(hit.deferred);
  CHECK(hit.tokens == 256);  // max_hit = min(256, 4 · 64): not capped at 255
  auto load = c.OnAllocated(again.View(), 0, hit.tokens);
  REQUIRE(load.has_value());
  CHECK(load->groups[0].first_gpu_block == 0);
  CHECK(load->groups[0].num_gpu_blocks == 16);
  CHECK(load->block_indices == std::vector<int64_t>{0, 1, 2, 3});
  CHECK(OffloadConnector::ComputedTokensAfterLoad(256, 0 + hit.tokens) == 255);
  // Had the prompt been in the GPU cache, g = 240 and the CPU adds nothing: 256 − 240 < 64.
  Req third(3, Range(0, 256));
  CHECK(c.Lookup(third.View(), 240).tokens == 0);
}

TEST_CASE("§8: bs 16, obs 64, GPU hit 48 → e = 208, 13 GPU blocks from CPU blocks 0–3",
          "[offload]") {
  OffloadConnector c(Cfg(16, 4, 64));
  Req first(1, Range(0, 300));
  StoreAll(c, first);  // 300 // 64 = 4 offloaded blocks
  Req r(2, Range(0, 300));
  const CpuHit hit = c.Lookup(r.View(), 48);
  CHECK(hit.tokens == 208);  // max_hit 256, start 0, 4 hits
  auto load = c.OnAllocated(r.View(), 48, hit.tokens);
  REQUIRE(load.has_value());
  const LoadGroupPlan& p = load->groups[0];
  CHECK(p.first_gpu_block == 3);
  CHECK(p.num_gpu_blocks == 13);
  CHECK(p.first_cpu_block == 0);
  CHECK(p.end_cpu_block == 4);
  CHECK(p.skip_gpu_blocks == 3);
  CHECK(load->cpu_slots == std::vector<int32_t>{0, 1, 2, 3});
  // Blocks that came from the CPU are not stored again: cursor at cdiv(48 + 208, 64) = 4.
  CHECK(c.next_stored_block_idx(2) == 4);
  CHECK(c.tier().Find(load->keys[0])->ref_cnt == 1);  // pinned
  c.CompleteJob(load->id);
  CHECK(c.tier().Find(load->keys[0])->ref_cnt == 0);
}

TEST_CASE("§8: a matching prefix shorter than the next obs boundary is lost", "[offload]") {
  OffloadConnector c(Cfg(16, 4, 64));
  Req first(1, Range(0, 100));  // one offloaded block (64 tokens) stored
  StoreAll(c, first);
  CHECK(c.tier().num_ready() == 1);
  Req r(2, Range(0, 100));
  CHECK(c.Lookup(r.View(), 0).tokens == 64);  // not 96: only whole offloaded blocks
  // A prompt under one offloaded block is never offloaded.
  OffloadConnector c2(Cfg(16, 4, 64));
  Req small(3, Range(0, 63));
  CHECK(Stores(c2, {{&small, 63}}).empty());
  CHECK(c2.tier().num_resident() == 0);
}

TEST_CASE("§5 worked example as a step table (bs = obs = 16, LRU, instant copies)",
          "[offload]") {
  OffloadConnector c(Cfg(16, 1, 1000));
  Req turn1(1, Range(0, 260));
  // step 0: schedule(0) admits turn 1 (no CPU hit) and plans blocks 0–15 (256 tokens; the
  // last 4 tokens are a partial block).
  CHECK(c.Lookup(turn1.View(), 0).tokens == 0);
  auto jobs = Stores(c, {{&turn1, 260}}, nullptr, StoreCandidate::Kind::kNew);
  REQUIRE(jobs.size() == 1);
  std::vector<int64_t> b0_15(16);
  std::iota(b0_15.begin(), b0_15.end(), 0);
  CHECK(jobs[0].block_indices == b0_15);
  CHECK(c.next_stored_block_idx(1) == 16);
  // step 1: the copy runs; a lookup in schedule(1) meets blocks still in flight → deferred.
  Req probe(9, Range(0, 260));
  CHECK(c.Lookup(probe.View(), 0).deferred);
  c.CompleteJob(jobs[0].id);  // reported with step 1's output
  // schedule(2) on: lookup-ready.
  CHECK(c.Lookup(probe.View(), 0).tokens == 256);
  c.RequestFinished(9);
  c.RequestFinished(1);
  // step 40: turn 2 = the 260 tokens + 60 new. GPU hit 0, CPU hit 256: a load of 16 blocks.
  Req turn2(2, Range(0, 260));
  turn2.Append(60, 5000);
  turn2.prompt = 320;
  const CpuHit hit = c.Lookup(turn2.View(), 0);
  CHECK(hit.tokens == 256);
  auto load = c.OnAllocated(turn2.View(), 0, hit.tokens);
  REQUIRE(load.has_value());
  CHECK(load->block_indices == b0_15);
  CHECK(load->groups[0].num_gpu_blocks == 16);
  // Nothing of turn 2 runs in step 40, so no store for it; the load finishes in step 40.
  c.CompleteJob(load->id);
  // step 41: promoted with 256 computed tokens, 64 scheduled from position 256; the same step
  // plans the store of blocks 16–19.
  turn2.computed = OffloadConnector::ComputedTokensAfterLoad(320, 256);
  CHECK(turn2.computed == 256);
  jobs = Stores(c, {{&turn2, 64}}, nullptr, StoreCandidate::Kind::kNew);
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0].block_indices == std::vector<int64_t>{16, 17, 18, 19});
}

TEST_CASE("Every lookup touches all of the request's keys, whatever its result", "[offload]") {
  OffloadConnector c(Cfg(16, 1, 4));
  Req a(1, Range(0, 32)), b(2, Range(100, 32));
  StoreAll(c, a);  // LRU→MRU after the store's touch: A1 A0
  StoreAll(c, b);  // A1 A0 B1 B0
  // A lookup that gains nothing (40 tokens, GPU hit 32: 32 − 32 < 16) still touches A0, A1.
  Req a2(3, Range(0, 32));
  a2.Append(8, 900);
  CHECK(c.Lookup(a2.View(), 32).tokens == 0);
  // LRU→MRU now B1 B0 A1 A0: the next store evicts B1.
  Req d(4, Range(200, 16));
  auto jobs = Stores(c, {{&d, 16}});
  REQUIRE(jobs.size() == 1);
  REQUIRE(jobs[0].evicted.size() == 1);
  CHECK(jobs[0].evicted[0].origin.request == 2);
  CHECK(jobs[0].evicted[0].origin.block_index == 1);
}

TEST_CASE("A hit block being loaded for another request defers, with prefix caching only",
          "[offload]") {
  for (bool caching : {true, false}) {
    OffloadConnectorConfig cfg = Cfg(16, 1, 8);
    cfg.enable_prefix_caching = caching;
    OffloadConnector c(cfg);
    Req first(1, Range(0, 40));
    StoreAll(c, first);  // blocks 0, 1
    Req r2(2, Range(0, 40)), r3(3, Range(0, 40));
    const CpuHit h2 = c.Lookup(r2.View(), 0);
    REQUIRE(h2.tokens == 32);
    auto load = c.OnAllocated(r2.View(), 0, 32);
    REQUIRE(load.has_value());
    const CpuHit h3 = c.Lookup(r3.View(), 0);
    if (caching) {
      CHECK(h3.deferred);
      c.CompleteJob(load->id);
      CHECK(c.Lookup(r3.View(), 0).tokens == 32);  // the retry after the load
    } else {
      CHECK(h3.tokens == 32);
      auto load3 = c.OnAllocated(r3.View(), 0, 32);
      CHECK(c.tier().Find(load3->keys[0])->ref_cnt == 2);
    }
  }
}

TEST_CASE("GPU-hit blocks are stored again; a CPU hit moves the cursor", "[offload]") {
  OffloadConnector c(Cfg(16, 1, 16));
  Req r(1, Range(0, 64));
  CHECK(c.Lookup(r.View(), 32).tokens == 0);  // GPU hit 32, CPU empty
  r.computed = 32;
  auto jobs = Stores(c, {{&r, 32}}, nullptr, StoreCandidate::Kind::kNew);
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0].block_indices == std::vector<int64_t>{0, 1, 2, 3});  // from 0, not from 2
}

TEST_CASE("A store that cannot evict fails whole, keeps the cursor and is retried", "[offload]") {
  OffloadConnector c(Cfg(16, 1, 2));
  Req r1(1, Range(0, 32)), r2(2, Range(500, 32));
  c.Lookup(r1.View(), 0);
  c.Lookup(r2.View(), 0);
  std::vector<StoreFailure> failures;
  // Step 0: r1's two blocks take both slots; r2's two cannot evict blocks still in flight.
  auto jobs = Stores(c, {{&r1, 32}, {&r2, 32}}, &failures, StoreCandidate::Kind::kNew);
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0].request == 1);
  REQUIRE(failures.size() == 1);
  CHECK(failures[0].request == 2);
  CHECK(failures[0].num_blocks == 2);
  CHECK(c.next_stored_block_idx(2) == 0);
  c.CompleteJob(jobs[0].id);
  // Step 1: r2 decodes one token; the same blocks are tried again and now evict r1's, tail
  // first (r1's store touched its keys in reverse: LRU order r1#1, r1#0).
  r1.computed = r2.computed = 32;
  r2.Append(1, 7000);
  failures.clear();
  jobs = Stores(c, {{&r2, 1}}, &failures);
  REQUIRE(jobs.size() == 1);
  CHECK(failures.empty());
  CHECK(jobs[0].block_indices == std::vector<int64_t>{0, 1});
  REQUIRE(jobs[0].evicted.size() == 2);
  CHECK(jobs[0].evicted[0].origin.request == 1);
  CHECK(jobs[0].evicted[0].origin.block_index == 1);
  CHECK(jobs[0].evicted[1].origin.block_index == 0);
  CHECK(c.next_stored_block_idx(2) == 2);
}

TEST_CASE("ARC: a request's own later store promotes its earlier blocks to T2", "[offload]") {
  OffloadConnector c(Cfg(16, 1, 16, CpuEvictionPolicyKind::kArc));
  Req r(1, Range(0, 64));
  c.Lookup(r.View(), 0);
  auto j0 = Stores(c, {{&r, 32}}, nullptr, StoreCandidate::Kind::kNew);  // blocks 0, 1
  REQUIRE(j0.size() == 1);
  c.CompleteJob(j0[0].id);
  r.computed = 32;
  auto j1 = Stores(c, {{&r, 32}});  // blocks 2, 3; then touch 3, 2, 1, 0
  REQUIRE(j1.size() == 1);
  const auto& arc = dynamic_cast<const ArcCpuPolicy&>(c.tier().policy());
  std::vector<OffloadKey> keys;
  ExtendOffloadKeys(r.hashes, 1, 0, keys);
  // 3 and 2 are in flight: they stay in T1 (2 ends most recent); 1 then 0 move to T2.
  std::vector<OffloadKey> t1, t2;
  for (const auto& e : arc.t1()) t1.push_back(e.first);
  for (const auto& e : arc.t2()) t2.push_back(e.first);
  CHECK(t1 == std::vector<OffloadKey>{keys[3], keys[2]});
  CHECK(t2 == std::vector<OffloadKey>{keys[1], keys[0]});
}

TEST_CASE("Classic stores decode blocks; latest stores prompt blocks only", "[offload]") {
  for (VllmSemantics sem : {VllmSemantics::kClassic, VllmSemantics::kLatest}) {
    OffloadConnector c(Cfg(16, 1, 16, CpuEvictionPolicyKind::kLru, sem));
    Req r(1, Range(0, 32));
    c.Lookup(r.View(), 0);
    auto j = Stores(c, {{&r, 32}}, nullptr, StoreCandidate::Kind::kNew);
    REQUIRE(j.size() == 1);
    c.CompleteJob(j[0].id);
    // 16 tokens decoded: known 48, the step computes the 48th token's KV.
    r.Append(16, 9000);
    r.computed = 47;
    j = Stores(c, {{&r, 1}});
    if (sem == VllmSemantics::kClassic) {
      REQUIRE(j.size() == 1);
      CHECK(j[0].block_indices == std::vector<int64_t>{2});
    } else {
      CHECK(j.empty());
    }
  }
}

TEST_CASE("Store visit order: classic new → running → resumed; latest scheduled → finished",
          "[offload]") {
  using Kind = StoreCandidate::Kind;
  std::vector<StoreCandidate> s(5);
  const Kind kinds[] = {Kind::kRunning, Kind::kRunning, Kind::kNew, Kind::kResumed,
                        Kind::kFinished};
  for (int i = 0; i < 5; ++i) {
    s[static_cast<size_t>(i)].req.id = i;
    s[static_cast<size_t>(i)].kind = kinds[i];
  }
  auto ids = [](const std::vector<const StoreCandidate*>& v) {
    std::vector<OffloadRequestId> out;
    for (auto* c : v) out.push_back(c->req.id);
    return out;
  };
  CHECK(ids(StoreVisitOrder(VllmSemantics::kClassic, s)) ==
        std::vector<OffloadRequestId>{2, 0, 1, 3});
  CHECK(ids(StoreVisitOrder(VllmSemantics::kLatest, s)) ==
        std::vector<OffloadRequestId>{0, 1, 2, 3, 4});
}

TEST_CASE("A resumed request's first store moves the cursor back to its progress",
          "[offload]") {
  OffloadConnector c(Cfg(16, 1, 16));
  Req r(1, Range(0, 64));
  c.Lookup(r.View(), 0);
  auto j = Stores(c, {{&r, 64}}, nullptr, StoreCandidate::Kind::kNew);
  REQUIRE(j.size() == 1);
  c.CompleteJob(j[0].id);
  CHECK(c.next_stored_block_idx(1) == 4);
  // Preempted, then resumed without a CPU hit (the cursor is kept) and a first chunk of 16
  // tokens: nothing new to store, and the cursor is *set* to 16 // 16 = 1, so blocks 1–3 are
  // offered to the tier again as the request recomputes them.
  r.computed = 0;
  j = Stores(c, {{&r, 16}}, nullptr, StoreCandidate::Kind::kResumed);
  CHECK(j.empty());
  CHECK(c.next_stored_block_idx(1) == 1);
}

TEST_CASE("store_threshold through the connector: stored once looked up twice", "[offload]") {
  OffloadConnectorConfig cfg = Cfg(16, 1, 16);
  cfg.tier.store_threshold = 2;
  OffloadConnector c(cfg);
  Req r(1, Range(0, 32));
  c.Lookup(r.View(), 0);  // scans block 0 (a miss ends the scan): count(0) = 1
  CHECK(Stores(c, {{&r, 32}}, nullptr, StoreCandidate::Kind::kNew).empty());
  CHECK(c.next_stored_block_idx(1) == 2);  // filtered blocks are not retried
  Req r2(2, Range(0, 32));
  c.Lookup(r2.View(), 0);  // count(0) = 2
  auto j = Stores(c, {{&r2, 32}}, nullptr, StoreCandidate::Kind::kNew);
  REQUIRE(j.size() == 1);
  CHECK(j[0].block_indices == std::vector<int64_t>{0});
}

TEST_CASE("Hybrid: a Mamba group caps the hit at num_tokens − 1 and scans from the end",
          "[offload]") {
  OffloadConnectorConfig cfg = Cfg(16, 1, 32);
  cfg.groups = {OffloadGroupConfig{16, 0}, OffloadGroupConfig{16, 1}};  // full, Mamba
  OffloadConnector c(cfg);
  Req r(1, Range(0, 64));
  std::vector<OffloadKey> full, mamba;
  ExtendOffloadKeys(r.hashes, 1, 0, full);
  ExtendOffloadKeys(r.hashes, 1, 1, mamba);
  auto put = [&](std::vector<OffloadKey> ks) {
    auto p = c.mutable_tier().PrepareStore(ks);
    REQUIRE(p.has_value());
    c.mutable_tier().CompleteStore(ks);
  };
  put(full);
  put({mamba[0], mamba[1], mamba[2], mamba[3]});
  // max_hit = 63; full attention hits 4 blocks; Mamba's last state (block 3) is there → 63.
  CHECK(c.Lookup(r.View(), 0).tokens == 63);

  OffloadConnector c2(cfg);
  auto put2 = [&](std::vector<OffloadKey> ks) {
    REQUIRE(c2.mutable_tier().PrepareStore(ks).has_value());
    c2.mutable_tier().CompleteStore(ks);
  };
  put2(full);
  put2({mamba[0], mamba[1], mamba[2]});  // no state at block 3: the hit ends at block 2 → 48
  Req r2(2, Range(0, 64));
  CHECK(c2.Lookup(r2.View(), 0).tokens == 48);
}

TEST_CASE("CPU tier size from bytes: classic floor, latest rounds the block to 4096",
          "[offload]") {
  // 1 GiB, one GPU block = 100,000 B (all layers and ranks), f = 4: 400,000 B per CPU block.
  CHECK(NumCpuBlocksFromBytes(1 << 30, 100000, 4, VllmSemantics::kClassic) == 2684);
  // latest: 400,000 → 401,408 (98 pages); 1,073,741,824 // 401,408 = 2674.
  CHECK(NumCpuBlocksFromBytes(1 << 30, 100000, 4, VllmSemantics::kLatest) == 2674);
}

TEST_CASE("Config validation mirrors vLLM's asserts", "[offload]") {
  OffloadConnectorConfig cfg = Cfg(16, 1, 8);
  CHECK(cfg.Validate().ok());
  cfg.hash_block_size = 32;  // GPU block 16 not a multiple of the hash block
  CHECK_FALSE(cfg.Validate().ok());
  cfg = Cfg(16, 0, 8);
  CHECK_FALSE(cfg.Validate().ok());
}

// Randomized driver: requests sharing prefixes are looked up, loaded, prefilled in chunks and
// stored, with copies completing in random order. After every call the tier's invariants hold,
// no eviction takes a block that a pending load reads, and a load never reads a block that
// is not ready.
TEST_CASE("Randomized connector runs keep the tier consistent", "[offload]") {
  for (auto policy : {CpuEvictionPolicyKind::kLru, CpuEvictionPolicyKind::kArc}) {
    std::mt19937_64 rng(policy == CpuEvictionPolicyKind::kLru ? 3 : 5);
    auto rnd = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
    OffloadConnector c(Cfg(16, 2, 24, policy));
    std::vector<Req> reqs;
    std::vector<OffloadJobId> jobs;
    std::map<OffloadJobId, std::vector<OffloadKey>> loads;
    for (int it = 0; it < 600; ++it) {
      const int op = rnd(4);
      if (op == 0 || reqs.empty()) {
        // A new request: one of 4 shared prefixes plus a private tail.
        const int prefix = rnd(4);
        Req r(it, Range(prefix * 10000, 32 * (1 + prefix)));
        r.Append(rnd(100), 500000 + it * 1000);
        const int64_t n = static_cast<int64_t>(r.tokens.size());
        const int64_t g = std::min<int64_t>(16 * rnd(4), (n - 1) / 16 * 16);
        const CpuHit h = c.Lookup(r.View(), g);
        if (h.deferred) continue;
        REQUIRE(g + h.tokens <= n);
        if (h.tokens > 0) REQUIRE((g + h.tokens) % 32 == 0);
        if (auto load = c.OnAllocated(r.View(), g, h.tokens)) {
          for (const auto& k : load->keys) REQUIRE(c.tier().Find(k)->ready());
          loads[load->id] = load->keys;
          jobs.push_back(load->id);
        }
        r.computed = h.tokens > 0 ? OffloadConnector::ComputedTokensAfterLoad(n, g + h.tokens) : g;
        reqs.push_back(std::move(r));
      } else if (op == 1) {
        // A step: some requests get a chunk.
        std::vector<StoreCandidate> cands;
        for (auto& r : reqs) {
          const int64_t left = static_cast<int64_t>(r.tokens.size()) - r.computed;
          if (left <= 0 || rnd(2) == 0) continue;
          cands.push_back({r.View(), std::min<int64_t>(left, 1 + rnd(64)),
                           StoreCandidate::Kind::kRunning, {}});
        }
        const auto order = StoreVisitOrder(VllmSemantics::kClassic, cands);
        for (const StoreJob& j : c.BuildStoreJobs(order)) {
          for (const auto& e : j.evicted)
            for (const auto& [id, keys] : loads)
              REQUIRE(std::find(keys.begin(), keys.end(), e.key) == keys.end());
          jobs.push_back(j.id);
        }
        for (auto& cand : cands)
          for (auto& r : reqs)
            if (r.id == cand.req.id) r.computed += cand.num_scheduled_tokens;
      } else if (op == 2 && !jobs.empty()) {
        const size_t i = static_cast<size_t>(rnd(static_cast<int>(jobs.size())));
        c.CompleteJob(jobs[i]);
        loads.erase(jobs[i]);
        jobs.erase(jobs.begin() + static_cast<std::ptrdiff_t>(i));
      } else if (op == 3 && !reqs.empty()) {
        const size_t i = static_cast<size_t>(rnd(static_cast<int>(reqs.size())));
        c.RequestFinished(reqs[i].id);
        reqs.erase(reqs.begin() + static_cast<std::ptrdiff_t>(i));
      }
      c.tier().CheckInvariants();
    }
  }
}

}  // namespace
}  // namespace kvsim
