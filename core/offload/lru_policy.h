// LruCpuPolicy: vLLM's LRU policy of the CPU offloading tier (kv-offload.md §7, LRU): one
// ordered map; inserts go to the MRU end; Touch walks its keys in reverse moving each present
// key to the MRU end (so, within one request, the first block ends up most recent and the last
// block least recent); eviction takes the first n candidates from the LRU end. Consequence: when
// a request's chain ages out its tail blocks go before its head blocks.
//
// [latest] (vLLM PR #46216, `evictable_list`): the recency order holds only evictable blocks
// (ready and not being loaded). A block enters it at the MRU end when it becomes evictable
// (its store completes, or its last load does) and leaves it while a load pins it; Touch moves
// only blocks in it, so touching a block in flight or pinned changes nothing.
#pragma once

#include "core/offload/cpu_eviction_policy.h"

namespace kvsim {

class LruCpuPolicy final : public CpuEvictionPolicy {
 public:
  explicit LruCpuPolicy(bool evictable_list = false) : evictable_list_(evictable_list) {}
  std::string_view name() const override { return "lru"; }
  CpuBlock* Find(const OffloadKey& key) override { return blocks_.find(key); }
  const CpuBlock* Find(const OffloadKey& key) const override { return blocks_.find(key); }
  void Insert(const OffloadKey& key, CpuBlock block) override;
  void Remove(const OffloadKey& key) override;
  void Touch(std::span<const OffloadKey> keys) override;
  void MarkEvictable(const OffloadKey& key) override;
  void MarkNonEvictable(const OffloadKey& key) override;
  bool Evict(int64_t n, const OffloadKeySet& protected_keys,
             std::vector<EvictedCpuBlock>& out) override;
  int64_t size() const override { return blocks_.size(); }
  void ForEach(const std::function<void(const OffloadKey&, const CpuBlock&)>& f) const override;

 private:
  bool evictable_list_;
  OrderedKeyMap<CpuBlock> blocks_;  // front = least recently used (classic: every block)
  OrderedKeyMap<char> evictable_;   // [latest] the evictable blocks, front = LRU
};

}  // namespace kvsim
