#include "kernels/device.h"

#ifdef KVSIM_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace kvsim::kernels {

bool BuiltWithCuda() {
#ifdef KVSIM_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

DeviceInfo QueryDevice() {
  DeviceInfo info;
#ifndef KVSIM_HAVE_CUDA
  info.why = "kvsim was built without CUDA (nvcc not found at configure time)";
  return info;
#else
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    // Error 35 (driver older than the runtime / no driver) and 100 (no device) both mean
    // "no usable GPU here": on a machine without a GPU error 35 reads like a driver problem,
    // so the headline says what it means and the CUDA error is the detail.
    info.why = "no CUDA device found";
    info.detail = std::string("cudaGetDeviceCount failed with error ") +
                  std::to_string(static_cast<int>(err)) + ": " + cudaGetErrorString(err);
    cudaGetLastError();
    return info;
  }
  if (count == 0) {
    info.why = "no CUDA device found";
    info.detail = "cudaGetDeviceCount returned 0";
    return info;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    info.why = "cudaGetDeviceProperties failed";
    return info;
  }
  info.available = true;
  info.name = prop.name;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.sm_count = prop.multiProcessorCount;
  info.l2_bytes = prop.l2CacheSize;
  info.global_memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  cudaDeviceGetAttribute(&info.memory_clock_khz, cudaDevAttrMemoryClockRate, 0);
  cudaDeviceGetAttribute(&info.memory_bus_bits, cudaDevAttrGlobalMemoryBusWidth, 0);
  info.hbm_peak_bytes_per_s =
      2.0 * info.memory_clock_khz * 1e3 * (static_cast<double>(info.memory_bus_bits) / 8.0);
  return info;
#endif
}

}  // namespace kvsim::kernels
