// CpuOffloadTier: the CPU side of vLLM's KV offloading — CPUOffloadingManager (kv-offload.md
// §3 and §7) with a pluggable CpuEvictionPolicy. It lives in the scheduler and only does book-
// keeping: which offloaded blocks are resident, in which CPU slot, and whether each is ready.
//
// State and invariants (CheckInvariants):
//   - slots 0..num_blocks−1; a slot is either held by exactly one resident block or free. Fresh
//     slots are handed out in order 0, 1, 2, …; after that, freed slots are reused last freed
//     first (a stack). allocated_fresh + … : resident + |free list| == allocated_fresh.
//   - a resident block's ref_cnt is −1 (store in flight: invisible to lookups, never evicted),
//     0 (ready, evictable) or > 0 (being loaded by that many load jobs: pinned).
//   - num_evictable == #{resident blocks with ref_cnt == 0}.
//   - with store_threshold ≥ 2, a lookup-count tracker (an LRU table of at most
//     max_tracker_size keys) counts how often each key was looked up; a key is stored only once
//     its count reaches store_threshold.
//
// Calls (who calls them when is the connector's business, offload_connector.h):
//   Lookup       consecutive ready hits from the first key, or "deferred" when a scanned key is
//                resident but not ready. The scan goes on past a not-ready key until the first
//                missing one (vLLM's _maximal_prefix_lookup), counting every key it scans (up
//                to and including that one) in the store-threshold tracker. Changes no recency.
//   Touch        the policy's touch (keys walked in reverse).
//   PrepareStore filters (threshold, already resident), evicts exactly `need` blocks all-or-
//                nothing, inserts the rest as not ready; nullopt = failed, nothing changed.
//   CompleteStore ref −1 → 0 (ready); on failure the blocks are dropped and their slots freed.
//   PrepareLoad / CompleteLoad  ref += 1 / −= 1 (pin while a load copies from the block).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/offload/cpu_eviction_policy.h"
#include "core/offload/offload_key.h"

namespace kvsim {

struct CpuTierConfig {
  int64_t num_blocks = 0;  // CPU slots, in offloaded blocks
  CpuEvictionPolicyKind policy = CpuEvictionPolicyKind::kLru;
  int64_t store_threshold = 0;     // < 2: store everything
  int64_t max_tracker_size = 64000;
  // [latest] LRU keeps only evictable blocks (ready, not being loaded) in its recency order,
  // entered when they become evictable (vLLM PR #46216): see LruCpuPolicy.
  bool lru_evictable_list = false;
};

struct CpuLookupResult {
  bool deferred = false;  // a scanned key is resident but its store is still in flight
  int64_t hits = 0;       // consecutive ready keys from the first (0 when deferred)
};

struct CpuStorePlan {
  std::vector<OffloadKey> keys_to_store;  // the keys that got a slot, in the order given
  std::vector<int32_t> slots;             // parallel to keys_to_store
  std::vector<EvictedCpuBlock> evicted;   // blocks given up to make room, in eviction order
};

class CpuOffloadTier {
 public:
  explicit CpuOffloadTier(const CpuTierConfig& config);
  CpuOffloadTier(const CpuOffloadTier&) = delete;
  CpuOffloadTier& operator=(const CpuOffloadTier&) = delete;

  const CpuTierConfig& config() const { return config_; }

  CpuLookupResult Lookup(std::span<const OffloadKey> keys);
  void Touch(std::span<const OffloadKey> keys) { policy_->Touch(keys); }
  std::optional<CpuStorePlan> PrepareStore(std::span<const OffloadKey> keys);
  void CompleteStore(std::span<const OffloadKey> keys, bool success = true);
  // Pins the given ready blocks; returns their slots (the load's source).
  std::vector<int32_t> PrepareLoad(std::span<const OffloadKey> keys);
  void CompleteLoad(std::span<const OffloadKey> keys);

  // ---- Queries ----
  int64_t num_blocks() const { return config_.num_blocks; }
  int64_t num_resident() const { return policy_->size(); }  // ready or in flight
  int64_t num_ready() const { return policy_->size() - num_in_flight_; }
  int64_t num_in_flight() const { return num_in_flight_; }
  int64_t num_evictable() const { return num_evictable_; }
  int64_t num_free_slots() const {
    return static_cast<int64_t>(free_slots_.size()) + config_.num_blocks - num_fresh_used_;
  }
  const CpuBlock* Find(const OffloadKey& key) const { return policy_->Find(key); }
  // The store-threshold tracker's count for `key` (0 when not tracked or threshold < 2).
  int64_t lookup_count(const OffloadKey& key) const;
  const CpuEvictionPolicy& policy() const { return *policy_; }

  void CheckInvariants() const;

 private:
  bool tracking() const { return config_.store_threshold >= 2; }
  void CountLookup(const OffloadKey& key);

  CpuTierConfig config_;
  std::unique_ptr<CpuEvictionPolicy> policy_;
  int64_t num_fresh_used_ = 0;        // fresh slots handed out so far (0..num_fresh_used_−1)
  std::vector<int32_t> free_slots_;   // reused from the back (last freed first)
  int64_t num_evictable_ = 0;         // resident with ref_cnt == 0
  int64_t num_in_flight_ = 0;         // resident with ref_cnt == −1
  OrderedKeyMap<int64_t> lookup_counts_;  // store_threshold tracker, front = least recent
};

}  // namespace kvsim
