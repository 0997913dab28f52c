// SweepTable: a sweep CSV (one row per sweep point: the swept key columns, then metric
// columns) read for plotting, and the series a chart draws from it: one metric against one
// key, one line per value of another key. Rows that agree on both keys but differ in others
// are averaged, and the series says how many rows each point stands for. A CSV of
// replicates gives each point its interval, and the `overloaded` column flags points whose
// queue grew through the run (docs/columns.md).
//
// Key columns are recognised by their names being scenario key paths ("cache.block_size");
// the user can still plot against any column. No ImGui here, so it is unit-tested directly.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace kvsim::viz {

struct SweepTable {
  std::string source;
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;  // every row has columns.size() cells
  std::vector<bool> is_key;                    // a swept key path (has a '.')
  std::vector<bool> numeric;                   // every non-empty cell parses as a number

  int Find(std::string_view column) const;
  std::vector<int> KeyColumns() const;
  std::vector<int> MetricColumns() const;  // numeric, not keys
};

// RFC 4180-style CSV: quoted fields, "" escapes, CRLF or LF. Errors name the line.
Result<SweepTable> ParseSweepCsv(std::string_view text, const std::string& source);
Result<SweepTable> LoadSweepCsv(const std::string& path);

struct SeriesPoint {
  double x = 0;
  double y = 0;
  int rows = 1;  // rows averaged into this point
  // The 95 % interval half-width of a point of replicates (its METRIC.ci95 column; 0 when
  // there is none or several rows were averaged).
  double ci = 0;
  // Some row of this point is flagged `overloaded` (the queue grew: TTFT measures the backlog).
  bool overloaded = false;
};

struct Series {
  std::string label;  // "cache.attn_pack_size = 4" (or the metric's name with no series key)
  std::vector<SeriesPoint> points;  // sorted by x
};

struct ChartData {
  std::vector<Series> series;
  std::vector<std::string> x_labels;  // non-numeric x: the category names, x = 0, 1, ...
  int skipped_rows = 0;               // rows whose metric is empty or not a number
};

// `series_col` < 0: one line. Series (and text x categories) are ordered by value: numbers
// and byte sizes ("16GiB" < "110GiB" < "1TiB") by size, anything else as text.
ChartData BuildChart(const SweepTable& t, int x_col, int series_col, int metric_col);

// Round tick values covering [lo, hi] (at most about `max_ticks`).
std::vector<double> NiceTicks(double lo, double hi, int max_ticks);
// "1.5k", "0.25", "4096"
std::string FormatTick(double v);

}  // namespace kvsim::viz
