// Kernel benchmarks (label bench): append, gather, NHD→HND conversion and decode attention
// on the plain layout, timed with CUDA events (manual time). Without a CUDA device every
// benchmark reports "skipped: no CUDA device". The full suite with layout variants, the
// copy ceiling and the model comparison is `kvsim gpu-validate`.
// BM_RowCopyTuning / BM_DecodeTuning sweep the compiled launch shapes (launch.h) at the
// sizes of the targets; each variant's output is compared byte for byte with the
// default's (a mismatch fails the benchmark), so a faster shape is also a correct one.
#include <benchmark/benchmark.h>

#include "kernels/device.h"
#include "kernels/validate/layout_cases.h"

#ifdef KVSIM_HAVE_CUDA
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
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

#ifdef KVSIM_HAVE_CUDA
std::vector<uint8_t> Download(const void* p, int64_t bytes) {
  std::vector<uint8_t> h(static_cast<size_t>(bytes));
  cudaMemcpy(h.data(), p, static_cast<size_t>(bytes), cudaMemcpyDeviceToHost);
  return h;
}
std::vector<int32_t> ShuffledBlocks(int64_t from, int64_t n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), static_cast<int32_t>(from));
  std::shuffle(v.begin(), v.end(), std::mt19937_64(7));
  return v;
}
#endif

// Args: unroll, min CTAs per SM (0 = default), kind (0 append, 1 gather, 2 NHD->HND convert);
// 131072 tokens, 8 KV heads, D 128, bf16 (1 GiB moved), blocks in shuffled order.
void BM_RowCopyTuning(benchmark::State& state) {
  if (Skip(state)) return;
#ifdef KVSIM_HAVE_CUDA
  const RowCopyTuning tune{static_cast<int>(state.range(0)), static_cast<int>(state.range(1))};
  const int kind = static_cast<int>(state.range(2));
  const int64_t tokens = 131072;
  LayoutShape sh;
  const LayoutCase c = MakeLayoutCase("NHD", sh, tokens / 16 + 1);
  LayoutShape hs = sh;
  hs.order = KvOrder::kLBHNC;
  const LayoutCase h = MakeLayoutCase("HND", hs, tokens / 16 + 1);
  const int64_t in = tokens * sh.heads * c.view.k_bytes;
  void *cache, *cache2, *k, *v, *slots, *sbt, *dbt;
  cudaMalloc(&cache, c.alloc_bytes);
  cudaMalloc(&cache2, h.alloc_bytes);
  cudaMalloc(&k, in);
  cudaMalloc(&v, in);
  cudaMalloc(&slots, tokens * 8);
  const auto fill = [&] {
    LaunchFillPattern(cache, c.alloc_bytes, 1);
    LaunchFillPattern(cache2, h.alloc_bytes, 2);
    LaunchFillPattern(k, in, 3);
    LaunchFillPattern(v, in, 4);
  };
  fill();
  const std::vector<int32_t> blocks = ShuffledBlocks(1, tokens / 16);
  const std::vector<int32_t> blocks2 = ShuffledBlocks(1, tokens / 16);
  std::vector<int64_t> hsl(static_cast<size_t>(tokens));
  for (int64_t i = 0; i < tokens; ++i) hsl[i] = int64_t{blocks[i / 16]} * 16 + i % 16;
  cudaMemcpy(slots, hsl.data(), tokens * 8, cudaMemcpyHostToDevice);
  cudaMalloc(&sbt, blocks.size() * 4);
  cudaMalloc(&dbt, blocks2.size() * 4);
  cudaMemcpy(sbt, blocks.data(), blocks.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(dbt, blocks2.data(), blocks2.size() * 4, cudaMemcpyHostToDevice);
  RowCopyParams p;
  void* out = nullptr;
  int64_t out_bytes = 0;
  if (kind == 0) {
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
    out = cache;
    out_bytes = c.alloc_bytes;
  } else if (kind == 1) {
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
    out = k;
    out_bytes = in;
  } else {
    LayoutConvertArguments a;
    a.src_layout = c.view;
    a.src = cache;
    a.src_block_table = static_cast<int32_t*>(sbt);
    a.dst_layout = h.view;
    a.dst = cache2;
    a.dst_block_table = static_cast<int32_t*>(dbt);
    a.num_tokens = tokens;
    p = MakeParams(a);
    out = cache2;
    out_bytes = h.alloc_bytes;
  }
  // Reference output: the default shape; then the variant from the same initial bytes.
  LaunchRowCopy(p);
  cudaDeviceSynchronize();
  const std::vector<uint8_t> want = Download(out, out_bytes);
  fill();
  Status st = LaunchRowCopy(p, nullptr, tune);
  cudaDeviceSynchronize();
  if (!st.ok()) {
    state.SkipWithError(st.message().c_str());
  } else if (Download(out, out_bytes) != want) {
    state.SkipWithError("variant output differs from the default's");
  } else {
    TimeLoop(state, [&] { LaunchRowCopy(p, nullptr, tune); }, MovedBytes(p, tokens));
  }
  for (void* x : {cache, cache2, k, v, slots, sbt, dbt}) cudaFree(x);
#endif
}
BENCHMARK(BM_RowCopyTuning)
    ->ArgsProduct({{0}, {0}, {0, 1, 2}})
    ->Args({4, 2, 0})->Args({4, 2, 1})->Args({4, 2, 2})
    ->Args({4, 4, 0})->Args({4, 4, 1})->Args({4, 4, 2})
    ->Args({8, 3, 0})->Args({8, 3, 1})->Args({8, 3, 2})
    ->Args({8, 4, 0})->Args({8, 4, 1})->Args({8, 4, 2})
    ->Args({16, 2, 0})->Args({16, 2, 1})->Args({16, 2, 2})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

// Args: batch, context, unroll, min CTAs per SM, pipeline (-1 default), split tokens (0 auto),
// head-major grid (-1 default), layout (0 NHD bs 16, 1 kv_in_block NHD, 2 NHD bs 2096).
// GQA 32:8, D 128, bf16, blocks in shuffled order; the output must equal the default shape's
// bit for bit when the split is the same.
void BM_DecodeTuning(benchmark::State& state) {
  if (Skip(state)) return;
#ifdef KVSIM_HAVE_CUDA
  const int64_t batch = state.range(0), ctx = state.range(1);
  const DecodeTuning tune{static_cast<int>(state.range(2)), static_cast<int>(state.range(3)),
                          static_cast<int>(state.range(4)), static_cast<int>(state.range(6))};
  LayoutShape sh;
  if (state.range(7) == 1) sh.split = KvSplit::kKvInBlock;
  if (state.range(7) == 2) sh.block_tokens = 2096;
  const int64_t per = (ctx + sh.block_tokens - 1) / sh.block_tokens;
  const LayoutCase c = MakeLayoutCase("NHD", sh, batch * per + 1);
  const int64_t qh = sh.heads * 4;
  void *cache, *q, *bt, *lens, *out, *ws;
  cudaMalloc(&cache, c.alloc_bytes);
  LaunchFillPattern(cache, c.alloc_bytes, 1);
  cudaMalloc(&q, batch * qh * sh.head_size * 2);
  LaunchFillPattern(q, batch * qh * sh.head_size * 2, 2);
  const std::vector<int32_t> hb = ShuffledBlocks(1, batch * per);
  std::vector<int32_t> hl(batch, static_cast<int32_t>(ctx));
  cudaMalloc(&bt, hb.size() * 4);
  cudaMalloc(&lens, hl.size() * 4);
  cudaMemcpy(bt, hb.data(), hb.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(lens, hl.data(), hl.size() * 4, cudaMemcpyHostToDevice);
  const int64_t out_bytes = batch * qh * sh.head_size * 4;
  cudaMalloc(&out, out_bytes);
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
  a.split_tokens = state.range(5);
  cudaMalloc(&ws, WorkspaceFloats(a) * 4);
  a.workspace = static_cast<float*>(ws);
  const DecodeAttentionParams p = MakeParams(a);
  LaunchDecodeAttention(p);
  cudaDeviceSynchronize();
  const std::vector<uint8_t> want = Download(out, out_bytes);
  cudaMemset(out, 0xFF, static_cast<size_t>(out_bytes));
  Status st = LaunchDecodeAttention(p, nullptr, tune);
  cudaDeviceSynchronize();
  if (!st.ok()) {
    state.SkipWithError(st.message().c_str());
  } else if (Download(out, out_bytes) != want) {
    state.SkipWithError("variant output differs from the default's");
  } else {
    TimeLoop(state, [&] { LaunchDecodeAttention(p, nullptr, tune); },
             DecodeKvBytes(a, batch * ctx));
  }
  for (void* x : {cache, q, bt, lens, out, ws}) cudaFree(x);
#endif
}
BENCHMARK(BM_DecodeTuning)
    ->ArgsProduct({{32}, {16384}, {0}, {0}, {-1}, {0}, {-1, 0}, {0, 1, 2}})
    ->Args({32, 16384, 8, 6, 0, 0, 0, 0})  // the round-2 shape
    ->Args({32, 16384, 8, 6, 0, 0, 1, 0})
    ->Args({32, 16384, 4, 6, 1, 0, -1, 0})
    ->Args({32, 16384, 0, 0, -1, 256, -1, 0})
    ->Args({16, 2048, 0, 0, -1, 0, -1, 0})
    ->Args({16, 2048, 0, 0, -1, 0, 0, 0})
    ->Args({16, 2048, 8, 6, 0, 0, 0, 0})
    ->Args({4, 32768, 0, 0, -1, 0, -1, 0})
    ->Args({4, 32768, 0, 0, -1, 0, 0, 0})
    ->Args({1, 1024, 0, 0, -1, 0, -1, 0})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace kvsim::kernels

BENCHMARK_MAIN();
