#include "core/kv_group/full_attention_policy.h"

#include <algorithm>

#include "core/check.h"
#include "core/int_math.h"

namespace kvsim {

int64_t FullAttentionPolicy::FindHit(int64_t max_length, bool drop_eagle, const HitProbe& cached,
                                     const HitSink& put, BlockId* buf) const {
  return FindFullAttentionHit(max_length, block_size(), context().scheduler_block_size, drop_eagle,
                              cached, put, buf);
}

int64_t FullAttentionPolicy::NumNewBlocks(const SlotDemand& demand, int64_t num_hit_blocks,
                                          const GroupBlockTable& table, int64_t cap_blocks) const {
  int64_t required = CeilDiv(demand.num_tokens, block_size());
  if (cap_blocks > 0) required = std::min(required, cap_blocks);
  const int64_t held = num_hit_blocks + static_cast<int64_t>(table.blocks.size());
  return std::max<int64_t>(required - held, 0);
}

void FullAttentionPolicy::AllocateNewBlocks(const SlotDemand& demand, GroupBlockTable& table,
                                            BlockPool& pool) const {
  std::vector<BlockId>& blocks = table.blocks;
  const int64_t n = CeilDiv(demand.num_tokens, block_size()) - static_cast<int64_t>(blocks.size());
  if (n > 0) {
    const size_t at = blocks.size();
    blocks.resize(at + static_cast<size_t>(n));
    KVSIM_CHECK(pool.GetNewBlocks(n, blocks.data() + at));
  }
}

}  // namespace kvsim
