// Calibration of the kernel-time model (core/hardware_profile.h) from measured kernels:
// weighted least squares per kernel class (Eigen), relative residuals so small and large
// kernels count alike: t = fixed + bytes / bandwidth for data movement, plus
// item_bytes / item_bandwidth for decode attention when the samples' work items differ
// enough to fit it (else, or if that coefficient comes out non-positive, the line alone). Samples
// marked held_out are kept out of the fit and used to report the model's error before and after.
// GEMM samples (kGemm, timed by gemm_suite.h) are carried here too but not fitted: the step-time
// model owns the GEMM roofline (core/cost_model.h), and `kvsim calibrate` fits its dense
// coefficients on them. Host-only, always built; also writes the profile as YAML.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/hardware_profile.h"

namespace kvsim::kernels {

enum class KernelClass : uint8_t { kDataMovement, kDecodeAttention, kGemm };

struct TimingSample {
  std::string kernel;   // "append", "gather", "convert:nhd->hnd", "decode_attention", ...
  std::string variant;  // layout / size tag
  KernelClass cls = KernelClass::kDataMovement;
  int64_t bytes = 0;    // bytes the model charges: read + written (movement), KV read (attn)
  int64_t item_bytes = 0;  // attention: KV bytes of one CTA (DecodeItemBytes); 0 = unknown
  double seconds = 0;   // measured median
  bool held_out = false;
  // kGemm: `groups` GEMMs of M × N × K (1 = one linear layer; more = a grouped expert GEMM),
  // inputs and weights in `dtype`, output bf16. `bytes` is then weights + activations.
  int64_t m = 0, n = 0, k = 0, groups = 1;
  bool grouped = false;  // routed experts
  DType dtype = DType::kBFloat16;
  int64_t tokens = 0;        // the step's tokens the shape stands for
  int64_t weight_bytes = 0;  // groups · N · K · element bytes
  double flops = 0;          // 2 · groups · M · N · K
};

struct LineFit {
  bool ok = false;
  double fixed_s = 0;
  double bytes_per_s = 0;
  double item_bytes_per_s = 0;  // 0: no critical-path term fitted
  int samples = 0;
};

LineFit FitLine(const std::vector<TimingSample>& samples, KernelClass cls);

// The kernel-time model's time of a data-movement or attention sample; 0 for a GEMM (the
// step-time model prices those).
double ModelSeconds(const HardwareProfile& hw, const TimingSample& s);

struct ModelError {
  int n = 0;
  double mean_abs = 0;  // mean |measured / modelled − 1|
  double max_abs = 0;
};
ModelError HeldOutError(const HardwareProfile& hw, const std::vector<TimingSample>& samples);

// `before` with the fitted coefficients replaced (classes without a fit keep theirs).
HardwareProfile Calibrate(const HardwareProfile& before, const std::vector<TimingSample>& samples);

// The YAML of core/hardware_profile.h, fixed formatting (same input ⇒ same bytes).
std::string ProfileToYaml(const HardwareProfile& hw);

}  // namespace kvsim::kernels
