// Writing a run's metrics: metrics.json (summary, plan facts, KV usage series), the
// per-request CSV, the sweep CSV columns, and the terminal table that compares points.
// Numbers are printed with fixed formats so the same run always gives the same bytes.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "sim/engine.h"

namespace kvsim {

using Labels = std::vector<std::pair<std::string, std::string>>;

nlohmann::ordered_json SummaryToJson(const RunSummary& s);
nlohmann::ordered_json RunToJson(const Engine& e, const Labels& labels);

// Writes DIR/metrics.json and DIR/requests.csv (creating DIR).
Status WriteRunOutputs(const Engine& e, const Labels& labels, const std::string& dir);

// Sweep CSV: the metric columns after `point`, the sweep keys and `status`.
const std::vector<std::string>& SweepMetricColumns();
std::vector<std::string> SweepMetricValues(const Engine& e, const RunSummary& s);

// A number as the sweep CSVs print it (6 significant digits), for engine and cluster rows.
std::string CsvNumber(double v);
// One CSV field, quoted when it holds a comma, quote or newline.
std::string CsvField(const std::string& s);

// The comparison table printed by `kvsim run`: one row per point.
// Why requests of a run were rejected, for the reader of the table: "" when none were,
// else "R of N requests rejected: a × <reason>; b × <reason>". A request is rejected on
// arrival when its prompt reaches max_model_len or needs more blocks than the cache has, or
// later when it cannot be scheduled even into an empty engine (a prompt above the token
// budget with chunked prefill off); the reasons are told apart from the scenario here, so
// the engine only records the fact.
std::string DescribeRejections(const Engine& e);

struct TableRow {
  std::string label;
  bool ok = true;
  std::string error;
  int64_t block_size = 0;
  RunSummary summary;
  std::string rejections;  // DescribeRejections; printed under the table
};
// A point in which no request finished shows n/a, not zeros: there was nothing to measure.
std::string FormatRunTable(const std::string& title, const std::vector<TableRow>& rows);

}  // namespace kvsim
