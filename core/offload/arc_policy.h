// ArcCpuPolicy: vLLM's ARC policy of the CPU offloading tier, with its quirks (kv-offload.md §7):
//   - resident lists T1 (recent) and T2 (frequent), ghost lists B1 and B2 (keys only), and the
//     adaptive target p (target_t1_size, a real number starting at 0, at most the capacity);
//   - Insert puts the key at T1's MRU end and forgets it in B1/B2, without adapting p;
//   - Touch walks the keys in reverse: T1 and ready → T2's MRU end (promotion; so a request's own
//     later store promotes its earlier, now ready, blocks); T1 not ready → T1's MRU end; T2 → MRU
//     end; B1 → p = min(p + max(1, |B2|/|B1|), capacity), refreshed in B1; B2 → p = max(p −
//     max(1, |B1|/|B2|), 0), refreshed in B2;
//   - Evict picks victims one at a time against a *virtual* |T1| (decremented per T1 pick): if
//     virtual |T1| ≥ int(p) the next T1 candidate (LRU order) goes to B1, otherwise — or when T1
//     has none — the next T2 candidate goes to B2; if T2 has none either the whole eviction fails
//     (even with T1 candidates left, which happens when |T1| < p). Nothing changes until all n are
//     found; then ghost lists are trimmed to `capacity`, oldest first.
#pragma once

#include "core/offload/cpu_eviction_policy.h"

namespace kvsim {

class ArcCpuPolicy final : public CpuEvictionPolicy {
 public:
  explicit ArcCpuPolicy(int64_t capacity) : capacity_(capacity) {}
  std::string_view name() const override { return "arc"; }
  CpuBlock* Find(const OffloadKey& key) override;
  const CpuBlock* Find(const OffloadKey& key) const override;
  void Insert(const OffloadKey& key, CpuBlock block) override;
  void Remove(const OffloadKey& key) override;
  void Touch(std::span<const OffloadKey> keys) override;
  bool Evict(int64_t n, const OffloadKeySet& protected_keys,
             std::vector<EvictedCpuBlock>& out) override;
  int64_t size() const override { return t1_.size() + t2_.size(); }
  void ForEach(const std::function<void(const OffloadKey&, const CpuBlock&)>& f) const override;

  // For tests and views.
  double target_t1_size() const { return p_; }
  const OrderedKeyMap<CpuBlock>& t1() const { return t1_; }
  const OrderedKeyMap<CpuBlock>& t2() const { return t2_; }
  const OrderedKeyMap<char>& b1() const { return b1_; }
  const OrderedKeyMap<char>& b2() const { return b2_; }

 private:
  int64_t capacity_;
  double p_ = 0.0;  // vLLM keeps it a float: the B1/B2 ratios are true divisions
  OrderedKeyMap<CpuBlock> t1_, t2_;  // fronts = LRU ends
  OrderedKeyMap<char> b1_, b2_;      // ghosts (value unused)
};

}  // namespace kvsim
