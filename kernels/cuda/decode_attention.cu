// Paged decode attention on the GPU: split-K (flash-decoding) with GQA, one CTA per
// (partition of split_tokens tokens, KV head, sequence × head pass), then a combine kernel.
//
// Determinism across layouts (the design rule of decode_attention.h): inside a partition,
// token t is always handled by the same (warp, sub-row, unroll slot) — a function of t
// alone — and every sum runs in a fixed order: the 8 products of a lane in element order,
// a butterfly over the lanes of a row, tokens of a lane in increasing order, a butterfly
// over the sub-rows of a warp, warps 0..3, partitions 0..S-1. Addresses come from
// KvAddressing::ManagerOffset (KvLayout::ManagerOffset with the strides resolved on the host,
// computed once per token into shared memory); the layout never changes which values meet
// in which order, and neither do the tuning parameters (unroll, pipelining, CTAs per SM):
// they change when a load is issued, never which lane adds which product.
//
// Each lane loads 16 bytes (8 fp16/bf16 elements) of a K or V row; kLanes = D / 8 lanes
// read one row. K and V are each read once per (KV head, head pass) from DRAM.
#include <cuda_runtime.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "kernels/cuda/launch.h"

namespace kvsim::kernels {
namespace {

struct Bf16Tag {};
struct Fp16Tag {};

__device__ __forceinline__ void Unpack8(const uint4& v, float out[8], Bf16Tag) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    out[2 * i] = __uint_as_float(w[i] << 16);
    out[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
  }
}

__device__ __forceinline__ void Unpack8(const uint4& v, float out[8], Fp16Tag) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    __half2 h;
    memcpy(&h, &w[i], 4);
    const float2 f = __half22float2(h);
    out[2 * i] = f.x;
    out[2 * i + 1] = f.y;
  }
}

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr unsigned kFull = 0xffffffffu;

// Tuned defaults (H100, kernels_bench BM_DecodeTuning: 4 rows in flight per lane at 8 CTAs
// per SM beat 8 rows at 6 CTAs by 3% at 32 × 16k tokens and 19% at 16 × 2k).
constexpr int kDefaultUnroll = 4;
constexpr bool kDefaultPipeline = false;
constexpr int DefaultMinBlocks(int g) { return g >= 8 ? 3 : 8; }
// Grid order: KV heads fastest (the CTAs that run together read the same tokens' rows,
// neighbouring bytes in most layouts) or partitions fastest.
constexpr bool kDefaultHeadMajor = true;

// Rows t = base + u * kRowsPerIter + row0 (u < kUnroll) of a K or V table: lane li's 16 bytes.
template <int kUnroll, int kRowsPerIter>
__device__ __forceinline__ void LoadRows(uint4 (&raw)[kUnroll], const uint8_t* cache,
                                         const int64_t* off, int base, int row0, int n, int li) {
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int t = base + u * kRowsPerIter + row0;
    raw[u] = t < n ? __ldg(reinterpret_cast<const uint4*>(cache + off[t]) + li)
                   : make_uint4(0, 0, 0, 0);
  }
}

// kPipe: the next kUnroll rows are loaded before the current ones are used, so a lane keeps
// loads in flight through its arithmetic (twice the data registers).
template <typename Tag, int kLanes, int kG, int kUnroll, int kMinBlocks, bool kPipe>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    DecodePartialKernel(const DecodeAttentionParams p) {
  constexpr int kRowsPerWarp = 32 / kLanes;
  constexpr int kRowsPerIter = kWarps * kRowsPerWarp;
  constexpr int kStep = kRowsPerIter * kUnroll;
  constexpr int kD = kLanes * 8;
  const DecodeAttentionArguments& a = p.args;
  const int P = static_cast<int>(p.split_tokens);
  extern __shared__ __align__(16) unsigned char smem[];
  int64_t* koff = reinterpret_cast<int64_t*>(smem);
  int64_t* voff = koff + P;
  float* sc = reinterpret_cast<float*>(voff + P);  // scores [kG][P]; later [kWarps][kG][kD]
  __shared__ float m_s[kG];
  __shared__ float l_s[kG];

  const int split = p.head_major ? blockIdx.y : blockIdx.x;
  const int kvh = p.head_major ? blockIdx.x : blockIdx.y;
  const int b = blockIdx.z / static_cast<int>(p.head_passes);
  const int pass = blockIdx.z % static_cast<int>(p.head_passes);
  const int group = static_cast<int>(p.group);
  const int qh0 = kvh * group + pass * kG;
  const int nh = min(kG, group - pass * kG);
  const int seq_len = a.seq_lens[b];
  const int t0 = split * P;
  const int n = min(P, seq_len - t0);
  if (n <= 0) return;  // the combine kernel reads only this sequence's partitions
  const int64_t S = p.num_splits;
  const int64_t QH = a.num_q_heads;
  const int64_t BH = a.batch * QH;
  float* ws_m = a.workspace;
  float* ws_l = ws_m + BH * S;
  float* ws_acc = ws_l + BH * S;

  const auto* cache = static_cast<const uint8_t*>(a.cache);
  const int32_t* bt = a.block_tables + static_cast<int64_t>(b) * a.max_blocks_per_seq;
  const int tid = threadIdx.x;
  for (int t = tid; t < n; t += kThreads) {
    int64_t blk = 0, pos = 0;
    p.per_block.DivMod(t0 + t, &blk, &pos);
    blk = bt[blk];
    koff[t] = p.addr.ManagerOffset(a.layer, blk, kvh, pos, 0);
    voff[t] = p.addr.ManagerOffset(a.layer, blk, kvh, pos, p.addr.k_bytes);
  }
  const int warp = tid >> 5;
  const int lane = tid & 31;
  const int sub = lane / kLanes;
  const int li = lane % kLanes;

  float q[kG][8];
  const auto* qp = static_cast<const uint16_t*>(a.query);
#pragma unroll
  for (int h = 0; h < kG; ++h) {
    if (h < nh) {
      const uint4 raw = *reinterpret_cast<const uint4*>(
          qp + (static_cast<int64_t>(b) * QH + qh0 + h) * kD + li * 8);
      Unpack8(raw, q[h], Tag{});
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e) q[h][e] = 0.f;
    }
  }
  __syncthreads();

  // Scores: s[h][t] = scale · q_h · k_t.
  const int row0 = warp * kRowsPerWarp + sub;
  uint4 next[kUnroll];
  if (kPipe) LoadRows<kUnroll, kRowsPerIter>(next, cache, koff, 0, row0, n, li);
  for (int base = 0; base < n; base += kStep) {
    uint4 raw[kUnroll];
    if (kPipe) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) raw[u] = next[u];
      if (base + kStep < n)
        LoadRows<kUnroll, kRowsPerIter>(next, cache, koff, base + kStep, row0, n, li);
    } else {
      LoadRows<kUnroll, kRowsPerIter>(raw, cache, koff, base, row0, n, li);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int t = base + u * kRowsPerIter + row0;
      float k[8];
      Unpack8(raw[u], k, Tag{});
      float s[kG];
#pragma unroll
      for (int h = 0; h < kG; ++h) {
        float acc = 0.f;
#pragma unroll
        for (int e = 0; e < 8; ++e) acc = fmaf(q[h][e], k[e], acc);
        s[h] = acc;
      }
#pragma unroll
      for (int off = kLanes / 2; off >= 1; off >>= 1) {
#pragma unroll
        for (int h = 0; h < kG; ++h) s[h] += __shfl_xor_sync(kFull, s[h], off);
      }
      if (li == 0 && t < n) {
#pragma unroll
        for (int h = 0; h < kG; ++h) sc[h * P + t] = s[h] * a.scale;
      }
    }
  }
  __syncthreads();

  // Softmax statistics per head: warp w owns heads w, w + 4, ...
  for (int h = warp; h < nh; h += kWarps) {
    float mx = -INFINITY;
    for (int t = lane; t < n; t += 32) mx = fmaxf(mx, sc[h * P + t]);
#pragma unroll
    for (int off = 16; off >= 1; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, off));
    float sum = 0.f;
    for (int t = lane; t < n; t += 32) {
      const float e = expf(sc[h * P + t] - mx);
      sc[h * P + t] = e;
      sum += e;
    }
#pragma unroll
    for (int off = 16; off >= 1; off >>= 1) sum += __shfl_xor_sync(kFull, sum, off);
    if (lane == 0) {
      m_s[h] = mx;
      l_s[h] = sum;
    }
  }
  __syncthreads();

  // Weighted V: acc[h][e] = Σ_t p[h][t] · v_t[e] over this lane's tokens.
  float acc[kG][8];
#pragma unroll
  for (int h = 0; h < kG; ++h)
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[h][e] = 0.f;
  if (kPipe) LoadRows<kUnroll, kRowsPerIter>(next, cache, voff, 0, row0, n, li);
  for (int base = 0; base < n; base += kStep) {
    uint4 raw[kUnroll];
    if (kPipe) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) raw[u] = next[u];
      if (base + kStep < n)
        LoadRows<kUnroll, kRowsPerIter>(next, cache, voff, base + kStep, row0, n, li);
    } else {
      LoadRows<kUnroll, kRowsPerIter>(raw, cache, voff, base, row0, n, li);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int t = base + u * kRowsPerIter + row0;
      if (t < n) {
        float v[8];
        Unpack8(raw[u], v, Tag{});
#pragma unroll
        for (int h = 0; h < kG; ++h) {
          const float w = sc[h * P + t];
#pragma unroll
          for (int e = 0; e < 8; ++e) acc[h][e] = fmaf(w, v[e], acc[h][e]);
        }
      }
    }
  }
#pragma unroll
  for (int off = kLanes; off < 32; off <<= 1) {
#pragma unroll
    for (int h = 0; h < kG; ++h)
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[h][e] += __shfl_xor_sync(kFull, acc[h][e], off);
  }
  __syncthreads();  // every warp is done with the scores; reuse the buffer
  float* red = sc;
  if (sub == 0) {
#pragma unroll
    for (int h = 0; h < kG; ++h)
#pragma unroll
      for (int e = 0; e < 8; ++e) red[(warp * kG + h) * kD + li * 8 + e] = acc[h][e];
  }
  __syncthreads();
  for (int i = tid; i < nh * kD; i += kThreads) {
    const int h = i / kD;
    const int d = i % kD;
    float v = red[h * kD + d];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) v += red[(w * kG + h) * kD + d];
    ws_acc[((static_cast<int64_t>(b) * QH + qh0 + h) * S + split) * kD + d] = v;
  }
  if (tid < nh) {
    const int64_t idx = (static_cast<int64_t>(b) * QH + qh0 + tid) * S + split;
    ws_m[idx] = m_s[tid];
    ws_l[idx] = l_s[tid];
  }
}

// One CTA per (sequence, query head), one thread per output element. The partition maxima
// and weights are staged in shared memory so the accumulator loads of all partitions can be
// in flight at once; every sum still runs over partitions 0..S-1 in order.
__global__ void DecodeCombineKernel(const DecodeAttentionParams p) {
  extern __shared__ float sm[];  // [S] m, [S] l, [S] weights
  const DecodeAttentionArguments& a = p.args;
  const int64_t QH = a.num_q_heads;
  const int64_t b = blockIdx.x / QH;
  const int64_t qh = blockIdx.x % QH;
  const int d = threadIdx.x;
  const int64_t D = a.head_size;
  const int64_t S = p.num_splits;
  const int64_t BH = a.batch * QH;
  const float* ws_m = a.workspace;
  const float* ws_l = ws_m + BH * S;
  const float* ws_acc = ws_l + BH * S;
  const int sb = static_cast<int>((a.seq_lens[b] + p.split_tokens - 1) / p.split_tokens);
  const int64_t base = (b * QH + qh) * S;
  float* m = sm;
  float* l = sm + S;
  float* w = sm + 2 * S;
  for (int s = d; s < sb; s += blockDim.x) {
    m[s] = ws_m[base + s];
    l[s] = ws_l[base + s];
  }
  __syncthreads();
  float mx = -INFINITY;
  for (int s = 0; s < sb; ++s) mx = fmaxf(mx, m[s]);
  for (int s = d; s < sb; s += blockDim.x) w[s] = expf(m[s] - mx);
  __syncthreads();
  float lsum = 0.f, o = 0.f;
#pragma unroll 8
  for (int s = 0; s < sb; ++s) {
    lsum += w[s] * l[s];
    o += w[s] * ws_acc[(base + s) * D + d];
  }
  a.out[(b * QH + qh) * D + d] = o / lsum;
}

template <typename Tag, int kLanes, int kG, int kUnroll = kDefaultUnroll,
          int kMinBlocks = DefaultMinBlocks(kG), bool kPipe = kDefaultPipeline>
cudaError_t LaunchPartial(const DecodeAttentionParams& p, cudaStream_t s) {
  constexpr int kD = kLanes * 8;
  const int64_t P = p.split_tokens;
  const int64_t scores = kG * P * 4;
  const int64_t reduce = kWarps * kG * kD * 4;
  const size_t smem = static_cast<size_t>(16 * P + (scores > reduce ? scores : reduce));
  if (smem > 48 * 1024) {
    cudaError_t e = cudaFuncSetAttribute(
        DecodePartialKernel<Tag, kLanes, kG, kUnroll, kMinBlocks, kPipe>,
        cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    if (e != cudaSuccess) return e;
  }
  const unsigned splits = static_cast<unsigned>(p.num_splits);
  const unsigned heads = static_cast<unsigned>(p.args.num_kv_heads);
  const dim3 grid(p.head_major ? heads : splits, p.head_major ? splits : heads,
                  static_cast<unsigned>(p.args.batch * p.head_passes));
  DecodePartialKernel<Tag, kLanes, kG, kUnroll, kMinBlocks, kPipe>
      <<<grid, kThreads, smem, s>>>(p);
  return cudaGetLastError();
}

template <typename Tag, int kLanes>
cudaError_t DispatchGroup(const DecodeAttentionParams& p, cudaStream_t s) {
  switch (p.heads_per_pass) {
    case 1: return LaunchPartial<Tag, kLanes, 1>(p, s);
    case 2: return LaunchPartial<Tag, kLanes, 2>(p, s);
    case 4: return LaunchPartial<Tag, kLanes, 4>(p, s);
    default: return LaunchPartial<Tag, kLanes, 8>(p, s);
  }
}

template <typename Tag>
cudaError_t DispatchHead(const DecodeAttentionParams& p, cudaStream_t s) {
  switch (p.args.head_size) {
    case 64: return DispatchGroup<Tag, 8>(p, s);
    case 128: return DispatchGroup<Tag, 16>(p, s);
    default: return DispatchGroup<Tag, 32>(p, s);
  }
}

// The variants kernels_bench sweeps: bf16, D 128, 4 query heads per pass.
cudaError_t LaunchTuned(const DecodeAttentionParams& p, cudaStream_t s, DecodeTuning t) {
  if (p.args.dtype != DType::kBFloat16 || p.args.head_size != 128 || p.heads_per_pass != 4)
    return cudaErrorInvalidValue;
  const int u = t.unroll != 0 ? t.unroll : kDefaultUnroll;
  const int b = t.min_blocks != 0 ? t.min_blocks : DefaultMinBlocks(4);
  const bool pipe = t.pipeline < 0 ? kDefaultPipeline : t.pipeline != 0;
  if (u == 4 && b == 8 && !pipe) return LaunchPartial<Bf16Tag, 16, 4, 4, 8, false>(p, s);
  if (u == 8 && b == 6 && !pipe) return LaunchPartial<Bf16Tag, 16, 4, 8, 6, false>(p, s);
  if (u == 4 && b == 6 && pipe) return LaunchPartial<Bf16Tag, 16, 4, 4, 6, true>(p, s);
  if (u == 8 && b == 4 && pipe) return LaunchPartial<Bf16Tag, 16, 4, 8, 4, true>(p, s);
  if (u == 8 && b == 5 && !pipe) return LaunchPartial<Bf16Tag, 16, 4, 8, 5, false>(p, s);
  return cudaErrorInvalidValue;
}

}  // namespace

Status LaunchDecodeAttention(const DecodeAttentionParams& params, void* stream,
                             DecodeTuning tuning) {
  auto s = static_cast<cudaStream_t>(stream);
  DecodeAttentionParams p = params;
  p.head_major = tuning.head_major < 0 ? kDefaultHeadMajor : tuning.head_major != 0;
  const bool tuned = tuning.unroll != 0 || tuning.min_blocks != 0 || tuning.pipeline >= 0;
  cudaError_t e = tuned                               ? LaunchTuned(p, s, tuning)
                  : p.args.dtype == DType::kFloat16 ? DispatchHead<Fp16Tag>(p, s)
                                                    : DispatchHead<Bf16Tag>(p, s);
  if (e != cudaSuccess)
    return Status::Error("cuda_error", std::string("decode attention: ") + cudaGetErrorString(e));
  const unsigned blocks = static_cast<unsigned>(p.args.batch * p.args.num_q_heads);
  const size_t combine_smem = static_cast<size_t>(3 * p.num_splits) * sizeof(float);
  DecodeCombineKernel<<<blocks, static_cast<unsigned>(p.args.head_size), combine_smem, s>>>(p);
  e = cudaGetLastError();
  if (e != cudaSuccess)
    return Status::Error("cuda_error",
                         std::string("decode attention combine: ") + cudaGetErrorString(e));
  return Status::Ok();
}

}  // namespace kvsim::kernels
