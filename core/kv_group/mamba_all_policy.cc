#include "core/kv_group/mamba_all_policy.h"

namespace kvsim {

int64_t MambaAllPolicy::NumNewBlocks(const SlotDemand& demand, int64_t num_hit_blocks,
                                     const GroupBlockTable& table, int64_t cap_blocks) const {
  return KvGroupPolicy::NumNewBlocks(WithSpeculativeBlocks(demand), num_hit_blocks, table,
                                     cap_blocks);
}

void MambaAllPolicy::AllocateNewBlocks(const SlotDemand& demand, GroupBlockTable& table,
                                       BlockPool& pool) const {
  KvGroupPolicy::AllocateNewBlocks(WithSpeculativeBlocks(demand), table, pool);
}

}  // namespace kvsim
