// Mamba `all` mode: a state block per B tokens, like an attention group whose front is
// skipped up to the last computed token, plus the speculative state blocks (MTP) counted as
// B tokens each. Prefix caching off (mode `none`) allocates the same way. Shared Mamba rules:
// mamba_policy.h. Contract: core/kv_group/kv_group_policy.h.
#pragma once

#include <cstdint>

#include "core/kv_group/mamba_policy.h"

namespace kvsim {

class MambaAllPolicy final : public MambaPolicy {
 public:
  using MambaPolicy::MambaPolicy;

  int64_t NumNewBlocks(const SlotDemand& demand, int64_t num_hit_blocks,
                       const GroupBlockTable& table, int64_t cap_blocks) const override;
  void AllocateNewBlocks(const SlotDemand& demand, GroupBlockTable& table,
                         BlockPool& pool) const override;

 private:
  // The demand with the speculative state blocks as B tokens each.
  SlotDemand WithSpeculativeBlocks(SlotDemand d) const {
    d.num_tokens += block_size() * group().num_speculative_blocks;
    return d;
  }
};

}  // namespace kvsim
