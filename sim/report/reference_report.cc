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

std::vector<MetricValues> StageMetrics(const std::vector<RequestRecord>& records,
                                       const std::vector<double>& stage_durations_s) {
  std::vector<MetricValues> out;
  double start = 0;
  for (const double duration : stage_durations_s) {
    const double end = start + duration;
    std::vector<double> ttft, e2e;
    double outputs = 0;
    for (const RequestRecord& r : records) {
      const double t = static_cast<double>(r.arrival) * 1e-9;
      if (r.rejected || r.finish < 0 || r.first_token < 0 || t < start || t >= end) continue;
      ttft.push_back(TicksToMs(r.first_token - r.arrival));
      e2e.push_back(TicksToMs(r.finish - r.arrival));
      outputs += static_cast<double>(r.output_tokens);
    }
    MetricValues m;
    if (!ttft.empty()) {
      const Percentiles pt = ExactPercentiles(ttft), pe = ExactPercentiles(e2e);
      const double mean_out = outputs / static_cast<double>(ttft.size());
      m = {{"ttft_mean_ms", pt.mean}, {"ttft_p90_ms", pt.p90}, {"ttft_p99_ms", pt.p99},
           {"tpot_mean_ms", mean_out > 1 ? (pe.mean - pt.mean) / (mean_out - 1) : 0.0},
           {"e2e_mean_ms", pe.mean},  {"e2e_p90_ms", pe.p90},   {"e2e_p99_ms", pe.p99}};
    }
    out.push_back(std::move(m));
    start = end;
  }
  return out;
}

std::vector<MetricComparison> CompareMetrics(const MetricValues& simulated,
                                             const MetricValues& reference) {
  std::vector<MetricComparison> out;
  for (const auto& [name, measured] : reference) {
    for (const auto& [sname, value] : simulated) {
      if (sname != name) continue;
      out.push_back({name, value, measured, measured != 0 ? (value - measured) / measured : 0.0});
    }
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
