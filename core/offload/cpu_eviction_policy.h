// CpuEvictionPolicy: the extension point that decides which CPU block the offloading tier gives
// up when a store needs room (vLLM's CachePolicy, kv-offload.md §7). The tier (CpuOffloadTier)
// owns slots, ref counts' meaning and the all-or-nothing store; a policy owns only the resident
// blocks' order and picks victims.
//
// Contract
//   - Find/Insert/Remove see *resident* blocks only (ready or with a store in flight).
//   - Touch(keys) walks `keys` in reverse (so the first key ends up most recent) and refreshes
//     the keys it knows; unknown keys are ignored (policies with ghost lists may learn from them).
//   - Evict(n, protected) picks exactly n blocks with ref_cnt == 0 whose key is not in
//     `protected`, removes them and appends them to `out` — or returns false and changes
//     nothing at all. It never picks a block with a store in flight (ref_cnt −1) or one being
//     loaded (ref_cnt > 0).
// Policies: LRU and ARC (lru_policy.h, arc_policy.h); MakeCpuEvictionPolicy is the registry.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "core/offload/offload_key.h"
#include "core/status.h"

namespace kvsim {

// One resident CPU block: its slot in the CPU buffer and vLLM's BlockStatus.ref_cnt:
// −1 = store in flight (not ready, invisible to lookups), 0 = ready, > 0 = being loaded (pinned).
struct CpuBlock {
  int32_t slot = -1;
  int32_t ref_cnt = -1;
  bool ready() const { return ref_cnt >= 0; }
};

struct EvictedCpuBlock {
  OffloadKey key;
  int32_t slot = -1;
};

using OffloadKeySet = std::unordered_set<OffloadKey, OffloadKeyHasher>;

class CpuEvictionPolicy {
 public:
  virtual ~CpuEvictionPolicy() = default;
  virtual std::string_view name() const = 0;

  virtual CpuBlock* Find(const OffloadKey& key) = 0;
  virtual const CpuBlock* Find(const OffloadKey& key) const = 0;
  // A new resident block (the key must not be resident).
  virtual void Insert(const OffloadKey& key, CpuBlock block) = 0;
  // Drops a resident block without remembering it (a failed store).
  virtual void Remove(const OffloadKey& key) = 0;
  virtual void Touch(std::span<const OffloadKey> keys) = 0;
  // The block became evictable (its store or its last load completed) / stopped being so (a
  // load pinned it). Policies that order only evictable blocks use them; others ignore them.
  virtual void MarkEvictable(const OffloadKey& key) { (void)key; }
  virtual void MarkNonEvictable(const OffloadKey& key) { (void)key; }
  virtual bool Evict(int64_t n, const OffloadKeySet& protected_keys,
                     std::vector<EvictedCpuBlock>& out) = 0;

  virtual int64_t size() const = 0;
  // Every resident block, in the policy's own order (for invariants and views).
  virtual void ForEach(const std::function<void(const OffloadKey&, const CpuBlock&)>& f) const = 0;
};

enum class CpuEvictionPolicyKind : uint8_t { kLru, kArc };
std::string_view CpuEvictionPolicyKindName(CpuEvictionPolicyKind k);
// "lru" | "arc" (vLLM's eviction_policy values).
Result<CpuEvictionPolicyKind> ParseCpuEvictionPolicyKind(std::string_view name);
// `capacity` is the tier's number of blocks (ARC bounds p and its ghost lists by it);
// `lru_evictable_list` picks latest's LRU (CpuTierConfig).
std::unique_ptr<CpuEvictionPolicy> MakeCpuEvictionPolicy(CpuEvictionPolicyKind kind,
                                                         int64_t capacity,
                                                         bool lru_evictable_list = false);

}  // namespace kvsim
