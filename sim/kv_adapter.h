// KvAdapter: the real prefix-caching KvCacheManager (core/kv_cache_manager.h) behind the
// scheduler's IKvAllocator seam. It translates one call to one manager call; the only state
// it adds is nothing: the manager's RequestHandle travels in SimRequest::kv_handle, and the
// request's progress (num_computed_tokens) is passed in on every call, as the manager asks.
#pragma once

#include "core/kv_cache_manager.h"
#include "sim/scheduler/i_kv_allocator.h"

namespace kvsim {

class KvAdapter : public IKvAllocator {
 public:
  explicit KvAdapter(KvCacheManager* manager) : mgr_(manager) {}
  // [latest] SchedulerConfig.watermark: int(watermark · num_gpu_blocks) blocks a waiting
  // request's admission must leave free while others run (0 = off, vLLM's default).
  void set_watermark_blocks(int64_t n) { watermark_blocks_ = n; }

  PrefixHitInfo FindPrefixHit(const SimRequest& r) override {
    const PrefixHit hit = mgr_->GetComputedBlocks(r.kv_handle, r.num_computed_tokens);
    return {hit.num_tokens, hit.shared_prefix_tokens};
  }
  int64_t AlignChunk(const SimRequest& r, int64_t start, int64_t n, int64_t shared_prefix,
                     int64_t chunk_limit) override {
    return mgr_->MambaAlignedSplit(r.kv_handle, start, n, shared_prefix, chunk_limit);
  }
  bool AllocateSlots(const SimRequest& r, const AllocateArgs& a) override {
    return mgr_->AllocateSlots(r.kv_handle, r.num_computed_tokens, a.num_new_tokens,
                               a.num_new_computed_tokens, a.num_lookahead_tokens,
                               a.full_sequence_must_fit, /*num_in_flight_tokens=*/0,
                               a.num_external_computed_tokens, a.delay_cache_blocks,
                               a.reserved_blocks,
                               a.apply_watermark ? watermark_blocks_ : 0);
  }
  void Free(const SimRequest& r) override { mgr_->Free(r.kv_handle); }
  void CacheBlocks(const SimRequest& r, int64_t num_tokens) override {
    mgr_->CacheBlocks(r.kv_handle, num_tokens);
  }
  int64_t RemainingBlocks(const SimRequest& r) override {
    return mgr_->RemainingBlocks(r.kv_handle);
  }

 private:
  KvCacheManager* mgr_;
  int64_t watermark_blocks_ = 0;
};

}  // namespace kvsim
