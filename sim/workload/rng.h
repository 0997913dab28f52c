// Rng: the simulator's one source of randomness. SplitMix64-seeded xoshiro256** with its own
// uniform, exponential, normal, gamma, lognormal and Zipf draws, written out here instead of
// using <random>'s distributions, whose results differ between standard libraries: the same
// scenario and seed must give byte-identical outputs everywhere. Each consumer (workload,
// engine) derives its own stream with Fork(tag), so adding draws in one place never shifts
// another's sequence.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

namespace kvsim {

inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class Rng {
 public:
  // The generator's whole state: a stream can be saved and replayed from here (a lazily built
  // prompt redraws its tokens from the state its creation started at).
  using State = std::array<uint64_t, 4>;

  explicit Rng(uint64_t seed) {
    uint64_t x = seed;
    for (auto& w : s_) {
      x = SplitMix64(x);
      w = x;
    }
  }
  static Rng FromState(const State& state) {
    Rng r(0);
    r.s_ = state;
    return r;
  }
  const State& state() const { return s_; }
  // Advances the stream by n draws (what n calls of Next() would do, without their values).
  void Discard(int64_t n) {
    for (int64_t i = 0; i < n; ++i) Next();
  }

  // An independent stream for a named purpose.
  Rng Fork(uint64_t tag) const { return Rng(SplitMix64(s_[0] ^ SplitMix64(tag))); }

  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1).
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n).
  uint64_t Below(uint64_t n) { return n == 0 ? 0 : Next() % n; }
  bool Bernoulli(double p) { return Uniform() < p; }
  double Exponential(double mean) { return -mean * std::log1p(-Uniform()); }
  double Normal() {
    // Box–Muller, one value per call (the pair's second half is dropped for simplicity).
    const double u1 = 1.0 - Uniform();
    const double u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * 3.14159265358979323846 * u2);
  }
  // Gamma(shape k, scale θ) by Marsaglia–Tsang.
  double Gamma(double k, double theta) {
    if (k < 1.0) return Gamma(k + 1.0, theta) * std::pow(Uniform() + 1e-300, 1.0 / k);
    const double d = k - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
    while (true) {
      double x, v;
      do {
        x = Normal();
        v = 1.0 + c * x;
      } while (v <= 0);
      v = v * v * v;
      const double u = Uniform();
      if (u < 1.0 - 0.0331 * x * x * x * x) return d * v * theta;
      if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v * theta;
    }
  }
  // Lognormal with the given mean and coefficient of variation.
  double LogNormal(double mean, double cv) {
    const double s2 = std::log1p(cv * cv);
    const double mu = std::log(mean) - 0.5 * s2;
    return std::exp(mu + std::sqrt(s2) * Normal());
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  State s_;
};

// Zipf(s) over [0, n) by inverse CDF on a precomputed table (s = 0: uniform).
class ZipfTable {
 public:
  ZipfTable(int64_t n, double s) : cdf_(static_cast<size_t>(n)) {
    double acc = 0;
    for (int64_t i = 0; i < n; ++i) {
      acc += 1.0 / std::pow(static_cast<double>(i + 1), s);
      cdf_[static_cast<size_t>(i)] = acc;
    }
    for (double& c : cdf_) c /= acc;
  }
  int64_t Draw(Rng& rng) const {
    const double u = rng.Uniform();
    size_t lo = 0, hi = cdf_.size() - 1;
    while (lo < hi) {
      const size_t mid = (lo + hi) / 2;
      if (cdf_[mid] > u) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    return static_cast<int64_t>(lo);
  }

 private:
  std::vector<double> cdf_;
};

}  // namespace kvsim
