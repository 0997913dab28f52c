// Calibration fit, held-out error and the profile YAML, GEMM samples, and the half-precision
// conversions used by the references.
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "kernels/reference/half.h"
#include "kernels/validate/calibrate.h"
#include "kernels/validate/gemm_suite.h"

namespace kvsim::kernels {
namespace {

TEST_CASE("The fit recovers a known line and predicts held-out kernels") {
  HardwareProfile truth;
  truth.move_fixed_s = 3e-6;
  truth.move_bytes_per_s = 2.8e12;
  truth.attn_fixed_s = 12e-6;
  truth.attn_bytes_per_s = 2.4e12;
  std::vector<TimingSample> s;
  for (int64_t mb : {1, 4, 16, 64, 256, 1024}) {
    TimingSample a;
    a.kernel = "append";
    a.bytes = mb << 20;
    a.seconds = truth.DataMovementSeconds(a.bytes);
    a.held_out = mb == 16;
    s.push_back(a);
    TimingSample b = a;
    b.kernel = "decode_attention";
    b.cls = KernelClass::kDecodeAttention;
    b.seconds = truth.DecodeAttentionSeconds(b.bytes);
    b.held_out = mb == 64;
    s.push_back(b);
  }
  const LineFit f = FitLine(s, KernelClass::kDataMovement);
  REQUIRE(f.ok);
  CHECK(f.samples == 5);
  CHECK(f.fixed_s == Catch::Approx(3e-6).epsilon(1e-6));
  CHECK(f.bytes_per_s == Catch::Approx(2.8e12).epsilon(1e-6));
  HardwareProfile before;  // datasheet defaults: wrong on purpose
  before.move_bytes_per_s = 1.0e12;
  const HardwareProfile after = Calibrate(before, s);
  CHECK(after.attn_bytes_per_s == Catch::Approx(2.4e12).epsilon(1e-6));
  CHECK(HeldOutError(before, s).max_abs > 0.5);
  CHECK(HeldOutError(after, s).max_abs < 1e-6);
  CHECK(HeldOutError(after, s).n == 2);
}

TEST_CASE("Attention's critical-path term is fitted when work items differ, and held out") {
  HardwareProfile truth;
  truth.attn_fixed_s = 6e-6;
  truth.attn_bytes_per_s = 2.5e12;
  truth.attn_item_bytes_per_s = 3.0e9;
  std::vector<TimingSample> s;
  const int64_t items[] = {32 << 10, 128 << 10, 256 << 10, 128 << 10, 256 << 10, 256 << 10};
  const int64_t mib[] = {4, 128, 512, 128, 2048, 512};
  for (int i = 0; i < 6; ++i) {
    TimingSample a;
    a.kernel = "decode_attention";
    a.cls = KernelClass::kDecodeAttention;
    a.bytes = mib[i] << 20;
    a.item_bytes = items[i];
    a.seconds = truth.DecodeAttentionSeconds(a.bytes, a.item_bytes);
    a.held_out = i >= 3;
    s.push_back(a);
  }
  const LineFit f = FitLine(s, KernelClass::kDecodeAttention);
  REQUIRE(f.ok);
  CHECK(f.item_bytes_per_s == Catch::Approx(3.0e9).epsilon(1e-6));
  CHECK(f.bytes_per_s == Catch::Approx(2.5e12).epsilon(1e-6));
  const HardwareProfile after = Calibrate(HardwareProfile{}, s);
  CHECK(HeldOutError(after, s).max_abs < 1e-6);
  // The line alone (the old model) misses the mid-size call that the tail term explains.
  HardwareProfile line = after;
  line.attn_item_bytes_per_s = 0;
  CHECK(HeldOutError(line, s).max_abs > 0.05);
  // All items the same size: the term is not identifiable and the fit falls back to a line.
  for (auto& x : s) x.item_bytes = 256 << 10;
  CHECK(FitLine(s, KernelClass::kDecodeAttention).item_bytes_per_s == 0);
  CHECK(FitLine(s, KernelClass::kDecodeAttention).ok);
}

TEST_CASE("Too few samples leave the coefficients alone") {
  std::vector<TimingSample> s(1);
  s[0].bytes = 100;
  s[0].seconds = 1e-6;
  HardwareProfile before;
  const HardwareProfile after = Calibrate(before, s);
  CHECK(after.move_bytes_per_s == before.move_bytes_per_s);
  CHECK_FALSE(FitLine(s, KernelClass::kDataMovement).ok);
}

TEST_CASE("Profile YAML names every key and is deterministic") {
  HardwareProfile hw;
  hw.name = "NVIDIA H100 80GB HBM3";
  const std::string y = ProfileToYaml(hw);
  CHECK(y == ProfileToYaml(hw));
  for (const char* key : {"hardware:", "name:", "hbm_peak_bytes_per_s:", "copy_bytes_per_s:",
                          "move_fixed_s:", "move_bytes_per_s:", "attn_fixed_s:",
                          "attn_bytes_per_s:", "attn_item_bytes_per_s:", "source:"})
    CHECK_THAT(y, Catch::Matchers::ContainsSubstring(key));
}

TEST_CASE("fp16 and bf16 conversions are exact where they must be") {
  CHECK(FloatToFp16(1.0f) == 0x3C00);
  CHECK(FloatToFp16(-2.0f) == 0xC000);
  CHECK(FloatToFp16(65504.0f) == 0x7BFF);
  CHECK(FloatToFp16(1e6f) == 0x7C00);
  CHECK(FloatToFp16(std::ldexp(1.0f, -24)) == 0x0001);
  CHECK(FloatToFp16(1.0f + std::ldexp(1.0f, -11)) == 0x3C00);  // tie → even
  CHECK(FloatToFp16(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3C02);
  CHECK(FloatToBf16(1.0f) == 0x3F80);
  CHECK(FloatToBf16(-0.5f) == 0xBF00);
  for (uint32_t h = 0; h < 0x7C00; h += 7) CHECK(FloatToFp16(Fp16ToFloat(h)) == h);
  for (uint32_t h = 0; h < 0x7F80; h += 13) CHECK(FloatToBf16(Bf16ToFloat(h)) == h);
}

}  // namespace
}  // namespace kvsim::kernels

namespace kvsim::kernels {
namespace {

TEST_CASE("GEMM samples carry their shape, bytes and FLOPs; the kernel-time fit ignores them") {
  const GemmCase c{"experts.gate_up", 512, 32, 2048, 1024, 16, true, DType::kFp8E4M3};
  const TimingSample s = MakeGemmSample(c, 2e-5);
  CHECK(s.cls == KernelClass::kGemm);
  CHECK(s.variant == "experts.gate_up");
  CHECK(s.weight_bytes == 16 * 2048 * 1024);                         // fp8: one byte per weight
  CHECK(s.bytes == 16 * 2048 * 1024 + 16 * 32 * (2048 + 1024) * 2);  // + bf16 activations
  CHECK(s.flops == 2.0 * 16 * 32 * 2048 * 1024);
  CHECK(s.groups == 16);
  CHECK(s.grouped);
  HardwareProfile before;
  std::vector<TimingSample> samples(5, s);
  for (auto& x : samples) x.held_out = true;
  CHECK(ModelSeconds(before, s) == 0);
  CHECK(HeldOutError(before, samples).n == 0);
  const HardwareProfile after = Calibrate(before, samples);
  CHECK(after.move_bytes_per_s == before.move_bytes_per_s);
  CHECK(after.attn_bytes_per_s == before.attn_bytes_per_s);
}

}  // namespace
}  // namespace kvsim::kernels
