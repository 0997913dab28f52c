// RunGemmTimings (kernels/validate/gemm_suite.h) on cuBLASLt, and the fp8 fill kernel its
// inputs need. Built only with CUDA, against the toolkit's cublasLt.h.
//
// libcublasLt is loaded with dlopen when the GEMMs are first timed, not linked: it is a
// 540 MB library whose load-time relocations added ~170 ms to every start of `kvsim` (every
// subcommand, every CLI test) for a feature only gpu-validate uses. Search order: the file
// named by $KVSIM_CUBLASLT, then libcublasLt.so.<CUBLAS_VER_MAJOR> on the loader's path, then
// /usr/local/cuda/lib64 and /usr/local/cuda/lib. Not found: RunGemmTimings returns an error
// naming what was tried.
//
// Layout: cuBLAS is column-major. A row-major weight W[N][K] is a column-major K × N matrix
// (ld K) and a row-major activation X[M][K] a column-major K × M one, so the linear layer's
// Y[M][N] = X · Wᵀ is the column-major N × M product D = op(A) · op(B) with A = W transposed
// and B = X as stored: the "TN" form, the one cuBLASLt's fp8 kernels require.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/cuda/launch.h"
#include "kernels/validate/gemm_suite.h"

namespace kvsim::kernels {
namespace {

// Finite e4m3 values of magnitude in [2^-6, 2) and either sign from a hash of (index, seed):
// exponent field 1..7 never makes the NaN pattern (S.1111.111), and a varying bit pattern keeps
// the tensor cores' power draw (and so their clocks) as with real weights, unlike a constant.
__global__ void FillFp8Kernel(uint8_t* p, int64_t n, uint32_t seed) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    uint32_t h = static_cast<uint32_t>(i) * 0x9E3779B1u ^ seed * 0x85EBCA77u ^
                 static_cast<uint32_t>(i >> 32) * 0xC2B2AE3Du;
    h ^= h >> 15;
    h *= 0x2C1B3C6Du;
    h ^= h >> 12;
    const uint32_t exponent = 1 + (h >> 8) % 7;
    p[i] = static_cast<uint8_t>(((h >> 16) & 1u) << 7 | exponent << 3 | (h & 7u));
  }
}

// The cuBLASLt entry points this file calls, resolved from the dlopen-ed library.
struct LtApi {
#define KVSIM_LT_FN(name) decltype(&::name) name = nullptr;
// clang-format off
#define KVSIM_LT_FNS(X)                      \
  X(cublasLtCreate)                          \
  X(cublasLtDestroy)                         \
  X(cublasLtGetStatusName)                   \
  X(cublasLtGetStatusString)                 \
  X(cublasLtMatmulDescCreate)                \
  X(cublasLtMatmulDescDestroy)               \
  X(cublasLtMatmulDescSetAttribute)          \
  X(cublasLtMatrixLayoutCreate)              \
  X(cublasLtMatrixLayoutDestroy)             \
  X(cublasLtMatrixLayoutSetAttribute)        \
  X(cublasLtMatmulPreferenceCreate)          \
  X(cublasLtMatmulPreferenceDestroy)         \
  X(cublasLtMatmulPreferenceSetAttribute)    \
  X(cublasLtMatmulAlgoGetHeuristic)          \
  X(cublasLtMatmul)
  // clang-format on
  KVSIM_LT_FNS(KVSIM_LT_FN)
#undef KVSIM_LT_FN
};

// The loaded entry points: set once by Lt(), which RunGemmTimings calls before anything else
// in this file runs.
const LtApi* g_lt = nullptr;

// Loads the library once per process; null with *why set when it cannot.
const LtApi* Lt(std::string* why) {
  static LtApi api;
  static std::string error;
  static bool ok = false;
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string so = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
    std::vector<std::string> names;
    if (const char* env = std::getenv("KVSIM_CUBLASLT"); env && *env) names.push_back(env);
    names.push_back(so);
    names.push_back("/usr/local/cuda/lib64/" + so);
    names.push_back("/usr/local/cuda/lib/" + so);
    void* h = nullptr;
    std::string tried;
    for (const std::string& n : names) {
      h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (h) break;
      const char* e = dlerror();
      tried += (tried.empty() ? "" : "; ") + (e ? std::string(e) : n);
    }
    if (!h) {
      error = "cannot load cuBLASLt (set KVSIM_CUBLASLT to the library file): " + tried;
      return;
    }
#define KVSIM_LT_FN(name)                                            \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(h, #name));  \
  if (!api.name) {                                                   \
    error = std::string("cuBLASLt ") + so + " has no symbol " #name; \
    return;                                                          \
  }
    KVSIM_LT_FNS(KVSIM_LT_FN)
#undef KVSIM_LT_FN
    ok = true;
    g_lt = &api;
  });
  if (!ok) *why = error;
  return ok ? &api : nullptr;
}

std::string LtError(cublasStatus_t s, const char* what) {
  return std::string(what) + ": " + g_lt->cublasLtGetStatusName(s) + " (" +
         g_lt->cublasLtGetStatusString(s) + ")";
}

// The descriptors of one GEMM, destroyed on scope exit.
struct LtGemm {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~LtGemm() {
    if (pref) g_lt->cublasLtMatmulPreferenceDestroy(pref);
    if (d) g_lt->cublasLtMatrixLayoutDestroy(d);
    if (b) g_lt->cublasLtMatrixLayoutDestroy(b);
    if (a) g_lt->cublasLtMatrixLayoutDestroy(a);
    if (op) g_lt->cublasLtMatmulDescDestroy(op);
  }
};

cublasStatus_t Layout(cublasLtMatrixLayout_t* l, cudaDataType_t t, int64_t rows, int64_t cols,
                      int32_t batch) {
  cublasStatus_t s = g_lt->cublasLtMatrixLayoutCreate(l, t, static_cast<uint64_t>(rows),
                                                      static_cast<uint64_t>(cols), rows);
  if (s != CUBLAS_STATUS_SUCCESS || batch <= 1) return s;
  const int64_t stride = rows * cols;
  s = g_lt->cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                             sizeof batch);
  if (s != CUBLAS_STATUS_SUCCESS) return s;
  return g_lt->cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                &stride, sizeof stride);
}

// Bytes of W, X and Y of one case (all groups), each rounded up to 256.
struct CaseBytes {
  int64_t w = 0, x = 0, y = 0;
  int64_t total() const { return w + x + y; }
};
int64_t Round256(int64_t v) { return (v + 255) / 256 * 256; }
CaseBytes BytesOf(const GemmCase& c) {
  const int64_t eb = ElementBytes(c.dtype);
  return {Round256(c.groups * c.n * c.k * eb), Round256(c.groups * c.m * c.k * eb),
          Round256(c.groups * c.m * c.n * 2)};
}

class Runner {
 public:
  explicit Runner(const GemmTimingOptions& o) : o_(o) {}
  ~Runner() {
    if (a_) cudaEventDestroy(a_);
    if (b_) cudaEventDestroy(b_);
    for (void* p : {arena_, flush_, workspace_}) {
      if (p) cudaFree(p);
    }
    if (lt_) g_lt->cublasLtDestroy(lt_);
  }

  Status Init(const DeviceInfo& dev, const std::vector<GemmCase>& cases) {
    cublasStatus_t s = g_lt->cublasLtCreate(&lt_);
    if (s != CUBLAS_STATUS_SUCCESS)
      return Status::Error("cublas_error", LtError(s, "cublasLtCreate"));
    if (cudaEventCreate(&a_) != cudaSuccess || cudaEventCreate(&b_) != cudaSuccess) {
      return Status::Error("cuda_error", "cudaEventCreate failed");
    }
    // 32 MiB of workspace: what cuBLAS recommends for Hopper.
    if (cudaMalloc(&workspace_, kWorkspace) != cudaSuccess) {
      cudaGetLastError();
      return Status::Error("oom", "cuBLASLt workspace");
    }
    flush_bytes_ = std::max<int64_t>(2 * dev.l2_bytes, int64_t{64} << 20);
    if (cudaMalloc(&flush_, static_cast<size_t>(flush_bytes_)) != cudaSuccess) {
      cudaGetLastError();
      return Status::Error("oom", "L2 flush buffer");
    }
    // One arena for every case (see gpu_suite.cc's Arena: recycled allocations ran slower),
    // as large as the largest case that fits beside a 1 GiB margin.
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    room_ = static_cast<int64_t>(free_b) - (int64_t{1} << 30);
    int64_t want = 0;
    for (const GemmCase& c : cases) {
      const int64_t t = BytesOf(c).total();
      if (t <= room_) want = std::max(want, t);
    }
    if (want > 0) {
      if (cudaMalloc(&arena_, static_cast<size_t>(want)) != cudaSuccess) {
        cudaGetLastError();
        return Status::Error("oom", "GEMM arena of " + std::to_string(want >> 20) + " MiB");
      }
      arena_bytes_ = want;
    }
    return Status::Ok();
  }

  // Times `c`; a non-empty *skip means it could not run here (not an error of the suite).
  Status Time(const GemmCase& c, TimingRow* row, std::string* skip) {
    const CaseBytes sz = BytesOf(c);
    if (sz.total() > arena_bytes_) {
      *skip = "needs " + std::to_string(sz.total() >> 20) + " MiB of device memory, " +
              std::to_string(std::max<int64_t>(0, room_) >> 20) + " MiB available";
      return Status::Ok();
    }
    char* base = static_cast<char*>(arena_);
    void* w = base;
    void* x = base + sz.w;
    void* y = base + sz.w + sz.x;
    const bool fp8 = IsFp8(c.dtype);
    Status st = Fill(w, sz.w, fp8, 11);
    if (st.ok()) st = Fill(x, sz.x, fp8, 12);
    if (!st.ok()) return st;

    const cudaDataType_t in = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
    // Routed experts: `groups` GEMMs in one strided-batched call, each over its own expert's
    // weights (W, X and Y advance by one expert's matrix per batch entry).
    const int32_t batch = static_cast<int32_t>(c.groups);
    LtGemm g;
    cublasStatus_t s = g_lt->cublasLtMatmulDescCreate(&g.op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    if (s == CUBLAS_STATUS_SUCCESS)
      s = g_lt->cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
    if (s == CUBLAS_STATUS_SUCCESS)
      s = g_lt->cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
    if (s == CUBLAS_STATUS_SUCCESS) s = Layout(&g.a, in, c.k, c.n, batch);           // W, op T
    if (s == CUBLAS_STATUS_SUCCESS) s = Layout(&g.b, in, c.k, c.m, batch);           // X
    if (s == CUBLAS_STATUS_SUCCESS) s = Layout(&g.d, CUDA_R_16BF, c.n, c.m, batch);  // Y (= C)
    if (s == CUBLAS_STATUS_SUCCESS) s = g_lt->cublasLtMatmulPreferenceCreate(&g.pref);
    const uint64_t ws = kWorkspace;
    if (s == CUBLAS_STATUS_SUCCESS)
      s = g_lt->cublasLtMatmulPreferenceSetAttribute(
          g.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    if (s != CUBLAS_STATUS_SUCCESS) {
      return Status::Error("cublas_error", LtError(s, "cuBLASLt descriptors"));
    }
    cublasLtMatmulHeuristicResult_t heur{};
    int found = 0;
    s = g_lt->cublasLtMatmulAlgoGetHeuristic(lt_, g.op, g.a, g.b, g.d, g.d, g.pref, 1, &heur,
                                             &found);
    if (s != CUBLAS_STATUS_SUCCESS || found == 0) {
      *skip = s != CUBLAS_STATUS_SUCCESS ? LtError(s, "no cuBLASLt algorithm")
                                         : "no cuBLASLt algorithm for this shape and dtype";
      return Status::Ok();
    }
    const float alpha = 1.0f, beta = 0.0f;
    auto launch = [&]() -> Status {
      const cublasStatus_t r =
          g_lt->cublasLtMatmul(lt_, g.op, &alpha, w, g.a, x, g.b, &beta, y, g.d, y, g.d, &heur.algo,
                               workspace_, kWorkspace, nullptr);
      if (r != CUBLAS_STATUS_SUCCESS)
        return Status::Error("cublas_error", LtError(r, c.name.c_str()));
      return Status::Ok();
    };
    // The heuristic can offer an algorithm that the call then refuses (fp8 at an odd shape,
    // say): a first call that fails skips the case; a later failure is an error.
    if (Status e = launch(); !e.ok()) {
      *skip = "cuBLASLt refused the shape: " + e.message();
      return Status::Ok();
    }
    for (int i = 1; i < o_.warmup; ++i) {
      if (Status e = launch(); !e.ok()) return e;
    }
    std::vector<double> t;
    for (int r = 0; r < o_.repeats; ++r) {
      // The flush both evicts the weights from L2 and keeps the GPU busy while the next
      // GEMM is enqueued, so the events bracket the GEMM's own time, not the host's launch.
      cudaMemsetAsync(flush_, r & 0xff, static_cast<size_t>(flush_bytes_));
      cudaEventRecord(a_);
      if (Status e = launch(); !e.ok()) return e;
      cudaEventRecord(b_);
      if (cudaError_t e = cudaEventSynchronize(b_); e != cudaSuccess) {
        return Status::Error("cuda_error", c.name + ": " + cudaGetErrorString(e));
      }
      float ms = 0;
      cudaEventElapsedTime(&ms, a_, b_);
      t.push_back(ms * 1e-3);
    }
    std::sort(t.begin(), t.end());
    row->sample = MakeGemmSample(c, t[t.size() / 2]);
    row->min_s = t.front();
    row->max_s = t.back();
    row->gbps = static_cast<double>(row->sample.bytes) / row->sample.seconds / 1e9;
    return Status::Ok();
  }

 private:
  static constexpr size_t kWorkspace = size_t{32} << 20;

  Status Fill(void* p, int64_t bytes, bool fp8, uint32_t seed) {
    if (!fp8) return LaunchFillPattern(p, bytes, seed);
    FillFp8Kernel<<<1024, 256>>>(static_cast<uint8_t*>(p), bytes, seed);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
      return Status::Error("cuda_error", std::string("fp8 fill: ") + cudaGetErrorString(e));
    return Status::Ok();
  }

  const GemmTimingOptions& o_;
  cublasLtHandle_t lt_ = nullptr;
  cudaEvent_t a_ = nullptr, b_ = nullptr;
  void* workspace_ = nullptr;
  void* flush_ = nullptr;
  int64_t flush_bytes_ = 0;
  void* arena_ = nullptr;
  int64_t arena_bytes_ = 0;
  int64_t room_ = 0;
};

}  // namespace

Result<GemmReport> RunGemmTimings(const std::vector<GemmCase>& cases,
                                  const GemmTimingOptions& options) {
  GemmReport rep;
  rep.device = QueryDevice();
  if (!rep.device.available) return Status::Error("no_device", rep.device.why);
  std::string why;
  if (!Lt(&why)) return Status::Error("no_cublaslt", why);
  const bool fp8_ok =
      rep.device.cc_major > 8 || (rep.device.cc_major == 8 && rep.device.cc_minor >= 9);
  Runner runner(options);
  if (Status s = runner.Init(rep.device, cases); !s.ok()) return s;
  for (const GemmCase& c : cases) {
    if (IsFp8(c.dtype) && !fp8_ok) {
      rep.skipped.push_back(
          {c, "fp8 GEMMs need compute capability 8.9 or newer; this device is sm_" +
                  std::to_string(rep.device.cc_major) + std::to_string(rep.device.cc_minor)});
      continue;
    }
    if (c.dtype != DType::kBFloat16 && c.dtype != DType::kFp8E4M3) {
      rep.skipped.push_back({c, std::string("dtype ") + std::string(DTypeName(c.dtype)) +
                                    " is not timed (bf16 and fp8_e4m3 are)"});
      continue;
    }
    TimingRow row;
    std::string skip;
    if (Status s = runner.Time(c, &row, &skip); !s.ok()) return s;
    if (!skip.empty()) {
      rep.skipped.push_back({c, skip});
    } else {
      rep.rows.push_back(row);
    }
  }
  cudaDeviceSynchronize();
  return rep;
}

}  // namespace kvsim::kernels
