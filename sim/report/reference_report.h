// Simulated against measured: the metrics of a run beside a scenario's `reference:` block
// (the measurements of the real vLLM run it reproduces), with the signed relative error of
// each, error = (simulated − measured) / measured. `kvsim run` prints the table and
// `kvsim calibrate` fits coefficients to make the errors small.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sim/metrics.h"

namespace kvsim {

struct MetricComparison {
  std::string metric;  // a ReferenceMetricNames() name
  double simulated = 0;
  double measured = 0;
  double error = 0;  // (simulated − measured) / measured; 0 when measured is 0
};

// The simulated value of a reference metric name; false for an unknown name.
bool SimulatedMetric(const RunSummary& s, const std::string& metric, double* value);

// One row per measured metric of `reference`, in its order; unknown names are skipped.
std::vector<MetricComparison> CompareWithReference(
    const RunSummary& s, const std::vector<std::pair<std::string, double>>& reference);

// The reference metrics of one load stage, from the finished requests that arrived in it
// (stage k spans [Σ durations before k, + duration_k) of arrival time). TPOT is the measured
// runs' definition: (mean E2E − mean TTFT) / (mean output tokens − 1).
using MetricValues = std::vector<std::pair<std::string, double>>;
std::vector<MetricValues> StageMetrics(const std::vector<RequestRecord>& records,
                                       const std::vector<double>& stage_durations_s);

// One row per measured metric that `simulated` also has, in the reference's order.
std::vector<MetricComparison> CompareMetrics(const MetricValues& simulated,
                                             const MetricValues& reference);

// The comparison as an aligned text table with a title line.
std::string FormatReferenceTable(const std::string& title,
                                 const std::vector<MetricComparison>& rows);

}  // namespace kvsim
