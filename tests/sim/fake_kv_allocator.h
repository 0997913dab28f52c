// FakeKvAllocator: a block-counting IKvAllocator for scheduler tests. One group of
// `block_size`-token blocks, `num_free` of them; prefix hits are whatever the test sets per
// request. It follows the block math of reference §5.6 (blocks = cdiv(tokens + lookahead, B),
// a hit's blocks count as held, the full-prompt check, the watermark) and records every call
// so tests can assert what the scheduler asked for.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/int_math.h"
#include "core/kv_cache_manager.h"
#include "core/kv_group/mamba_align_policy.h"
#include "sim/scheduler/i_kv_allocator.h"
#include "sim/scheduler/scheduler.h"

namespace kvsim::testing {

class FakeKvAllocator : public IKvAllocator {
 public:
  FakeKvAllocator(int64_t block_size, int64_t num_free) : block_size_(block_size), free_(num_free) {}

  PrefixHitInfo FindPrefixHit(const SimRequest& r) override {
    auto it = hits_.find(r.id);
    const int64_t h = it == hits_.end() ? 0 : it->second;
    const int64_t t = std::min(h, (r.num_tokens - 1) / block_size_ * block_size_);
    return {t, t};
  }
  // The production Mamba `align` rule (classic, core/kv_group/mamba_align_policy.h) when
  // `mamba_align` is set, so scheduler tests exercise the one copy of it.
  int64_t AlignChunk(const SimRequest& r, int64_t start, int64_t n, int64_t,
                     int64_t chunk_limit) override {
    if (!mamba_align) return n;
    return ClassicMambaAlignedSplit(start, n, r.num_tokens, r.num_prompt_tokens, block_size_,
                                    eagle, chunk_limit);
  }
  bool AllocateSlots(const SimRequest& r, const AllocateArgs& a) override {
    calls.push_back({r.id, a});
    int64_t& held = held_[r.id];
    const int64_t base = r.num_computed_tokens + a.num_new_computed_tokens;
    if (a.full_sequence_must_fit) {
      const int64_t need_full = CeilDiv(r.num_tokens, block_size_) - held;
      if (need_full > free_) return false;
    }
    const int64_t need =
        CeilDiv(base + a.num_new_tokens + a.num_lookahead_tokens, block_size_) - held;
    const int64_t watermark = a.apply_watermark ? watermark_blocks : 0;
    if (need + watermark > free_) return false;
    if (need > 0) {
      free_ -= need;
      held += need;
    }
    return true;
  }
  void Free(const SimRequest& r) override {
    freed.push_back(r.id);
    free_ += held_[r.id];
    held_[r.id] = 0;
  }

  void SetHit(int64_t id, int64_t tokens) { hits_[RequestId{id}] = tokens; }
  // Gives a running request the blocks its computed tokens already occupy.
  void Hold(const SimRequest& r) {
    const int64_t blocks = CeilDiv(r.num_computed_tokens, block_size_);
    free_ -= blocks;
    held_[r.id] += blocks;
  }
  int64_t num_free() const { return free_; }
  int64_t held(int64_t id) const {
    auto it = held_.find(RequestId{id});
    return it == held_.end() ? 0 : it->second;
  }

  struct Call {
    RequestId id;
    AllocateArgs args;
  };
  std::vector<Call> calls;
  std::vector<RequestId> freed;
  int64_t watermark_blocks = 0;
  bool mamba_align = false;
  bool eagle = false;

 private:
  int64_t block_size_;
  int64_t free_;
  std::map<RequestId, int64_t> hits_;
  std::map<RequestId, int64_t> held_;
};

}  // namespace kvsim::testing
