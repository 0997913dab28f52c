// Replicates: one point of an experiment run over several seeds and reported as one row.
// A single seed is one draw of the workload; a researcher who publishes "TTFT falls 3×"
// needs the spread over draws. `sweep.seeds: N` (or `--seeds N`) runs every point with seeds
// seed … seed+N−1 and CombineReplicates turns the N PointResults into one whose MetricSet
// holds, for each metric M of the kind, its mean over the seeds as M and the half-width of
// its two-sided 95 % Student-t confidence interval as M.ci95, after a `seeds` count:
//
//   mean = Σx / n,  s² = Σ(x − mean)² / (n − 1),  M.ci95 = t(0.975, n − 1) · s / √n.
//
// A flag such as `overloaded` becomes the fraction of seeds that set it. An integer metric
// that every seed agrees on stays an integer (block sizes, block counts). A point fails if
// any of its seeds fails, naming the seed.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sim/run/point.h"

namespace kvsim {

// The 0.975 quantile of Student's t with `df` ≥ 1 degrees of freedom (12.706 at df 1,
// 2.776 at df 4, → 1.960).
double StudentT975(int64_t df);

struct MeanInterval {
  double mean = 0;
  double half_width = 0;  // 0 for a single value
};
MeanInterval MeanInterval95(std::span<const double> values);

// The replicates of one point, in seed order (seeds[i] ran reps[i]); at least one.
PointResult CombineReplicates(std::vector<PointResult> reps, std::span<const int64_t> seeds);

// The suffix of an interval column: "ttft_mean_ms" → "ttft_mean_ms.ci95".
inline constexpr const char* kIntervalSuffix = ".ci95";

}  // namespace kvsim
