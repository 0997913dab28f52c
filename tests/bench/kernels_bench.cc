// Kernel benchmarks (label bench): append, gather, NHD→HND conversion and decode attention
// on the plain layout, timed with CUDA events (manual time). Without a CUDA device every
// benchmark reports "skipped: no CUDA device". The full suite with layout variants, the
// copy ceiling and the model comparison is `kvsim gpu-validate`.
#include <benchmark/benchmark.h>

#include "kernels/device.h"
#include "kernels/validate/layout_cases.h"

#ifdef KVSIM_HAVE_CUDA
#include <cuda_runtime.h>

#include <numeric>
#include <vector>

#include "kernels/cuda/launch.h"
#include "kernels/decode_attention.h"
#include "kernels/row_copy.h"
#endif

namespace kvsim::kernels {
namespace {

bool Skip(benchmark::State& state) {
  static const DeviceInfo dev = QueryDevice();
  if (dev.available) return false;
  state.SkipWithError(("skipped: " + dev.why).c_str());
  return true;
}

#ifdef KVSIM_HAVE_CUDA
template <typename F>
void TimeLoop(benchmark::State& state, F&& launch, int64_t bytes) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  launch();
  for (auto _ : state) {
    cudaEventRecord(a);
    launch();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    state.SetIterationTime(ms * 1e-3);
  }
  state.SetBytesProcessed(state.iterations() * bytes);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
}
#endif

void BM_AppendGather(benchmark::State& state) {
  if (Skip(state)) return;
#ifdef KVSIM_HAVE_CUDA
  const int64_t tokens = state.range(0);
  const bool gather = state.range(1) != 0;
  LayoutShape sh;
  const LayoutCase c = MakeLayoutCase("NHD", sh, tokens / 16 + 1);
  const int64_t in = tokens * sh.heads * c.view.k_bytes;
  void *cache, *k, *v, *slots;
  cudaMalloc(&cache, c.alloc_bytes);
  cudaMalloc(&k, in);
  cudaMalloc(&v, in);
  cudaMalloc(&slots, tokens * 8);
  std::vector<int64_t> hs(tokens);
  std::iota(hs.begin(), hs.end(), 16);
  cudaMemcpy(slots, hs.data(), tokens * 8, cudaMemcpyHostToDevice);
  RowCopyParams p;
  if (!gather) {
    CacheAppendArguments a;
    a.layout = c.view;
    a.cache = cache;
    a.num_tokens = tokens;
    a.num_heads = sh.heads;
    a.head_size = sh.head_size;
    a.key = k;
    a.value = v;
    a.slot_mapping = static_cast<int64_t*>(slots);
    p = MakeParams(a);
  } else {
    PagedGatherArguments a;
    a.layout = c.view;
    a.cache = cache;
    a.num_tokens = tokens;
    a.num_heads = sh.heads;
    a.head_size = sh.head_size;
    a.out_key = k;
    a.out_value = v;
    a.slot_mapping = static_cast<int64_t*>(slots);
    p = MakeParams(a);
  }
  TimeLoop(state, [&] { LaunchRowCopy(p); }, MovedBytes(p, tokens));
  cudaFree(cache);
  cudaFree(k);
  cudaFree(v);
  cudaFree(slots);
#endif
}
BENCHMARK(BM_AppendGather)
    ->ArgsProduct({{256, 8192, 131072}, {0, 1}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

void BM_DecodeAttention(benchmark::State& state) {
  if (Skip(state)) return;
#ifdef KVSIM_HAVE_CUDA
  const int64_t batch = state.range(0), ctx = state.range(1);
  LayoutShape sh;
  const int64_t per = ctx / 16;
  const LayoutCase c = MakeLayoutCase("NHD", sh, batch * per + 1);
  const int64_t qh = sh.heads * 4;
  void *cache, *q, *bt, *lens, *out, *ws;
  cudaMalloc(&cache, c.alloc_bytes);
  LaunchFillPattern(cache, c.alloc_bytes, 1);
  cudaMalloc(&q, batch * qh * sh.head_size * 2);
  LaunchFillPattern(q, batch * qh * sh.head_size * 2, 2);
  std::vector<int32_t> hb(batch * per), hl(batch, static_cast<int32_t>(ctx));
  std::iota(hb.begin(), hb.end(), 1);
  cudaMalloc(&bt, hb.size() * 4);
  cudaMalloc(&lens, hl.size() * 4);
  cudaMemcpy(bt, hb.data(), hb.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(lens, hl.data(), hl.size() * 4, cudaMemcpyHostToDevice);
  cudaMalloc(&out, batch * qh * sh.head_size * 4);
  DecodeAttentionArguments a;
  a.layout = c.view;
  a.cache = cache;
  a.batch = batch;
  a.num_q_heads = qh;
  a.num_kv_heads = sh.heads;
  a.head_size = sh.head_size;
  a.query = q;
  a.block_tables = static_cast<int32_t*>(bt);
  a.max_blocks_per_seq = per;
  a.seq_lens = static_cast<int32_t*>(lens);
  a.max_seq_len = ctx;
  a.scale = 0.0884f;
  a.out = static_cast<float*>(out);
  cudaMalloc(&ws, WorkspaceFloats(a) * 4);
  a.workspace = static_cast<float*>(ws);
  const DecodeAttentionParams p = MakeParams(a);
  TimeLoop(state, [&] { LaunchDecodeAttention(p); }, DecodeKvBytes(a, batch * ctx));
  for (void* x : {cache, q, bt, lens, out, ws}) cudaFree(x);
#endif
}
BENCHMARK(BM_DecodeAttention)
    ->Args({1, 1024})
    ->Args({32, 4096})
    ->Args({32, 16384})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace kvsim::kernels

BENCHMARK_MAIN();
