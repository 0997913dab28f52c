// KvGroupConfig: one KV cache group as the KV cache manager sees it — the page planner's
// KvCacheGroup reduced to what allocation and prefix hits depend on (its kind, block size,
// window or chunk, Mamba mode). A plain value type owned by KvCacheManagerConfig; the rules
// of each kind live in the group policies next to this file (kv_group_policy.h). MLA groups
// are full attention here.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/page_planner.h"  // MambaCacheMode

namespace kvsim {

enum class KvGroupKind : uint8_t { kFullAttention, kSlidingWindow, kChunkedLocal, kMamba };

constexpr std::string_view KvGroupKindName(KvGroupKind k) {
  switch (k) {
    case KvGroupKind::kFullAttention:
      return "full_attention";
    case KvGroupKind::kSlidingWindow:
      return "sliding_window";
    case KvGroupKind::kChunkedLocal:
      return "chunked_local";
    case KvGroupKind::kMamba:
      return "mamba";
  }
  return "?";
}

struct KvGroupConfig {
  KvGroupKind kind = KvGroupKind::kFullAttention;
  int64_t block_size = 16;
  int64_t sliding_window = 0;                          // kSlidingWindow: W
  int64_t attention_chunk_size = 0;                    // kChunkedLocal: C
  MambaCacheMode mamba_mode = MambaCacheMode::kAlign;  // kMamba only
  int64_t num_speculative_blocks = 0;                  // kMamba: extra state blocks (MTP)
  // With EAGLE/MTP: the group holds the drafter's layers, so its hits drop the EAGLE block
  // (vLLM's eagle groups). True when it is not known which groups do: vLLM then marks every
  // group. Not part of the spec: identical specs merge, and the merged unit is an EAGLE unit
  // when any of its groups is. A policy's group() has it resolved: true iff EAGLE is on and
  // the group's unit drops the EAGLE block.
  bool eagle_group = true;

  bool SameSpec(const KvGroupConfig& o) const {
    return kind == o.kind && block_size == o.block_size && sliding_window == o.sliding_window &&
           attention_chunk_size == o.attention_chunk_size &&
           (kind != KvGroupKind::kMamba ||
            (mamba_mode == o.mamba_mode && num_speculative_blocks == o.num_speculative_blocks));
  }
};

}  // namespace kvsim
