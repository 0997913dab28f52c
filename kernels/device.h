// What the GPU validation mode needs to know about the CUDA device, and whether there is
// one. Always built: without CUDA (or without a device — cudaGetDeviceCount's error 35 on a
// machine with no driver counts as zero devices) `available` is false, `why` says so in a
// user's words ("no CUDA device found") and `detail` gives the CUDA call and error behind it.
#pragma once

#include <cstdint>
#include <string>

namespace kvsim::kernels {

struct DeviceInfo {
  bool available = false;
  std::string why;     // when not available
  std::string detail;  // when not available: the failing CUDA call and its error, if any
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  int64_t l2_bytes = 0;
  int64_t global_memory_bytes = 0;
  int memory_clock_khz = 0;
  int memory_bus_bits = 0;
  double hbm_peak_bytes_per_s = 0;  // 2 (DDR) × memory clock × bus width / 8
};

DeviceInfo QueryDevice();

// True when this build contains the CUDA kernels.
bool BuiltWithCuda();

}  // namespace kvsim::kernels
