// MetricSet: what one simulated point reports, whatever simulated it (a single engine or a
// P/D cluster): an ordered list of metrics, each a name (the sweep CSV column and JSON key,
// docs/columns.md), a unit and a value, an integer count or a real number. Every output of a
// point is one of three formatters over it:
//   CsvValue        a CSV field (integers exact, reals with 6 significant digits);
//   MetricSetJson   a JSON object, metrics in order;
//   FormatTable     the aligned text table `kvsim run` prints, one row per point, laid out
//                   by a TableLayout (which metrics, headers, widths, decimals, scale).
// A simulation kind declares its metrics once (MetricInfo list, sim/run/simulation.h) and
// fills a MetricSet in that order after each run.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

namespace kvsim {

struct MetricInfo {
  std::string name;  // "ttft_mean_ms"
  std::string unit;  // "ms", "fraction", "tokens/s", "requests", ...
};

struct Metric {
  std::string name;
  std::string unit;
  std::variant<int64_t, double> value;

  bool integer() const { return std::holds_alternative<int64_t>(value); }
  double number() const {
    return integer() ? static_cast<double>(std::get<int64_t>(value)) : std::get<double>(value);
  }
};

class MetricSet {
 public:
  // Integral values are kept exact; anything else is a real number.
  template <class T>
  void Add(std::string name, std::string unit, T value) {
    if constexpr (std::is_integral_v<T>) {
      items_.push_back({std::move(name), std::move(unit), static_cast<int64_t>(value)});
    } else {
      items_.push_back({std::move(name), std::move(unit), static_cast<double>(value)});
    }
  }
  // The metric called `name`, or null.
  const Metric* Find(std::string_view name) const;
  // Its value as a real number, `fallback` when absent.
  double Number(std::string_view name, double fallback = 0) const;
  const std::vector<Metric>& items() const { return items_; }
  bool empty() const { return items_.empty(); }
  // Names and units, in order.
  std::vector<MetricInfo> Infos() const;

 private:
  std::vector<Metric> items_;
};

// The metric as a CSV field: integers in decimal, reals with 6 significant digits.
std::string CsvValue(const Metric& m);
// {"name": value, ...} in order (compact JSON text).
std::string MetricSetJson(const MetricSet& set);

// One column of a text table: the metric `metric` under `header`, right-aligned in `width`
// characters followed by `suffix`. Reals show value × scale with `precision` decimals.
struct TableColumn {
  std::string header;
  std::string metric;
  int width = 9;
  int precision = 1;
  double scale = 1;
  std::string suffix;
  bool always = false;  // shown even in a row that measured nothing (counts, block sizes)
};

struct TableLayout {
  int indent = 2;  // spaces before every line
  int gap = 2;     // spaces between columns
  std::vector<TableColumn> columns;
};

struct TableRow {
  std::string label;
  const MetricSet* metrics = nullptr;  // null: the point failed, `error` says why
  std::string error;
  bool measured = true;  // false: nothing finished; columns that are not `always` show n/a
};

// A header line, then one line per row; the label column is as wide as the longest label
// (at least 5, "point").
std::string FormatTable(const TableLayout& layout, const std::vector<TableRow>& rows);

}  // namespace kvsim
