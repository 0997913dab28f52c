// The row-copy engine on the GPU (append, gather, layout conversion) and the plain vector
// copy used as the bandwidth baseline.
//
// A warp owns 32 rows at a time: lane j resolves row j's source and destination through
// RowCopyParams::Row (KvAddressing::ManagerOffset on both sides, the layouts' strides
// resolved on the host and read from the kernel parameters), then the warp walks the 32
// rows' bytes as one flat sequence of `vec`-byte chunks, each lane fetching the row address
// it needs with a shuffle. Every lane stays busy whatever the row length, accesses are
// coalesced within a row, and the offset arithmetic is paid once per row, not per chunk.
// kUnroll chunks per lane are loaded before any is stored, to keep loads in flight.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "kernels/cuda/launch.h"

namespace kvsim::kernels {
namespace {

template <int kVec>
struct VecType;
template <>
struct VecType<16> { using T = uint4; };
template <>
struct VecType<8> { using T = uint2; };
template <>
struct VecType<4> { using T = uint32_t; };
template <>
struct VecType<2> { using T = uint16_t; };
template <>
struct VecType<1> { using T = uint8_t; };

constexpr int kThreads = 256;
// Tuned defaults (H100, kernels_bench BM_RowCopyTuning): chunks in flight per lane and
// CTAs per SM that the register budget must allow.
constexpr int kDefaultUnroll = 8;
constexpr int kDefaultMinBlocks = 2;

// Source and destination of row r as integers (0 = skip this row).
__device__ __forceinline__ void ResolveRow(const RowCopyParams& p, int64_t r, int64_t rows,
                                           unsigned long long* f, unsigned long long* t) {
  const uint8_t* from = nullptr;
  uint8_t* to = nullptr;
  if (r >= rows || !p.Row(r, &from, &to)) {
    from = nullptr;
    to = nullptr;
  }
  *f = reinterpret_cast<unsigned long long>(from);
  *t = reinterpret_cast<unsigned long long>(to);
}

template <int kVec, int kUnroll, int kMinBlocks>
__global__ void __launch_bounds__(kThreads, kMinBlocks) RowCopyKernel(const RowCopyParams p) {
  using V = typename VecType<kVec>::T;
  const int lane = threadIdx.x & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x) >> 5;
  const int64_t warps = (static_cast<int64_t>(gridDim.x) * kThreads) >> 5;
  const int64_t rows = p.num_rows();
  const unsigned chunks_per_row = p.chunks_div.divisor;
  unsigned long long f = 0, t = 0;
  if (warp * 32 < rows) ResolveRow(p, warp * 32 + lane, rows, &f, &t);
  for (int64_t batch = warp; batch * 32 < rows; batch += warps) {
    const int64_t left = rows - batch * 32;
    const unsigned rows_here = left < 32 ? static_cast<unsigned>(left) : 32u;
    const unsigned total = rows_here * chunks_per_row;
    const int64_t next = batch + warps;
    unsigned long long nf = 0, nt = 0;
    for (unsigned c0 = 0; c0 < total; c0 += 32 * kUnroll) {
      V v[kUnroll];
      unsigned long long dst[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const unsigned c = c0 + u * 32 + lane;
        const unsigned row = p.chunks_div.Div(c);
        const unsigned chunk = c - row * chunks_per_row;
        const unsigned long long rf = __shfl_sync(0xffffffffu, f, row & 31u);
        const unsigned long long rt = __shfl_sync(0xffffffffu, t, row & 31u);
        dst[u] = 0;
        if (c < total && rt != 0) {
          v[u] = *reinterpret_cast<const V*>(rf + static_cast<unsigned long long>(chunk) * kVec);
          dst[u] = rt + static_cast<unsigned long long>(chunk) * kVec;
        }
      }
      // Resolve the next batch's rows while this batch's first loads are in flight: the
      // offset arithmetic then hides behind memory latency instead of stalling the warp.
      if (c0 == 0 && next * 32 < rows) ResolveRow(p, next * 32 + lane, rows, &nf, &nt);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        if (dst[u] != 0) *reinterpret_cast<V*>(dst[u]) = v[u];
      }
    }
    f = nf;
    t = nt;
  }
}

__global__ void __launch_bounds__(kThreads) VectorCopyKernel(uint4* dst, const uint4* src,
                                                             int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    dst[i] = a;
    dst[i + stride] = b;
    dst[i + 2 * stride] = c;
    dst[i + 3 * stride] = d;
  }
  for (; i < n; i += stride) dst[i] = src[i];
}

__global__ void FillPatternKernel(uint16_t* p, int64_t n, uint32_t seed) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    uint32_t h = static_cast<uint32_t>(i) * 0x9E3779B1u ^ seed ^ static_cast<uint32_t>(i >> 32);
    h ^= h >> 15;
    h *= 0x85EBCA77u;
    h ^= h >> 13;
    const uint32_t exp = 120u + (h >> 20) % 7u;  // bf16 exponent field: 2^-7 .. 2^-1
    p[i] = static_cast<uint16_t>((h & 0x807Fu) | (exp << 7));
  }
}

int SmCount() {
  static int sms = [] {
    int dev = 0, n = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
    return n > 0 ? n : 1;
  }();
  return sms;
}

Status CudaStatus(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return Status::Ok();
  return Status::Error("cuda_error", std::string(what) + ": " + cudaGetErrorString(err));
}

}  // namespace

Status LaunchRowCopy(const RowCopyParams& p, void* stream, RowCopyTuning tuning) {
  const int64_t rows = p.num_rows();
  if (rows == 0) return Status::Ok();
  const int64_t batches = (rows + 31) / 32;
  const int64_t want = (batches + kThreads / 32 - 1) / (kThreads / 32);
  const int64_t cap = static_cast<int64_t>(SmCount()) * 8;
  const int grid = static_cast<int>(want < cap ? want : cap);
  auto s = static_cast<cudaStream_t>(stream);
  constexpr int U = kDefaultUnroll, B = kDefaultMinBlocks;
  if (p.vec_bytes == 16 && (tuning.unroll != 0 || tuning.min_blocks != 0)) {
    const int u = tuning.unroll != 0 ? tuning.unroll : U;
    const int b = tuning.min_blocks != 0 ? tuning.min_blocks : B;
    if (u == 4 && b == 4) RowCopyKernel<16, 4, 4><<<grid, kThreads, 0, s>>>(p);
    else if (u == 8 && b == 3) RowCopyKernel<16, 8, 3><<<grid, kThreads, 0, s>>>(p);
    else if (u == 8 && b == 4) RowCopyKernel<16, 8, 4><<<grid, kThreads, 0, s>>>(p);
    else if (u == 16 && b == 2) RowCopyKernel<16, 16, 2><<<grid, kThreads, 0, s>>>(p);
    else if (u == 4 && b == 2) RowCopyKernel<16, 4, 2><<<grid, kThreads, 0, s>>>(p);
    else if (u == U && b == B) RowCopyKernel<16, U, B><<<grid, kThreads, 0, s>>>(p);
    else return Status::Error("bad_argument", "row copy tuning " + std::to_string(u) + "/" +
                                                  std::to_string(b) + " is not compiled");
    return CudaStatus(cudaGetLastError(), "row copy launch");
  }
  switch (p.vec_bytes) {
    case 16: RowCopyKernel<16, U, B><<<grid, kThreads, 0, s>>>(p); break;
    case 8: RowCopyKernel<8, U, B><<<grid, kThreads, 0, s>>>(p); break;
    case 4: RowCopyKernel<4, U, B><<<grid, kThreads, 0, s>>>(p); break;
    case 2: RowCopyKernel<2, U, B><<<grid, kThreads, 0, s>>>(p); break;
    default: RowCopyKernel<1, U, B><<<grid, kThreads, 0, s>>>(p); break;
  }
  return CudaStatus(cudaGetLastError(), "row copy launch");
}

Status LaunchVectorCopy(void* dst, const void* src, int64_t bytes, void* stream) {
  if (bytes % 16 != 0) return Status::Error("bad_argument", "vector copy needs 16-byte multiples");
  const int64_t n = bytes / 16;
  const int grid = SmCount() * 8;
  VectorCopyKernel<<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<uint4*>(dst), static_cast<const uint4*>(src), n);
  return CudaStatus(cudaGetLastError(), "vector copy launch");
}

Status LaunchFillPattern(void* dst, int64_t bytes, uint32_t seed, void* stream) {
  const int grid = SmCount() * 4;
  FillPatternKernel<<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<uint16_t*>(dst), bytes / 2, seed);
  return CudaStatus(cudaGetLastError(), "fill launch");
}

}  // namespace kvsim::kernels
