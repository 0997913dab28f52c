// cuBLASLt GEMM timings (kernels/validate/gemm_suite.h) on the device: a dense bf16 GEMM, a
// grouped expert GEMM and an fp8 GEMM (skipped, with its reason, below compute capability
// 8.9). SKIPs when the build has no CUDA or the machine has no device.
#include <catch2/catch_test_macros.hpp>

#include "kernels/device.h"
#include "kernels/validate/gemm_suite.h"

namespace kvsim::kernels {
namespace {

TEST_CASE("gpu: cuBLASLt GEMM timings of linear-layer and grouped expert shapes", "[gpu]") {
  const DeviceInfo d = QueryDevice();
  if (!d.available) SKIP(d.why);
  std::vector<GemmCase> cases = {
      {"qkv", 1, 1, 6144, 4096, 1, false, DType::kBFloat16},
      {"gate_up", 512, 512, 28672, 4096, 1, false, DType::kBFloat16},
      {"experts.down", 64, 4, 4096, 1536, 16, true, DType::kBFloat16},
      {"qkv", 8, 8, 6144, 4096, 1, false, DType::kFp8E4M3},
  };
  GemmTimingOptions o;
  o.repeats = 5;
  auto rep = RunGemmTimings(cases, o);
  INFO(rep.status().message());
  REQUIRE(rep.ok());
  CHECK(rep->rows.size() + rep->skipped.size() == cases.size());
  for (const auto& s : rep->skipped) {
    INFO(s.gemm.name << " " << DTypeName(s.gemm.dtype) << ": " << s.reason);
    CHECK(IsFp8(s.gemm.dtype));  // only fp8, and only on pre-Ada parts, may be skipped
    CHECK_FALSE(s.reason.empty());
  }
  for (const auto& r : rep->rows) {
    INFO(r.sample.variant << " " << r.sample.seconds);
    CHECK(r.sample.cls == KernelClass::kGemm);
    CHECK(r.sample.seconds > 0);
    CHECK(r.min_s <= r.sample.seconds);
    CHECK(r.sample.seconds <= r.max_s);
    // Weights were flushed from L2: nothing streams faster than the HBM peak.
    CHECK(static_cast<double>(r.sample.weight_bytes) / r.sample.seconds <
          1.05 * d.hbm_peak_bytes_per_s);
  }
}

}  // namespace
}  // namespace kvsim::kernels
