#include "sim/scenario/offload_section.h"

#include <string>

#include "sim/scenario_config.h"

namespace kvsim {

void ParseOffloadSection(ConfigReader& cache, OffloadSection& out) {
  ConfigReader r = cache.Map("offload",
                             "CPU KV offloading tier (vLLM's OffloadingConnector, "
                             "--kv-offloading-size); absent = no tier");
  out.enabled = r.present();
  out.cpu_bytes = r.Bytes("cpu_bytes", 0,
                          "CPU tier size in bytes over all TP ranks (vLLM's cpu_bytes_to_use); "
                          "8GiB ok; give this or num_cpu_blocks; 0 = an empty tier (a "
                          "baseline point)");
  out.num_cpu_blocks = r.Int("num_cpu_blocks", 0,
                             "CPU tier size in offloaded blocks; give this or cpu_bytes", 0);
  out.block_size = r.Int("block_size", 0,
                         "offloaded block in tokens, a multiple of the GPU block; 0 = the GPU "
                         "block size",
                         0, 1 << 24);
  out.eviction_policy =
      r.Choice("eviction_policy", "lru", {"lru", "arc"}, "the CPU tier's eviction policy");
  out.store_threshold = r.Int("store_threshold", 0,
                              "store a block only after it was looked up this many times "
                              "(below 2: store everything)",
                              0);
  out.max_tracker_size = r.Int("max_tracker_size", 64000,
                               "entries of the LRU lookup counter behind store_threshold", 1);
  out.pcie_gbytes_per_s = r.Double("pcie_gbytes_per_s", 55,
                                   "kvsim run: GB/s of the GPU's host link per direction (PCIe "
                                   "Gen5 x16 ≈ 55, Gen4 ≈ 26)",
                                   0.001, 1e6);
  out.pcie_latency_us = r.Double("pcie_latency_us", 10,
                                 "kvsim run: fixed latency of one copy job, µs", 0, 1e6);
  out.copy_kernel_us = r.Double("copy_kernel_us", 5,
                                "kvsim run: launch + tail of one copy kernel (one per KV "
                                "tensor per job), µs",
                                0, 1e6);
  out.shared_link = r.Bool("shared_link", false,
                           "kvsim run: loads and stores share one link (false: one per "
                           "direction, as PCIe's full duplex)");
  if (out.enabled && !r.describing()) {
    const bool bytes = r.Has("cpu_bytes"), blocks = r.Has("num_cpu_blocks");
    if (bytes && blocks) {
      r.Error("num_cpu_blocks", "bad_value", "give cpu_bytes or num_cpu_blocks, not both");
    } else if (!bytes && !blocks) {
      r.Error("", "missing_key", "the CPU tier needs a size: cpu_bytes or num_cpu_blocks");
    } else if (bytes && out.cpu_bytes < 0) {
      r.Error("cpu_bytes", "bad_value", "cpu_bytes must not be negative (0 = an empty tier)");
    }
  }
  r.Finish();
}


}  // namespace kvsim
