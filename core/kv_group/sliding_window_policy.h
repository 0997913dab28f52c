// Sliding window attention (window W): a token reads only the W − 1 tokens before it, so
// blocks wholly before the window are freed (null) as the request advances, a hit needs
// only the blocks of one window ending at its boundary, and a request holds at most about
// (W − 1 + in-flight tokens) / B blocks. [latest] it may cache sparsely. The hit finder and
// the retention mask are pure templates/functions so tests can check them by hand; the
// policy runs them over the pool. Contract: core/kv_group/kv_group_policy.h.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "core/int_math.h"
#include "core/kv_group/kv_group_policy.h"

namespace kvsim {

// The hit needs c = cdiv(W − 1, B) consecutive cached blocks ending at the boundary (c + 1
// with EAGLE, then one dropped). Scan right to left; a run may only start (at its right end)
// on an aligned boundary. Without a full run, the leading run from block 0, re-aligned. With
// EAGLE and B ≠ alignment, the boundary a run starts on is checked where it will be after
// the drop (block i, not i + 1), and the hit is re-aligned after the drop (hybrids whose
// groups have different block sizes, e.g. Gemma 4).
template <class Cached, class Put, class Id>
int64_t FindSlidingWindowHit(int64_t max_length, int64_t B, int64_t window, int64_t alignment,
                             bool use_eagle, Cached&& cached, Put&& put, Id* buf) {
  int64_t need = (window - 1 + B - 1) / B;
  if (use_eagle) ++need;
  const int64_t nmax = max_length / B;
  int64_t run = 0;
  int64_t n = -1;
  for (int64_t i = nmax - 1; i >= 0; --i) {
    if (cached(i, buf)) {
      const int64_t boundary = use_eagle ? i : i + 1;
      if (run == 0 && B != alignment && (boundary * B) % alignment != 0) continue;
      put(i, buf);
      ++run;
      if (run >= need) {
        n = i + run;
        break;
      }
    } else {
      run = 0;
    }
  }
  if (n < 0) {
    n = run;  // the leading run from block 0 (possibly 0)
    while (B != alignment && n > 0 && (n * B) % alignment != 0) --n;
  }
  if (use_eagle && n > 0) {
    --n;
    while (B != alignment && n > 0 && (n * B) % alignment != 0) --n;
  }
  return n;
}

// [latest] sparse retention over blocks [start, end): `need` = cdiv(W − 1, B) contiguous
// blocks end at a hit boundary (one more with EAGLE, whose run then ends one block past the
// boundary). `interval` < 0 is dense (then tails at every `alignment` boundary: dense
// whenever a window spans the alignment), 0 keeps only the boundaries, k > 0 adds tails per
// k-token segment (dense when the window spans a segment). False = dense; else fills `mask`.
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

class SlidingWindowPolicy final : public KvGroupPolicy {
 public:
  using KvGroupPolicy::KvGroupPolicy;

  int64_t FindHit(int64_t max_length, bool drop_eagle, const HitProbe& cached, const HitSink& put,
                  BlockId* buf) const override;
  bool hit_drops_eagle_block() const override { return true; }
  // The tokens before the window of the next token.
  int64_t NumSkippedTokens(int64_t num_computed_tokens) const override {
    return std::max<int64_t>(0, num_computed_tokens - group().sliding_window + 1);
  }
  // One window plus a step's tokens, and one block for the window's misalignment.
  int64_t MaxBlocksPerRequest(int64_t max_len) const override;
  bool retention_can_be_sparse() const override { return true; }
  bool RetentionMask(int64_t start, int64_t end, std::span<const int64_t> boundaries,
                     std::vector<uint8_t>& mask) const override;
};

}  // namespace kvsim
