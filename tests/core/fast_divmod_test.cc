// FastDivmod (core/int_math.h): the kernels' division by block sizes and head counts must
// agree with `/` and `%` everywhere in its contract, n in [0, 2^31), d in [1, 2^31).
#include <catch2/catch_test_macros.hpp>

#include <cstdint>
#include <random>
#include <vector>

#include "core/int_math.h"

namespace kvsim {
namespace {

void CheckOne(const FastDivmod& f, int64_t d, int64_t n) {
  int64_t q = -1, r = -1;
  f.DivMod(n, &q, &r);
  if (q != n / d || r != n % d) {
    FAIL_CHECK("n=" << n << " d=" << d << ": got q=" << q << " r=" << r << ", want "
                    << n / d << " " << n % d);
  }
}

TEST_CASE("FastDivmod matches / and % on the edges of its range") {
  std::vector<int64_t> divisors;
  for (int64_t d = 1; d <= 4200; ++d) divisors.push_back(d);
  for (int k = 12; k <= 30; ++k) {
    const int64_t p = int64_t{1} << k;
    for (int64_t d : {p - 1, p, p + 1, 3 * p / 2}) divisors.push_back(d);
  }
  divisors.push_back((int64_t{1} << 31) - 1);
  const int64_t kMax = (int64_t{1} << 31) - 1;
  for (int64_t d : divisors) {
    const FastDivmod f(d);
    for (int64_t n : {int64_t{0}, int64_t{1}, d - 1, d, d + 1, 2 * d - 1, 2 * d, kMax, kMax - 1,
                      kMax - d, kMax / d * d, kMax / d * d - 1}) {
      if (n >= 0 && n <= kMax) CheckOne(f, d, n);
    }
  }
}

TEST_CASE("FastDivmod matches / and % on random numerators and the kernels' divisors") {
  std::mt19937_64 rng(11);
  // Block sizes, head counts, chunk counts and token products the kernels divide by.
  const int64_t ds[] = {1, 2, 3, 5, 7, 8, 16, 17, 32, 48, 64, 96, 2096, 4192, 33, 1000003};
  for (int64_t d : ds) {
    const FastDivmod f(d);
    for (int i = 0; i < 20000; ++i) {
      const int64_t n = static_cast<int64_t>(rng() % (uint64_t{1} << 31));
      CheckOne(f, d, n);
    }
    for (int64_t n = 0; n < 5000; ++n) CheckOne(f, d, n);
  }
}

TEST_CASE("FastDivmod is usable at compile time") {
  constexpr FastDivmod f(7);
  static_assert(f.Div(48) == 6);
  static_assert(FastDivmod(1).Div(123) == 123);
  CHECK(f.Div(700) == 100);
}

}  // namespace
}  // namespace kvsim
