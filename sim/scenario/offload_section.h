// cache.offload: vLLM's CPU KV offloading tier as a scenario section (kv-offload.md §1). The
// keys mirror vLLM's kv_connector_extra_config of the OffloadingConnector:
//   cpu_bytes | num_cpu_blocks   the tier's size: bytes (vLLM's cpu_bytes_to_use, over all TP
//                                ranks; 8GiB ok) or offloaded blocks directly (one is required)
//   block_size                   offloaded block in tokens, a multiple of the GPU block
//                                (0 = the GPU block size)
//   eviction_policy              lru | arc
//   store_threshold              store a block only after this many lookups (< 2: always)
//   max_tracker_size             entries of the lookup counter behind store_threshold
// Parsed into OffloadSection (sim/instance/offload_tier_config.h) with the cache section;
// checked against the KV cache plan by ScenarioOffloadConfig (sim/instance_builder.h), which
// mirrors vLLM's assertions with file:line:key errors.
#pragma once

#include <cstdint>
#include <string>

#include "core/offload/offload_config.h"
#include "core/page_planner.h"
#include "sim/config/config_reader.h"
#include "sim/instance/offload_tier_config.h"

namespace kvsim {

// Reads cache.offload from the cache section's reader.
void ParseOffloadSection(ConfigReader& cache, OffloadSection& out);

}  // namespace kvsim
