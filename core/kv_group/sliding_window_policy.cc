#include "core/kv_group/sliding_window_policy.h"

#include "core/kv_cache_spec.h"

namespace kvsim {

int64_t SlidingWindowPolicy::FindHit(int64_t max_length, bool drop_eagle, const HitProbe& cached,
                                     const HitSink& put, BlockId* buf) const {
  return FindSlidingWindowHit(max_length, block_size(), group().sliding_window,
                              context().scheduler_block_size, drop_eagle, cached, put, buf);
}

int64_t SlidingWindowPolicy::MaxBlocksPerRequest(int64_t max_len) const {
  return SlidingWindowMaxBlocks(group().sliding_window, block_size(),
                                context().max_num_batched_tokens, max_len);
}

bool SlidingWindowPolicy::RetentionMask(int64_t start, int64_t end,
                                        std::span<const int64_t> boundaries,
                                        std::vector<uint8_t>& mask) const {
  return SlidingWindowRetentionMask(start, end, block_size(), group().sliding_window,
                                    context().scheduler_block_size, group().eagle_group,
                                    context().retention_interval, boundaries, mask);
}

}  // namespace kvsim
