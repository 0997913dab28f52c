// Sparse retention of sliding-window and Mamba checkpoints [latest] (vLLM 2026-08-18,
// CacheConfig.prefix_cache_retention_interval; docs/vllm-latest-hybrid.md §2). When a
// request's full blocks are cached, a sparse-retention group hashes only the blocks that a
// later prefix hit could end on:
//   - segment tails: with interval k > 0, the blocks a hit needs at the end of every k-token
//     segment (a sliding window needs its last `need` blocks, Mamba its one state block);
//   - reachable boundaries: the request's replay boundary (num_prompt_tokens − 1) and its
//     shared-prefix junction, each floored to the scheduler block (`alignment`), with the
//     same blocks a hit there needs.
// The masks are over blocks [start, end) of the group (its own block size B). They return
// false when every block is to be cached (dense), and fill `mask` otherwise. Pure functions
// of their arguments, so tests can check them by hand.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "core/int_math.h"

namespace kvsim {

// Sliding window W: `need` = cdiv(W − 1, B) contiguous blocks end at a hit boundary (one
// more with EAGLE, whose run then ends one block past the boundary). `interval` < 0 is
// dense (then tails at every `alignment` boundary: dense whenever a window spans the
// alignment), 0 keeps only the boundaries, k > 0 adds tails per k-token segment (dense when
// the window spans a segment).
inline bool SlidingWindowRetentionMask(int64_t start, int64_t end, int64_t B, int64_t window,
                                       int64_t alignment, bool use_eagle, int64_t interval,
                                       std::span<const int64_t> boundaries,
                                       std::vector<uint8_t>& mask) {
  const int64_t need = CeilDiv(window - 1, B) + (use_eagle ? 1 : 0);
  const int64_t shift = use_eagle ? 1 : 0;
  mask.assign(static_cast<size_t>(std::max<int64_t>(end - start, 0)), 0);
  const int64_t segment = interval < 0 ? alignment : interval;
  if (segment > 0) {
    const int64_t per_segment = segment / B;
    if (need >= per_segment) return false;
    for (int64_t i = std::max(start, shift); i < end; ++i)
      if ((i - shift) % per_segment >= per_segment - need) mask[static_cast<size_t>(i - start)] = 1;
  }
  if (interval >= 0) {
    for (int64_t b : boundaries) {
      const int64_t aligned_end = b / alignment * alignment / B + shift;
      for (int64_t j = std::max(start, aligned_end - need); j < std::min(end, aligned_end); ++j)
        mask[static_cast<size_t>(j - start)] = 1;
    }
  }
  return true;
}

// Mamba: a hit needs exactly the state block that ends on the boundary (block i holds the
// state after (i+1)·B tokens). `interval` < 0 is dense; 0 keeps only the boundaries; k > 0
// adds the last block of every k-token segment (dense when a segment is at most one block).
inline bool MambaRetentionMask(int64_t start, int64_t end, int64_t B, int64_t alignment,
                               int64_t interval, std::span<const int64_t> boundaries,
                               std::vector<uint8_t>& mask) {
  if (interval < 0) return false;
  mask.assign(static_cast<size_t>(std::max<int64_t>(end - start, 0)), 0);
  if (interval > 0) {
    const int64_t per_segment = interval / B;
    if (per_segment <= 1) return false;
    const int64_t first = (start + per_segment) / per_segment * per_segment - 1;
    for (int64_t i = first; i < end; i += per_segment) mask[static_cast<size_t>(i - start)] = 1;
  }
  for (int64_t b : boundaries) {
    const int64_t block = b / alignment * alignment / B - 1;
    if (block >= start && block < end) mask[static_cast<size_t>(block - start)] = 1;
  }
  return true;
}

}  // namespace kvsim
