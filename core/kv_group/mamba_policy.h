// What both Mamba cache modes share: a Mamba layer's state after token t summarizes every
// token up to t, so a request needs only its latest state (all earlier blocks can be null),
// a hit is one cached state block ending on an aligned boundary, and a hit on a state cached
// during the current step waits a step (§5.4). [latest] it may cache sparsely (one state per
// segment and per reachable boundary). How states are allocated differs by mode:
// mamba_align_policy.h (`align`) and mamba_all_policy.h (`all`). The hit finder and the
// retention mask are pure so tests can check them by hand. Contract:
// core/kv_group/kv_group_policy.h.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "core/kv_group/kv_group_policy.h"

namespace kvsim {

// The largest i ≤ max_length/B − 1 whose block is cached and whose end (i+1)·B is aligned;
// the hit is [null × i, block_i].
template <class Cached, class Put, class Id>
int64_t FindMambaHit(int64_t max_length, int64_t B, int64_t alignment, Cached&& cached, Put&& put,
                     Id* buf) {
  const int64_t nmax = max_length / B;
  for (int64_t i = nmax - 1; i >= 0; --i) {
    if (B != alignment && ((i + 1) * B) % alignment != 0) continue;
    if (cached(i, buf)) {
      put(i, buf);
      return i + 1;
    }
  }
  return 0;
}

// [latest] sparse retention over blocks [start, end): a hit needs exactly the state block
// that ends on the boundary (block i holds the state after (i+1)·B tokens). `interval` < 0 is
// dense; 0 keeps only the boundaries; k > 0 adds the last block of every k-token segment
// (dense when a segment is at most one block). False = dense; else fills `mask`.
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

class MambaPolicy : public KvGroupPolicy {
 public:
  using KvGroupPolicy::KvGroupPolicy;

  int64_t FindHit(int64_t max_length, bool drop_eagle, const HitProbe& cached, const HitSink& put,
                  BlockId* buf) const final;
  bool defers_hits_cached_this_step() const final { return true; }
  // Everything but the last computed token's state.
  int64_t NumSkippedTokens(int64_t num_computed_tokens) const final {
    return num_computed_tokens - 1;
  }
  bool retention_can_be_sparse() const final { return true; }
  bool RetentionMask(int64_t start, int64_t end, std::span<const int64_t> boundaries,
                     std::vector<uint8_t>& mask) const final;
};

}  // namespace kvsim
