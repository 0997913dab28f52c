#include "sim/report/reference_report.h"

#include <cmath>

#include <fmt/format.h>

namespace kvsim {

bool SimulatedMetric(const RunSummary& s, const std::string& metric, double* value) {
  if (metric == "ttft_mean_ms") *value = s.ttft_ms.mean;
  else if (metric == "ttft_p90_ms") *value = s.ttft_ms.p90;
  else if (metric == "ttft_p99_ms") *value = s.ttft_ms.p99;
  else if (metric == "tpot_mean_ms") *value = s.tpot_ms.mean;
  else if (metric == "e2e_mean_ms") *value = s.e2e_ms.mean;
  else if (metric == "e2e_p90_ms") *value = s.e2e_ms.p90;
  else if (metric == "e2e_p99_ms") *value = s.e2e_ms.p99;
  else if (metric == "output_tok_per_s") *value = s.output_throughput;
  else return false;
  return true;
}

std::vector<MetricComparison> CompareWithReference(
    const RunSummary& s, const std::vector<std::pair<std::string, double>>& reference) {
  std::vector<MetricComparison> out;
  for (const auto& [name, measured] : reference) {
    MetricComparison c;
    c.metric = name;
    c.measured = measured;
    if (!SimulatedMetric(s, name, &c.simulated)) continue;
    c.error = measured != 0 ? (c.simulated - measured) / measured : 0.0;
    out.push_back(c);
  }
  return out;
}

std::string FormatReferenceTable(const std::string& title,
                                 const std::vector<MetricComparison>& rows) {
  std::string out = title + "\n";
  out += fmt::format("  {:<18} {:>12} {:>12} {:>9}\n", "metric", "simulated", "measured",
                     "error");
  for (const MetricComparison& c : rows) {
    out += fmt::format("  {:<18} {:>12.2f} {:>12.2f} {:>+8.1f}%\n", c.metric, c.simulated,
                       c.measured, 100.0 * c.error);
  }
  return out;
}

}  // namespace kvsim
