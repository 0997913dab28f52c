// The GPU half of the validation mode: an Executor that runs the CUDA kernels (for the
// correctness harness in correctness.h) and the timing suite — a D2D copy ceiling, then
// append / gather / conversion / decode attention over plain, HND, padded, packed and
// cross-layer layouts at several sizes, each timed with CUDA events after warm-up and an
// L2 flush (median of repeats), reported against the device peak (cudaDeviceProp), the
// measured copy, the plain layout, and the kernel-time model. Built everywhere; without
// CUDA MakeCudaExecutor() returns null and RunTimings() an error.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/hardware_profile.h"
#include "core/status.h"
#include "kernels/device.h"
#include "kernels/validate/calibrate.h"
#include "kernels/validate/correctness.h"

namespace kvsim::kernels {

std::unique_ptr<Executor> MakeCudaExecutor();

struct TimingOptions {
  int warmup = 2;
  int repeats = 9;
  bool quick = false;        // smaller sizes, fewer variants (sanitizer and smoke runs)
  HardwareProfile model;     // the model to compare against ("before" calibration)
};

struct TimingRow {
  TimingSample sample;
  double min_s = 0;
  double max_s = 0;
  double gbps = 0;        // bytes / median, 1e9
  double pct_peak = 0;    // of DeviceInfo::hbm_peak_bytes_per_s
  double pct_copy = 0;    // of the measured cudaMemcpy D2D
  double vs_plain = 0;    // median / plain NHD median of the same kernel and size (0: n/a)
  double model_s = 0;     // `model` before calibration
  int vec_bytes = 0;      // data movement: access width used
};

struct TimingReport {
  DeviceInfo device;
  double memcpy_bytes_per_s = 0;      // cudaMemcpyAsync D2D, read + written
  double copy_kernel_bytes_per_s = 0; // 16-byte vector copy kernel
  std::vector<TimingRow> rows;
};

Result<TimingReport> RunTimings(const TimingOptions& options);

}  // namespace kvsim::kernels
