#include "core/kv_group/mamba_align_policy.h"

#include <algorithm>

#include "core/check.h"
#include "core/int_math.h"

namespace kvsim {

int64_t MambaAlignPolicy::NumNewBlocks(const SlotDemand& demand, int64_t num_hit_blocks,
                                       const GroupBlockTable& table, int64_t cap_blocks) const {
  (void)cap_blocks;  // a request holds a bounded number of state blocks anyway
  const int64_t nspec = group().num_speculative_blocks;
  const int64_t required = CeilDiv(demand.num_tokens_main, block_size()) + nspec;
  const int64_t missing = required - num_hit_blocks - static_cast<int64_t>(table.blocks.size());
  if (missing <= 0) return 0;
  return table.state_allocated ? 1 : 1 + nspec;
}

void MambaAlignPolicy::AllocateNewBlocks(const SlotDemand& demand, GroupBlockTable& table,
                                         BlockPool& pool) const {
  std::vector<BlockId>& blocks = table.blocks;
  const int64_t prev = static_cast<int64_t>(blocks.size());
  const int64_t nspec = group().num_speculative_blocks;
  const int64_t required = CeilDiv(demand.num_tokens_main, block_size()) + nspec;
  if (required <= prev) return;
  const bool allocated = table.state_allocated;
  if (allocated) {
    table.last_state = prev - 1 - nspec;
  } else if (prev > 0) {
    table.last_state = prev - 1;  // the hit block holds the state we start from
  }
  const int64_t skipped_blocks = required - nspec - 1;
  if (prev < skipped_blocks) blocks.resize(static_cast<size_t>(skipped_blocks), kNullBlock);
  if (allocated) {
    // Reuse the previous speculative blocks for this step.
    for (int64_t i = prev - nspec; i < prev; ++i) {
      if (i < skipped_blocks) {
        blocks.push_back(blocks[static_cast<size_t>(i)]);
        blocks[static_cast<size_t>(i)] = kNullBlock;
      } else {
        break;
      }
    }
  }
  const int64_t n = required - static_cast<int64_t>(blocks.size());
  KVSIM_CHECK(n <= (allocated ? 1 : 1 + nspec));
  if (n > 0) {
    const size_t at = blocks.size();
    blocks.resize(at + static_cast<size_t>(n));
    KVSIM_CHECK(pool.GetNewBlocks(n, blocks.data() + at));
  }
  table.state_allocated = true;
}

void MambaAlignPolicy::RemoveSkippedBlocks(int64_t num_computed_tokens, GroupBlockTable& table,
                                           BlockPool& pool, std::vector<BlockId>& scratch) const {
  KvGroupPolicy::RemoveSkippedBlocks(num_computed_tokens, table, pool, scratch);
  // The state block from two steps back is no longer needed once the running state has
  // moved on (vLLM's last_state_block_idx).
  std::vector<BlockId>& blocks = table.blocks;
  const int64_t last = table.last_state;
  if (last >= 0 && last < CeilDiv(num_computed_tokens, block_size()) - 1 &&
      last < static_cast<int64_t>(blocks.size())) {
    BlockId& b = blocks[static_cast<size_t>(last)];
    if (b != kNullBlock) {
      pool.FreeBlocks({&b, 1});
      b = kNullBlock;
    }
  }
}

int64_t MambaAlignPolicy::AlignPrefillChunk(const PrefillChunk& c) const {
  const KvGroupContext& ctx = context();
  const int64_t B = block_size();
  if (ctx.semantics == VllmSemantics::kLatest) {
    return LatestMambaAlignedSplit(
        c.start, c.num_new_tokens, c.num_tokens, c.num_prompt_tokens, B, ctx.hash_block_size,
        ctx.prefix_match_unit && ctx.hash_block_size < B, ctx.use_eagle, c.junction, c.chunk_limit);
  }
  return ClassicMambaAlignedSplit(c.start, c.num_new_tokens, c.num_tokens, c.num_prompt_tokens, B,
                                  ctx.use_eagle, c.chunk_limit);
}

int64_t ClassicMambaAlignedSplit(int64_t start, int64_t num_new_tokens, int64_t num_tokens,
                                 int64_t num_prompt_tokens, int64_t B, bool use_eagle,
                                 int64_t chunk_limit) {
  if (num_tokens > num_prompt_tokens) return num_new_tokens;  // decoding: no split
  int64_t n = num_new_tokens;
  int64_t last = num_tokens - num_tokens % B;
  if (use_eagle) last = std::max<int64_t>(last - B, 0);
  const int64_t after = start + n;
  if (after < last) {
    // Round down to whole blocks, unless a block is more than a step can ever give (then
    // the request would starve: keep the unaligned chunk).
    const int64_t rounded = n / B * B;
    if (rounded > 0 || B <= chunk_limit) n = rounded;
  } else if (start < last && last < after) {
    n = last - start;  // cache the last boundary
  }
  return n;
}

int64_t LatestMambaAlignedSplit(int64_t start, int64_t num_new_tokens, int64_t num_tokens,
                                int64_t num_prompt_tokens, int64_t B, int64_t hash_block,
                                bool partial_hits, bool use_eagle, int64_t junction,
                                int64_t chunk_limit) {
  // Only while prefilling (a resumed request replays its outputs as prefill too).
  const int64_t prefill_end = std::max(num_prompt_tokens, num_tokens - 1);
  if (start >= prefill_end) return num_new_tokens;
  int64_t last_cacheable = num_tokens - num_tokens % B;
  if (use_eagle) last_cacheable = std::max<int64_t>(last_cacheable - B, 0);
  int64_t end = start + num_new_tokens;
  if (end < prefill_end) {
    // A state is written at each chunk end, so chunks that do not finish the prefill end on a
    // block; when a block cannot fit in any chunk, move on sub-block and re-align at the next
    // boundary reached (vLLM #51113).
    const int64_t aligned_end = end / B * B;
    if (aligned_end > start || B <= chunk_limit) end = aligned_end;
  }
  const int64_t next_block = (start / B + 1) * B;
  const int64_t tail = partial_hits ? num_prompt_tokens / hash_block * hash_block : 0;
  const int64_t stops[4] = {
      start % B != 0 ? next_block : 0,
      last_cacheable,
      last_cacheable < tail && tail < num_prompt_tokens ? tail : 0,
      start < junction && junction < end ? start + (junction - start) / B * B : 0,
  };
  int64_t stop = end;
  for (int64_t s : stops)
    if (start < s && s < stop) stop = s;
  return std::max<int64_t>(stop - start, 0);
}

}  // namespace kvsim
