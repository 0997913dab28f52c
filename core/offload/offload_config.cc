#include "core/offload/offload_config.h"

#include <string>

#include "core/int_math.h"

namespace kvsim {

Result<OffloadConnectorConfig> MakeOffloadConnectorConfig(const KvCacheManagerConfig& kv,
                                                          const OffloadOptions& o) {
  if (kv.groups.empty())
    return Status::Error(kOffloadErrGroups, "the model has no KV cache to offload");
  const int64_t bs0 = kv.groups[0].block_size;
  int64_t factor = 1;
  if (o.offload_block_size != 0) {
    for (const KvGroupConfig& g : kv.groups)
      if (g.block_size != bs0)
        return Status::Error(kOffloadErrBlockSize,
                             "an explicit offloaded block size needs every KV cache group at "
                             "the same GPU block size (vLLM asserts it); this model's groups "
                             "have " + std::to_string(bs0) + " and " +
                                 std::to_string(g.block_size) + " tokens");
    if (o.offload_block_size < 0 || o.offload_block_size % bs0 != 0)
      return Status::Error(kOffloadErrBlockSize,
                           std::to_string(o.offload_block_size) +
                               " tokens is not a positive multiple of the GPU block size " +
                               std::to_string(bs0) + " (vLLM asserts obs % block_size == 0)");
    factor = o.offload_block_size / bs0;
  }
  if (o.num_cpu_blocks < 1)
    return Status::Error(kOffloadErrNumCpuBlocks,
                         "the CPU tier holds no offloaded block (" +
                             std::to_string(o.num_cpu_blocks) + ")");
  if (kv.has_mamba_align())
    return Status::Error(kOffloadErrMambaAlign,
                         "CPU offloading with a Mamba group in 'align' mode: vLLM asserts that "
                         "a request has no external hit (_mamba_block_aligned_split: "
                         "\"External KV connector is not verified yet\"), so the first CPU hit "
                         "aborts the engine; use mamba_cache_mode all or none");

  OffloadConnectorConfig c;
  c.groups.clear();
  c.block_size_factor = factor;
  c.hash_block_size = kv.resolved_hash_block_size();
  c.enable_prefix_caching = kv.enable_caching;
  c.semantics = kv.semantics;
  c.tier.num_blocks = o.num_cpu_blocks;
  c.tier.policy = o.eviction_policy;
  c.tier.store_threshold = o.store_threshold;
  c.tier.max_tracker_size = o.max_tracker_size;
  for (size_t i = 0; i < kv.groups.size(); ++i) {
    const KvGroupConfig& g = kv.groups[i];
    const int64_t obs = g.block_size * factor;
    OffloadGroupConfig og{g.block_size, 0};
    switch (g.kind) {
      case KvGroupKind::kFullAttention:
        break;
      case KvGroupKind::kSlidingWindow:
        og.window_blocks = CeilDiv(g.sliding_window, obs);
        break;
      case KvGroupKind::kMamba:
        og.window_blocks = 1;  // a Mamba group depends on one state
        break;
      case KvGroupKind::kChunkedLocal:
        return Status::Error(kOffloadErrGroups,
                             "group " + std::to_string(i) +
                                 " is chunked-local attention, which vLLM's offloading "
                                 "connector does not accept (it asserts full attention, "
                                 "sliding window or Mamba)");
    }
    if (g.block_size % c.hash_block_size != 0)
      return Status::Error(kOffloadErrGroups,
                           "group " + std::to_string(i) + "'s block size " +
                               std::to_string(g.block_size) +
                               " is not a multiple of the hash block size " +
                               std::to_string(c.hash_block_size) +
                               " (vLLM asserts it; hybrid Mamba models need prefix caching "
                               "enabled to align block sizes)");
    c.groups.push_back(og);
  }
  const Status s = c.Validate();
  if (!s.ok()) return Status::Error(kOffloadErrGroups, s.message());
  return c;
}

}  // namespace kvsim
