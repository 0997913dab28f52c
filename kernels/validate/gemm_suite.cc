#include "kernels/validate/gemm_suite.h"

namespace kvsim::kernels {

TimingSample MakeGemmSample(const GemmCase& c, double seconds) {
  TimingSample s;
  s.kernel = "gemm";
  s.variant = c.name;
  s.cls = KernelClass::kGemm;
  s.m = c.m;
  s.n = c.n;
  s.k = c.k;
  s.groups = c.groups;
  s.grouped = c.grouped;
  s.dtype = c.dtype;
  s.tokens = c.tokens;
  s.weight_bytes = c.groups * c.n * c.k * ElementBytes(c.dtype);
  s.bytes = s.weight_bytes + c.groups * c.m * (c.n + c.k) * 2;
  s.flops = 2.0 * static_cast<double>(c.groups) * static_cast<double>(c.m) *
            static_cast<double>(c.n) * static_cast<double>(c.k);
  s.seconds = seconds;
  return s;
}

#ifndef KVSIM_HAVE_CUDA
Result<GemmReport> RunGemmTimings(const std::vector<GemmCase>&, const GemmTimingOptions&) {
  return Status::Error("no_cuda", "kvsim was built without CUDA");
}
#endif

}  // namespace kvsim::kernels
