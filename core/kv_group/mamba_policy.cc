#include "core/kv_group/mamba_policy.h"

namespace kvsim {

int64_t MambaPolicy::FindHit(int64_t max_length, bool drop_eagle, const HitProbe& cached,
                             const HitSink& put, BlockId* buf) const {
  (void)drop_eagle;  // drafters have no Mamba layers: a Mamba hit never drops a block
  return FindMambaHit(max_length, block_size(), context().scheduler_block_size, cached, put, buf);
}

bool MambaPolicy::RetentionMask(int64_t start, int64_t end, std::span<const int64_t> boundaries,
                                std::vector<uint8_t>& mask) const {
  return MambaRetentionMask(start, end, block_size(), context().scheduler_block_size,
                            context().retention_interval, boundaries, mask);
}

}  // namespace kvsim
