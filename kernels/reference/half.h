// Exact host conversions between float and the 16-bit KV formats (IEEE fp16, bf16), for
// the host references and for filling test inputs. Round-to-nearest-even on the way down;
// the way up is exact. Header-only, no CUDA.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/dtype.h"

namespace kvsim::kernels {

inline float Bf16ToFloat(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline uint16_t FloatToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

inline float Fp16ToFloat(uint16_t h) {
  const uint32_t sign = (h >> 15) & 1u;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t man = h & 0x3ffu;
  float v;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(man), -24);
  } else if (exp == 31) {
    v = man ? NAN : INFINITY;
  } else {
    v = std::ldexp(static_cast<float>(man | 0x400u), static_cast<int>(exp) - 25);
  }
  return sign ? -v : v;
}

inline uint16_t FloatToFp16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const float a = std::fabs(f);
  if (std::isnan(f)) return static_cast<uint16_t>(sign | 0x7e00u);
  if (a >= 65520.0f) return static_cast<uint16_t>(sign | 0x7c00u);
  if (a < std::ldexp(1.0f, -14)) {  // subnormal: units of 2^-24, nearest even
    const float q = a * 16777216.0f;
    const float r = std::nearbyint(q);
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(r));
  }
  int e;
  const float m = std::frexp(a, &e);  // a = m × 2^e, m in [0.5, 1)
  const float scaled = std::nearbyint(std::ldexp(m, 11));  // 11 significant bits
  uint32_t mant = static_cast<uint32_t>(scaled);
  int exp = e - 1 + 15;
  if (mant == 2048) {
    mant = 1024;
    ++exp;
  }
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  return static_cast<uint16_t>(sign | (static_cast<uint32_t>(exp) << 10) | (mant & 0x3ffu));
}

// Value of one 16-bit element of `dtype` (fp16 or bf16).
inline double HalfToDouble(uint16_t bits, DType dtype) {
  return dtype == DType::kFloat16 ? Fp16ToFloat(bits) : Bf16ToFloat(bits);
}
inline uint16_t FloatToHalf(float f, DType dtype) {
  return dtype == DType::kFloat16 ? FloatToFp16(f) : FloatToBf16(f);
}

}  // namespace kvsim::kernels
