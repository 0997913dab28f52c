// From a KV cache manager configuration (the GPU side: groups, block sizes, hashing) and the
// user's offloading options to the connector's configuration, with vLLM's checks
// (OffloadingSpec.__init__, kv-offload.md §1 and §9):
//   - the offloaded block size is a multiple of the GPU block size;
//   - an explicit offloaded block size needs every group at the same GPU block size;
//   - every group's GPU block size is a multiple of the hash block size;
//   - sliding-window groups get a window of cdiv(W, obs) offloaded blocks, Mamba groups 1;
//     chunked-local attention is not an attention kind the connector accepts;
//   - Mamba `align` mode: vLLM's scheduler asserts that a request has no external (CPU) hit
//     (_mamba_block_aligned_split, "External KV connector is not verified yet"), so the first
//     CPU hit would abort the engine; kvsim refuses the combination up front.
// Errors carry a code naming the offending option (callers turn it into a file:line:key or a
// flag name) and a message that does not repeat the key.
#pragma once

#include <cstdint>

#include "core/kv_cache_manager.h"
#include "core/offload/offload_connector.h"
#include "core/status.h"

namespace kvsim {

struct OffloadOptions {
  int64_t num_cpu_blocks = 0;      // the CPU tier in offloaded blocks
  int64_t offload_block_size = 0;  // tokens; 0 = each group's GPU block size (f = 1)
  CpuEvictionPolicyKind eviction_policy = CpuEvictionPolicyKind::kLru;
  int64_t store_threshold = 0;
  int64_t max_tracker_size = 64000;
};

// Status codes, one per option a failure is about.
inline constexpr const char* kOffloadErrBlockSize = "offload_block_size";
inline constexpr const char* kOffloadErrNumCpuBlocks = "offload_num_cpu_blocks";
inline constexpr const char* kOffloadErrMambaAlign = "offload_mamba_align";
inline constexpr const char* kOffloadErrGroups = "offload_groups";

Result<OffloadConnectorConfig> MakeOffloadConnectorConfig(const KvCacheManagerConfig& kv,
                                                          const OffloadOptions& options);

}  // namespace kvsim
