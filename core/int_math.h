// Small integer helpers used across core (ceil division, rounding, lcm, division by a
// run-time constant). Header-only and usable from CUDA code.
#pragma once

#include <cstdint>

#include "core/host_device.h"

namespace kvsim {

KVSIM_HOST_DEVICE constexpr int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
KVSIM_HOST_DEVICE constexpr int64_t RoundUp(int64_t a, int64_t m) { return CeilDiv(a, m) * m; }
KVSIM_HOST_DEVICE constexpr int64_t RoundDown(int64_t a, int64_t m) { return (a / m) * m; }
KVSIM_HOST_DEVICE constexpr int64_t Gcd(int64_t a, int64_t b) {
  while (b != 0) {
    const int64_t t = a % b;
    a = b;
    b = t;
  }
  return a < 0 ? -a : a;
}
KVSIM_HOST_DEVICE constexpr int64_t Lcm(int64_t a, int64_t b) {
  return (a == 0 || b == 0) ? 0 : a / Gcd(a, b) * b;
}

// Quotient and remainder by a divisor fixed at launch, as a multiply-high and a shift
// (round-up reciprocal, Granlund & Montgomery 1994): kernels divide token and row indices by
// block sizes and head counts on every address, and a 64-bit `/` there is a ~70-instruction
// subroutine. Exact for numerators in [0, 2^31) and divisors in [1, 2^31); callers check
// their index ranges (CanImplement) before relying on it.
struct FastDivmod {
  uint32_t divisor = 1;
  uint32_t multiplier = 0;  // ceil(2^(31 + ceil(log2 d)) / d), < 2^32; unused for d = 1
  uint32_t shift = 0;       // ceil(log2 d) - 1

  constexpr FastDivmod() = default;
  constexpr explicit FastDivmod(int64_t d) : divisor(static_cast<uint32_t>(d)) {
    if (divisor <= 1) return;
    uint32_t l = 0;
    while ((uint64_t{1} << l) < divisor) ++l;
    multiplier = static_cast<uint32_t>(((uint64_t{1} << (31 + l)) + divisor - 1) / divisor);
    shift = l - 1;
  }

  KVSIM_HOST_DEVICE constexpr uint32_t Div(uint32_t n) const {
    if (divisor == 1) return n;
#if defined(__CUDA_ARCH__)
    return __umulhi(n, multiplier) >> shift;
#else
    return static_cast<uint32_t>((uint64_t{n} * multiplier) >> 32) >> shift;
#endif
  }
  // q = n / d and r = n % d for n in [0, 2^31).
  KVSIM_HOST_DEVICE constexpr void DivMod(int64_t n, int64_t* q, int64_t* r) const {
    const uint32_t qq = Div(static_cast<uint32_t>(n));
    *q = qq;
    *r = n - static_cast<int64_t>(qq) * divisor;
  }
};

}  // namespace kvsim
