// The dense half of gpu-validate's timing: cuBLASLt GEMMs of a model's linear-layer shapes
// (the caller's list; `kvsim gpu-validate` takes it from sim/calibrate/gemm_shapes.h, the
// step-time model's own shapes) so that a lent GPU calibrates the cost model's mbu, mfu and
// moe_mbu too. Each GEMM is Y[M × N] = X[M × K] · W[N × K]ᵀ as a linear layer computes it:
// bf16 (or fp8 e4m3) inputs, fp32 accumulation, bf16 output; timed with CUDA events after
// warm-up, each repeat after an L2 flush so that the weights stream from HBM as in a real
// step (median of repeats). A grouped GEMM (routed experts) is one strided-batched cuBLASLt
// call over `groups` experts with their own weights and M tokens each: it measures reading
// every touched expert's weights in one launch, as a fused MoE kernel does, but not the token
// permutation around it, nor uneven expert loads (the cost model assumes the expected
// spread). fp8 runs where the device supports it (compute capability 8.9 and up); otherwise
// those cases come back as skipped, with the reason, as do shapes cuBLASLt has no algorithm
// for and shapes that do not fit in device memory.
//
// Always built: without CUDA, or without a loadable libcublasLt (kernels/cuda/gemm_timing.cu
// says where it looks), RunGemmTimings returns an error; MakeGemmSample is host code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "kernels/device.h"
#include "kernels/validate/calibrate.h"
#include "kernels/validate/gpu_suite.h"

namespace kvsim::kernels {

struct GemmCase {
  std::string name;    // qkv, o, gate_up, down, lm_head, router, experts.gate_up, ...
  int64_t tokens = 0;  // the step's tokens it stands for
  int64_t m = 0, n = 0, k = 0;
  int64_t groups = 1;
  bool grouped = false;
  DType dtype = DType::kBFloat16;  // kBFloat16 or kFp8E4M3
};

// A timing sample of class kGemm for `c` measured at `seconds` (bytes = weights + bf16
// activations in and out, the cost model's charge).
TimingSample MakeGemmSample(const GemmCase& c, double seconds);

struct GemmTimingOptions {
  int warmup = 3;
  int repeats = 9;
};

struct GemmSkip {
  GemmCase gemm;
  std::string reason;
};

struct GemmReport {
  DeviceInfo device;
  std::vector<TimingRow> rows;  // sample.cls == kGemm; gbps = bytes / median
  std::vector<GemmSkip> skipped;
};

Result<GemmReport> RunGemmTimings(const std::vector<GemmCase>& cases,
                                  const GemmTimingOptions& options);

}  // namespace kvsim::kernels
