// Re-layout cost probe for docs/pd.md (not built by CMake): times the P/D permute NHD
// [B][N][H][C] -> HND [B][H][N][C] in 16-byte vectors (H = 8, C = 512 B, N = 16) from 64 KiB
// to 1 GiB, back to back and with a sync per launch, plus a 1 GiB device-to-device copy.
// Rates count bytes read + written. Run on a GPU machine:
//   nvcc -O3 -arch=sm_90 docs/pd_relayout_probe.cu -o probe && ./probe
// The kernels helper's `kvsim gpu-validate --calibrate` fits the same line over its own
// conversion kernels; cluster.transfer.relayout_calibration reads that file instead.
#include <cuda_runtime.h>

#include <cstdio>

__global__ void Permute(const int4* s, int4* d, int n, int h, int v, long total) {
  const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  long r = i / v;
  const long c = i % v, head = r % h;
  r /= h;
  const long tok = r % n, blk = r / n;
  d[((blk * h + head) * n + tok) * v + c] = s[i];
}

int main() {
  const int h = 8, c = 512, n = 16, v = c / 16;
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  const size_t max_bytes = size_t{1} << 30;
  int4 *s, *d;
  cudaMalloc(&s, max_bytes);
  cudaMalloc(&d, max_bytes);
  cudaMemset(s, 1, max_bytes);
  for (long bytes = 1 << 16; bytes <= static_cast<long>(max_bytes); bytes *= 4) {
    const long total = bytes / 16;
    const int th = 256;
    const long grid = (total + th - 1) / th;
    for (int w = 0; w < 5; ++w) Permute<<<grid, th>>>(s, d, n, h, v, total);
    const int iters = bytes < (1 << 26) ? 200 : 20;
    cudaEventRecord(e0);
    for (int j = 0; j < iters; ++j) Permute<<<grid, th>>>(s, d, n, h, v, total);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    const double t = ms / 1e3 / iters;
    cudaEventRecord(e0);
    for (int j = 0; j < 20; ++j) {
      Permute<<<grid, th>>>(s, d, n, h, v, total);
      cudaDeviceSynchronize();
    }
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms_sync = 0;
    cudaEventElapsedTime(&ms_sync, e0, e1);
    std::printf("bytes %ld  b2b %.2f us  sync %.2f us  rw %.0f GB/s\n", bytes, t * 1e6,
                ms_sync * 1e3 / 20, 2.0 * bytes / t / 1e9);
  }
  cudaMemcpy(d, s, max_bytes, cudaMemcpyDeviceToDevice);
  cudaDeviceSynchronize();
  cudaEventRecord(e0);
  for (int j = 0; j < 10; ++j) cudaMemcpy(d, s, max_bytes, cudaMemcpyDeviceToDevice);
  cudaEventRecord(e1);
  cudaEventSynchronize(e1);
  float m = 0;
  cudaEventElapsedTime(&m, e0, e1);
  std::printf("d2d copy 1GiB: %.0f GB/s rw\n", 2.0 * max_bytes * 10 / (m / 1e3) / 1e9);
  return 0;
}
