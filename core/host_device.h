// KVSIM_HOST_DEVICE marks functions that run both on the host and inside CUDA kernels.
// Under nvcc it expands to __host__ __device__; in plain C++ builds it is empty. Only the
// header-only set that kernels/ may include uses it (dtype.h, kv_layout.h, host_device.h).
#pragma once

#if defined(__CUDACC__)
#define KVSIM_HOST_DEVICE __host__ __device__
#define KVSIM_INLINE __forceinline__
#else
#define KVSIM_HOST_DEVICE
#define KVSIM_INLINE inline
#endif
