#include "core/kv_group/kv_group_policy.h"

#include <algorithm>

#include "core/check.h"
#include "core/int_math.h"
#include "core/kv_group/chunked_local_policy.h"
#include "core/kv_group/full_attention_policy.h"
#include "core/kv_group/mamba_align_policy.h"
#include "core/kv_group/mamba_all_policy.h"
#include "core/kv_group/sliding_window_policy.h"

namespace kvsim {

int64_t KvGroupPolicy::NumNewBlocks(const SlotDemand& demand, int64_t num_hit_blocks,
                                    const GroupBlockTable& table, int64_t cap_blocks) const {
  const int64_t B = block_size();
  int64_t required = CeilDiv(demand.num_tokens, B);
  if (cap_blocks > 0) required = std::min(required, cap_blocks);
  const int64_t skipped = NumSkippedTokens(demand.num_computed) / B;
  const int64_t held = num_hit_blocks + static_cast<int64_t>(table.blocks.size());
  return std::max<int64_t>(required - std::max(skipped, held), 0);
}

void KvGroupPolicy::AllocateNewBlocks(const SlotDemand& demand, GroupBlockTable& table,
                                      BlockPool& pool) const {
  const int64_t B = block_size();
  std::vector<BlockId>& blocks = table.blocks;
  const int64_t prev = static_cast<int64_t>(blocks.size());
  const int64_t required = CeilDiv(demand.num_tokens, B);
  // Positions already out of reach are never allocated: they start as null blocks.
  const int64_t skipped_blocks = NumSkippedTokens(demand.num_computed) / B;
  if (prev < skipped_blocks && required > prev)
    blocks.resize(static_cast<size_t>(std::min(skipped_blocks, required)), kNullBlock);
  const int64_t n = required - static_cast<int64_t>(blocks.size());
  if (n > 0) {
    const size_t at = blocks.size();
    blocks.resize(at + static_cast<size_t>(n));
    KVSIM_CHECK(pool.GetNewBlocks(n, blocks.data() + at));
  }
}

void KvGroupPolicy::RemoveSkippedBlocks(int64_t num_computed_tokens, GroupBlockTable& table,
                                        BlockPool& pool, std::vector<BlockId>& scratch) const {
  const int64_t skipped = NumSkippedTokens(num_computed_tokens);
  if (skipped <= 0) return;
  std::vector<BlockId>& blocks = table.blocks;
  const int64_t nb = std::min<int64_t>(skipped / block_size(), static_cast<int64_t>(blocks.size()));
  // Back to front, stopping at the first null: everything before it was freed earlier.
  scratch.clear();
  for (int64_t i = nb - 1; i >= 0; --i) {
    BlockId& b = blocks[static_cast<size_t>(i)];
    if (b == kNullBlock) break;
    scratch.push_back(b);
    b = kNullBlock;
  }
  pool.FreeBlocks(scratch);
}

std::unique_ptr<KvGroupPolicy> MakeKvGroupPolicy(const KvGroupConfig& group,
                                                 const KvGroupContext& context) {
  switch (group.kind) {
    case KvGroupKind::kFullAttention:
      return std::make_unique<FullAttentionPolicy>(group, context);
    case KvGroupKind::kSlidingWindow:
      return std::make_unique<SlidingWindowPolicy>(group, context);
    case KvGroupKind::kChunkedLocal:
      return std::make_unique<ChunkedLocalPolicy>(group, context);
    case KvGroupKind::kMamba:
      if (group.mamba_mode == MambaCacheMode::kAlign)
        return std::make_unique<MambaAlignPolicy>(group, context);
      return std::make_unique<MambaAllPolicy>(group, context);
  }
  KVSIM_CHECK_MSG(false, "unknown KV cache group kind");
  return nullptr;
}

}  // namespace kvsim
