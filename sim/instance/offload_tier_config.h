// OffloadSection: an instance's CPU KV offloading tier as the scenario gives it
// (`cache.offload`): the tier's size, offloaded block size and eviction policy, and the host
// link its copies take. The instance owns this struct; the scenario loader
// (sim/scenario/offload_section.cc) only fills it, where each key's help text lives, and
// ScenarioOffloadConfig (sim/instance_builder.h) checks it against the plan and turns it into
// the connector's config and the copy-link model of the offload driver
// (sim/instance/offload_driver.h).
#pragma once

#include <cstdint>
#include <string>

namespace kvsim {

struct OffloadSection {
  bool enabled = false;  // cache.offload is present
  int64_t cpu_bytes = 0;
  int64_t num_cpu_blocks = 0;
  int64_t block_size = 0;
  std::string eviction_policy = "lru";
  int64_t store_threshold = 0;
  int64_t max_tracker_size = 64000;
  // `kvsim run`: the GPU's host link the copies take (per GPU, per direction).
  double pcie_gbytes_per_s = 55;
  double pcie_latency_us = 10;
  double copy_kernel_us = 5;  // launch + tail of one copy kernel (one per KV tensor per job)
  bool shared_link = false;   // loads and stores queue on one link (half duplex)
  // An empty tier (cpu_bytes or num_cpu_blocks 0, e.g. a sweep's baseline point): nothing is
  // offloaded, the run still reports the tier's columns.
  bool empty() const { return cpu_bytes == 0 && num_cpu_blocks == 0; }
};

}  // namespace kvsim
