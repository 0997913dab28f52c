// Small integer helpers used across core (ceil division, rounding, lcm). Header-only and
// usable from CUDA code.
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

}  // namespace kvsim
