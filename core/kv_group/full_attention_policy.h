// Full attention (and MLA): every token reads every earlier token, so a request keeps one
// block per B tokens from the start, nothing is ever skipped, and any prefix of a hit is a
// hit. The hit finder is a template so tests can run it on plain patterns; the policy runs it
// over the pool. Contract: core/kv_group/kv_group_policy.h.
#pragma once

#include <cstdint>

#include "core/kv_group/kv_group_policy.h"

namespace kvsim {

// Scan left to right, stop at the first miss; EAGLE drops one block; then round down to the
// alignment (the scheduler block).
template <class Cached, class Put, class Id>
int64_t FindFullAttentionHit(int64_t max_length, int64_t B, int64_t alignment, bool use_eagle,
                             Cached&& cached, Put&& put, Id* buf) {
  const int64_t nmax = max_length / B;
  int64_t n = 0;
  while (n < nmax && cached(n, buf)) {
    put(n, buf);
    ++n;
  }
  if (use_eagle && n > 0) --n;
  while (B != alignment && n > 0 && (n * B) % alignment != 0) --n;
  return n;
}

class FullAttentionPolicy final : public KvGroupPolicy {
 public:
  using KvGroupPolicy::KvGroupPolicy;

  int64_t FindHit(int64_t max_length, bool drop_eagle, const HitProbe& cached, const HitSink& put,
                  BlockId* buf) const override;
  bool hit_is_prefix_closed() const override { return true; }
  bool hit_drops_eagle_block() const override { return true; }

  int64_t NumSkippedTokens(int64_t) const override { return 0; }
  // The default rules with nothing skipped, spelled out: this is the allocation hot path.
  int64_t NumNewBlocks(const SlotDemand& demand, int64_t num_hit_blocks,
                       const GroupBlockTable& table, int64_t cap_blocks) const override;
  void AllocateNewBlocks(const SlotDemand& demand, GroupBlockTable& table,
                         BlockPool& pool) const override;
  void RemoveSkippedBlocks(int64_t, GroupBlockTable&, BlockPool&,
                           std::vector<BlockId>&) const override {}
};

}  // namespace kvsim
