// CpuOffloadTier with the LRU and ARC policies (kv-offload.md §3, §7): slot hand-out order,
// lookups, atomic stores, pinning, store_threshold, LRU tail-first eviction and the ARC
// quirks, each worked out by hand from the reference; then randomized invariant runs.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <map>
#include <random>
#include <vector>

#include "core/offload/arc_policy.h"
#include "core/offload/cpu_offload_tier.h"

namespace kvsim {
namespace {

OffloadKey K(int i) { return OffloadKey{static_cast<BlockHash>(1000 + i), 0}; }
using Keys = std::vector<OffloadKey>;
constexpr int A = 0, B = 1, C = 2, D = 3, E = 4, F = 5, G = 6, X = 7, Y = 8;

CpuTierConfig Cfg(int64_t n, CpuEvictionPolicyKind p = CpuEvictionPolicyKind::kLru,
                  int64_t threshold = 0) {
  CpuTierConfig c;
  c.num_blocks = n;
  c.policy = p;
  c.store_threshold = threshold;
  return c;
}

// Stores and completes `keys`; returns the slots.
std::vector<int32_t> StoreReady(CpuOffloadTier& t, const Keys& keys) {
  auto plan = t.PrepareStore(keys);
  REQUIRE(plan.has_value());
  t.CompleteStore(plan->keys_to_store);
  return plan->slots;
}

Keys EvictedKeys(const CpuStorePlan& p) {
  Keys out;
  for (const auto& e : p.evicted) out.push_back(e.key);
  return out;
}

TEST_CASE("Slots: fresh 0,1,2,… first, then the free list last freed first", "[offload]") {
  CpuOffloadTier t(Cfg(4));
  CHECK(StoreReady(t, {K(A), K(B), K(C), K(D)}) == std::vector<int32_t>{0, 1, 2, 3});
  // Full: E evicts the LRU block A and takes its slot 0.
  auto pe = t.PrepareStore(Keys{K(E)});
  REQUIRE(pe.has_value());
  CHECK(EvictedKeys(*pe) == Keys{K(A)});
  CHECK(pe->slots == std::vector<int32_t>{0});
  // E is in flight, so F and G evict B (slot 1) then C (slot 2); the free list is a stack:
  // F gets 2 (freed last), G gets 1.
  auto pfg = t.PrepareStore(Keys{K(F), K(G)});
  REQUIRE(pfg.has_value());
  CHECK(EvictedKeys(*pfg) == Keys{K(B), K(C)});
  CHECK(pfg->slots == std::vector<int32_t>{2, 1});
  CHECK(t.num_resident() == 4);
  CHECK(t.num_in_flight() == 3);
  t.CheckInvariants();
}

TEST_CASE("Lookup: consecutive ready hits; a resident block in flight defers", "[offload]") {
  CpuOffloadTier t(Cfg(8));
  StoreReady(t, {K(A), K(B)});
  REQUIRE(t.PrepareStore(Keys{K(C)}).has_value());  // C: store in flight
  auto r = t.Lookup(Keys{K(A), K(B), K(C)});
  CHECK(r.deferred);
  r = t.Lookup(Keys{K(A), K(B), K(X), K(C)});  // the miss at X ends the scan before C
  CHECK_FALSE(r.deferred);
  CHECK(r.hits == 2);
  CHECK(t.Lookup(Keys{K(X), K(A)}).hits == 0);
  t.CompleteStore(Keys{K(C)});
  CHECK(t.Lookup(Keys{K(A), K(B), K(C)}).hits == 3);
  // Already resident keys are filtered from a store (ready or in flight).
  REQUIRE(t.PrepareStore(Keys{K(D)}).has_value());
  auto p = t.PrepareStore(Keys{K(A), K(D), K(E)});
  REQUIRE(p.has_value());
  CHECK(p->keys_to_store == Keys{K(E)});
  t.CheckInvariants();
}

TEST_CASE("LRU: touch walks keys in reverse, so a request's tail is evicted first",
          "[offload]") {
  CpuOffloadTier t(Cfg(4));
  StoreReady(t, {K(A), K(B), K(C), K(D)});  // LRU→MRU: A B C D
  t.Touch(Keys{K(A), K(B), K(C), K(D)});        // D, C, B, A moved to MRU in turn: D C B A
  auto p = t.PrepareStore(Keys{K(X), K(Y)});
  REQUIRE(p.has_value());
  CHECK(EvictedKeys(*p) == Keys{K(D), K(C)});
  t.CheckInvariants();
}

TEST_CASE("Eviction never takes pinned or in-flight blocks, and is all or nothing",
          "[offload]") {
  const auto policy = GENERATE(CpuEvictionPolicyKind::kLru, CpuEvictionPolicyKind::kArc);
  CpuOffloadTier t(Cfg(3, policy));
  StoreReady(t, {K(A), K(B)});
  REQUIRE(t.PrepareStore(Keys{K(C)}).has_value());  // in flight
  CHECK(t.PrepareLoad(Keys{K(A)}) == std::vector<int32_t>{0});
  CHECK(t.Find(K(A))->ref_cnt == 1);
  // Two slots needed, only B is evictable: the store fails and nothing changes.
  CHECK_FALSE(t.PrepareStore(Keys{K(X), K(Y)}).has_value());
  CHECK(t.Find(K(B)) != nullptr);
  CHECK(t.Find(K(X)) == nullptr);
  CHECK(t.num_resident() == 3);
  t.CheckInvariants();
  // Retry after the load completed and the store landed: A and B are evictable now.
  t.CompleteLoad(Keys{K(A)});
  t.CompleteStore(Keys{K(C)});
  auto p = t.PrepareStore(Keys{K(X), K(Y)});
  REQUIRE(p.has_value());
  CHECK(EvictedKeys(*p) == Keys{K(A), K(B)});
  t.CheckInvariants();
}

TEST_CASE("The keys of the store itself are protected from its eviction", "[offload]") {
  CpuOffloadTier t(Cfg(2));
  StoreReady(t, {K(A), K(B)});  // A is the LRU block
  auto p = t.PrepareStore(Keys{K(A), K(X)});
  REQUIRE(p.has_value());
  CHECK(p->keys_to_store == Keys{K(X)});
  CHECK(EvictedKeys(*p) == Keys{K(B)});  // A is protected although least recent
}

TEST_CASE("A failed store frees its slots", "[offload]") {
  CpuOffloadTier t(Cfg(2));
  REQUIRE(t.PrepareStore(Keys{K(A), K(B)}).has_value());
  t.CompleteStore(Keys{K(A), K(B)}, /*success=*/false);
  CHECK(t.num_resident() == 0);
  CHECK(t.num_free_slots() == 2);
  CHECK(StoreReady(t, {K(C)}) == std::vector<int32_t>{1});  // last freed first
  t.CheckInvariants();
}

TEST_CASE("store_threshold: a block is stored only after that many lookups", "[offload]") {
  CpuOffloadTier t(Cfg(4, CpuEvictionPolicyKind::kLru, /*threshold=*/2));
  auto p = t.PrepareStore(Keys{K(A)});  // never looked up: filtered, but the store succeeds
  REQUIRE(p.has_value());
  CHECK(p->keys_to_store.empty());
  t.Lookup(Keys{K(A), K(B)});  // A misses and ends the scan: A counted, B not
  CHECK(t.lookup_count(K(A)) == 1);
  CHECK(t.lookup_count(K(B)) == 0);
  CHECK(t.PrepareStore(Keys{K(A)})->keys_to_store.empty());
  t.Lookup(Keys{K(A)});
  CHECK(t.lookup_count(K(A)) == 2);
  CHECK(t.PrepareStore(Keys{K(A)})->keys_to_store == Keys{K(A)});
  // Below 2 means "store everything".
  CpuOffloadTier one(Cfg(4, CpuEvictionPolicyKind::kLru, /*threshold=*/1));
  CHECK(one.PrepareStore(Keys{K(A)})->keys_to_store == Keys{K(A)});
}

TEST_CASE("store_threshold tracker is an LRU table of max_tracker_size keys", "[offload]") {
  CpuTierConfig c = Cfg(4, CpuEvictionPolicyKind::kLru, 2);
  c.max_tracker_size = 2;
  CpuOffloadTier t(c);
  t.Lookup(Keys{K(A)});
  t.Lookup(Keys{K(B)});
  t.Lookup(Keys{K(A)});  // A refreshed: B is now the oldest
  t.Lookup(Keys{K(C)});  // table full: B dropped
  CHECK(t.lookup_count(K(A)) == 2);
  CHECK(t.lookup_count(K(B)) == 0);
  CHECK(t.lookup_count(K(C)) == 1);
  t.CheckInvariants();
}

const ArcCpuPolicy& Arc(const CpuOffloadTier& t) {
  return dynamic_cast<const ArcCpuPolicy&>(t.policy());
}
Keys ListKeys(const OrderedKeyMap<CpuBlock>& m) {
  Keys out;
  for (const auto& e : m) out.push_back(e.first);
  return out;
}
Keys GhostKeys(const OrderedKeyMap<char>& m) {
  Keys out;
  for (const auto& e : m) out.push_back(e.first);
  return out;
}

TEST_CASE("ARC: a touch promotes T1→T2 only once the block is ready", "[offload]") {
  CpuOffloadTier t(Cfg(4, CpuEvictionPolicyKind::kArc));
  REQUIRE(t.PrepareStore(Keys{K(A), K(B)}).has_value());
  t.Touch(Keys{K(A), K(B)});  // not ready: both stay in T1, moved to MRU in reverse (B, then A)
  CHECK(ListKeys(Arc(t).t1()) == Keys{K(B), K(A)});
  CHECK(Arc(t).t2().empty());
  t.CompleteStore(Keys{K(A), K(B)});
  t.Touch(Keys{K(A)});
  CHECK(ListKeys(Arc(t).t1()) == Keys{K(B)});
  CHECK(ListKeys(Arc(t).t2()) == Keys{K(A)});
}

TEST_CASE("ARC: ghost lists, p adaptation, and the whole-eviction failure when |T1| < p",
          "[offload]") {
  // Capacity 2; every step worked out by hand from kv-offload.md §7.
  CpuOffloadTier t(Cfg(2, CpuEvictionPolicyKind::kArc));
  StoreReady(t, {K(A), K(B)});  // T1 = [A B], p = 0
  // C needs one slot: |T1| = 2 ≥ int(0) → T1's LRU candidate A goes to B1.
  auto p = t.PrepareStore(Keys{K(C)});
  REQUIRE(p.has_value());
  CHECK(EvictedKeys(*p) == Keys{K(A)});
  CHECK(GhostKeys(Arc(t).b1()) == Keys{K(A)});
  t.CompleteStore(Keys{K(C)});
  // Touching a B1 ghost: p += max(1, |B2|/|B1| = 0) = 1.
  t.Touch(Keys{K(A)});
  CHECK(Arc(t).target_t1_size() == 1.0);
  // Storing A again: |T1| = 2 ≥ 1 → B leaves T1 for B1; inserting A drops it from B1.
  p = t.PrepareStore(Keys{K(A)});
  REQUIRE(p.has_value());
  CHECK(EvictedKeys(*p) == Keys{K(B)});
  CHECK(GhostKeys(Arc(t).b1()) == Keys{K(B)});
  CHECK(ListKeys(Arc(t).t1()) == Keys{K(C), K(A)});
  t.CompleteStore(Keys{K(A)});
  t.Touch(Keys{K(B)});  // B1 ghost again: p = min(1 + 1, capacity 2) = 2
  CHECK(Arc(t).target_t1_size() == 2.0);
  t.Touch(Keys{K(C)});  // ready: promoted to T2
  CHECK(ListKeys(Arc(t).t1()) == Keys{K(A)});
  CHECK(ListKeys(Arc(t).t2()) == Keys{K(C)});
  // Pin C. |T1| = 1 < p = 2 → T2 is asked, has no candidate → the eviction fails although A
  // in T1 is evictable.
  t.PrepareLoad(Keys{K(C)});
  CHECK(t.num_evictable() == 1);
  CHECK_FALSE(t.PrepareStore(Keys{K(D)}).has_value());
  CHECK(ListKeys(Arc(t).t1()) == Keys{K(A)});
  CHECK(GhostKeys(Arc(t).b2()).empty());
  // Unpinned, C is T2's candidate and goes to B2.
  t.CompleteLoad(Keys{K(C)});
  p = t.PrepareStore(Keys{K(D)});
  REQUIRE(p.has_value());
  CHECK(EvictedKeys(*p) == Keys{K(C)});
  CHECK(GhostKeys(Arc(t).b2()) == Keys{K(C)});
  CHECK(ListKeys(Arc(t).t1()) == Keys{K(A), K(D)});
  t.CompleteStore(Keys{K(D)});
  // Touching a B2 ghost: p −= max(1, |B1|/|B2| = 1/1) → 1.
  t.Touch(Keys{K(C)});
  CHECK(Arc(t).target_t1_size() == 1.0);
  // Two more T1 evictions (|T1| = 2 ≥ 1 each time): A, then D; B1 = [B A D] is trimmed to
  // the capacity, oldest first → [A D].
  StoreReady(t, {K(E)});
  StoreReady(t, {K(F)});
  CHECK(GhostKeys(Arc(t).b1()) == Keys{K(A), K(D)});
  CHECK(ListKeys(Arc(t).t1()) == Keys{K(E), K(F)});
  t.CheckInvariants();
}

TEST_CASE("ARC: the virtual |T1| shrinks with each T1 pick within one eviction",
          "[offload]") {
  // Capacity 4, T1 = [A B], T2 = [C D], p = 1: the first pick comes from T1 (2 ≥ 1), the
  // second too (virtual |T1| = 1 ≥ 1), the third from T2 (0 < 1).
  CpuOffloadTier t(Cfg(4, CpuEvictionPolicyKind::kArc));
  StoreReady(t, {K(C), K(D)});
  t.Touch(Keys{K(D), K(C)});  // reverse: C then D → T2 = [C D]
  StoreReady(t, {K(A), K(B)});
  // Make p = 1 through a B1 ghost: storing X evicts T1's LRU block A into B1; touch A.
  auto p = t.PrepareStore(Keys{K(X)});
  REQUIRE(p.has_value());
  CHECK(EvictedKeys(*p) == Keys{K(A)});  // |T1| = 2 ≥ int(0)
  t.CompleteStore(Keys{K(X)});
  t.Touch(Keys{K(A)});  // p = 1
  REQUIRE(Arc(t).target_t1_size() == 1.0);
  // Now T1 = [B X], T2 = [C D].
  p = t.PrepareStore(Keys{K(E), K(F), K(G)});
  REQUIRE(p.has_value());
  CHECK(EvictedKeys(*p) == Keys{K(B), K(X), K(C)});
  t.CheckInvariants();
}

// Randomized: any sequence of operations keeps the invariants, and an eviction only ever takes
// blocks that were ready, unpinned and not among the store's keys.
TEST_CASE("Randomized tier operations keep slots and ref counts consistent", "[offload]") {
  const auto policy = GENERATE(CpuEvictionPolicyKind::kLru, CpuEvictionPolicyKind::kArc);
  const auto threshold = GENERATE(0, 2);
  std::mt19937_64 rng(policy == CpuEvictionPolicyKind::kLru ? 7 : 11);
  CpuOffloadTier t(Cfg(16, policy, threshold));
  std::vector<Keys> in_flight_stores;
  std::vector<Keys> loads;
  auto rnd = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  for (int step = 0; step < 4000; ++step) {
    const int op = rnd(6);
    if (op == 0) {
      Keys ks;
      for (int i = rnd(6); i >= 0; --i) ks.push_back(K(rnd(48)));
      t.Lookup(ks);
    } else if (op == 1) {
      Keys ks;
      for (int i = rnd(6); i >= 0; --i) ks.push_back(K(rnd(48)));
      t.Touch(ks);
    } else if (op == 2) {
      Keys ks;
      for (int i = rnd(6); i >= 0; --i) {
        OffloadKey k = K(rnd(48));
        if (std::find(ks.begin(), ks.end(), k) == ks.end()) ks.push_back(k);
      }
      std::map<BlockHash, int32_t> ref_before;
      t.policy().ForEach([&](const OffloadKey& k, const CpuBlock& b) { ref_before[k.hash] = b.ref_cnt; });
      const int64_t free_before = t.num_free_slots();
      auto plan = t.PrepareStore(ks);
      if (plan) {
        for (const auto& e : plan->evicted) {
          REQUIRE(ref_before.at(e.key.hash) == 0);
          REQUIRE(std::find(ks.begin(), ks.end(), e.key) == ks.end());
          REQUIRE(t.Find(e.key) == nullptr);
        }
        const int64_t need = static_cast<int64_t>(plan->keys_to_store.size()) - free_before;
        REQUIRE(static_cast<int64_t>(plan->evicted.size()) == std::max<int64_t>(0, need));
        if (!plan->keys_to_store.empty()) in_flight_stores.push_back(plan->keys_to_store);
      } else {
        std::map<BlockHash, int32_t> ref_after;
        t.policy().ForEach([&](const OffloadKey& k, const CpuBlock& b) { ref_after[k.hash] = b.ref_cnt; });
        REQUIRE(ref_after == ref_before);
      }
    } else if (op == 3 && !in_flight_stores.empty()) {
      const size_t i = static_cast<size_t>(rnd(static_cast<int>(in_flight_stores.size())));
      t.CompleteStore(in_flight_stores[i], /*success=*/rnd(8) != 0);
      in_flight_stores.erase(in_flight_stores.begin() + static_cast<std::ptrdiff_t>(i));
    } else if (op == 4) {
      // Load a run of ready blocks found by a lookup.
      Keys ks;
      for (int i = rnd(4); i >= 0; --i) ks.push_back(K(rnd(48)));
      const auto r = t.Lookup(ks);
      if (!r.deferred && r.hits > 0) {
        Keys hit(ks.begin(), ks.begin() + r.hits);
        std::sort(hit.begin(), hit.end(), [](auto& a, auto& b) { return a.hash < b.hash; });
        hit.erase(std::unique(hit.begin(), hit.end()), hit.end());
        t.PrepareLoad(hit);
        loads.push_back(hit);
      }
    } else if (op == 5 && !loads.empty()) {
      const size_t i = static_cast<size_t>(rnd(static_cast<int>(loads.size())));
      t.CompleteLoad(loads[i]);
      loads.erase(loads.begin() + static_cast<std::ptrdiff_t>(i));
    }
    t.CheckInvariants();
    REQUIRE(t.num_resident() + t.num_free_slots() == 16);
  }
}

}  // namespace
}  // namespace kvsim
