// Mamba `align` mode (reference §5.4, §6): a request holds its running state block (plus the
// speculative ones, MTP) and, while a step runs, the state it started from; a prefill chunk
// that does not finish the prompt is trimmed to end on a block boundary, so each block that
// becomes full holds a state worth caching. Shared Mamba rules: mamba_policy.h. Contract:
// core/kv_group/kv_group_policy.h.
//
// The chunk split of each snapshot is also a pure function (the only copy of the rule): the
// policy applies it, and scheduler tests drive their fake allocator with it.
#pragma once

#include <cstdint>
#include <vector>

#include "core/kv_group/mamba_policy.h"

namespace kvsim {

// The classic snapshot's _mamba_block_aligned_split (reference §6): the tokens a prefill
// chunk of `num_new_tokens` starting at `start` may schedule, for a request of `num_tokens`
// known tokens (`num_prompt_tokens` of prompt) and Mamba block `B`. A chunk that stays short
// of the last cacheable boundary is rounded down to whole blocks (kept unaligned only when a
// block exceeds `chunk_limit`, the most a step can give one request); one that crosses it
// stops there; decoding is never split.
int64_t ClassicMambaAlignedSplit(int64_t start, int64_t num_new_tokens, int64_t num_tokens,
                                 int64_t num_prompt_tokens, int64_t B, bool use_eagle,
                                 int64_t chunk_limit);

// The latest snapshot's _mamba_block_aligned_split (step-log §9): as classic, and the chunk
// also stops at the first of: the next block boundary when it starts mid-block, the last
// cacheable boundary, the prompt's last hash boundary when `partial_hits` (a finer
// prefix_match_unit `hash_block` is set), and the shared-prefix `junction` (0 = none) floored
// to a block. It also applies to a resumed request replaying its output tokens.
int64_t LatestMambaAlignedSplit(int64_t start, int64_t num_new_tokens, int64_t num_tokens,
                                int64_t num_prompt_tokens, int64_t B, int64_t hash_block,
                                bool partial_hits, bool use_eagle, int64_t junction,
                                int64_t chunk_limit);

class MambaAlignPolicy final : public MambaPolicy {
 public:
  using MambaPolicy::MambaPolicy;

  // The running state (1 block, plus the speculative ones the first time) whenever the
  // tokens reach a block the table does not have yet.
  int64_t NumNewBlocks(const SlotDemand& demand, int64_t num_hit_blocks,
                       const GroupBlockTable& table, int64_t cap_blocks) const override;
  void AllocateNewBlocks(const SlotDemand& demand, GroupBlockTable& table,
                         BlockPool& pool) const override;
  // The default rule, then the previous running state once the state has moved on.
  void RemoveSkippedBlocks(int64_t num_computed_tokens, GroupBlockTable& table, BlockPool& pool,
                           std::vector<BlockId>& scratch) const override;

  bool aligns_prefill_chunks() const override { return true; }
  int64_t AlignPrefillChunk(const PrefillChunk& chunk) const override;
};

}  // namespace kvsim
