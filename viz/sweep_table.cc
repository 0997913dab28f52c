#include "viz/sweep_table.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

namespace kvsim::viz {
namespace {

bool ParseDouble(const std::string& s, double* out) {
  if (s.empty()) return false;
  const char* b = s.data();
  const char* e = s.data() + s.size();
  while (b < e && *b == ' ') ++b;
  if (b < e && *b == '+') ++b;
  auto r = std::from_chars(b, e, *out);
  return r.ec == std::errc() && r.ptr == e;
}

// Numbers, and byte sizes as scenarios write them ("16GiB", "512MiB", "1TiB", "4k"), so
// that such columns sort by size rather than as text.
bool ParseQuantity(const std::string& s, double* out) {
  if (ParseDouble(s, out)) return true;
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  if (i == 0) return false;
  double v;
  if (!ParseDouble(s.substr(0, i), &v)) return false;
  std::string unit = s.substr(i);
  if (!unit.empty() && unit.back() == 'B') unit.pop_back();
  if (!unit.empty() && unit.back() == 'i') unit.pop_back();
  static const std::string kUnits = "KMGTP";
  if (unit.empty()) {
    *out = v;
    return true;
  }
  if (unit.size() != 1) return false;
  const size_t u =
      kUnits.find(static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0]))));
  if (u == std::string::npos) return false;
  *out = v * std::pow(1024.0, static_cast<double>(u + 1));
  return true;
}

// Orders labels by quantity when every one parses as one, else as text.
void SortLabels(std::vector<std::string>& v) {
  bool all = true;
  double d;
  for (const auto& s : v) all = all && ParseQuantity(s, &d);
  std::stable_sort(v.begin(), v.end(), [&](const std::string& a, const std::string& b) {
    double da = 0, db = 0;
    if (all && ParseQuantity(a, &da) && ParseQuantity(b, &db)) return da < db;
    return a < b;
  });
}

}  // namespace

int SweepTable::Find(std::string_view column) const {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i] == column) return static_cast<int>(i);
  }
  return -1;
}

std::vector<int> SweepTable::KeyColumns() const {
  std::vector<int> out;
  for (size_t i = 0; i < columns.size(); ++i) {
    if (is_key[i]) out.push_back(static_cast<int>(i));
  }
  return out;
}

std::vector<int> SweepTable::MetricColumns() const {
  std::vector<int> out;
  for (size_t i = 0; i < columns.size(); ++i) {
    // The sweep's identity columns are bookkeeping, not metrics to plot.
    if (columns[i] == "sweep_id" || columns[i] == "sweep_points") continue;
    if (!is_key[i] && numeric[i]) out.push_back(static_cast<int>(i));
  }
  return out;
}

Result<SweepTable> ParseSweepCsv(std::string_view text, const std::string& source) {
  std::vector<std::vector<std::string>> records;
  std::vector<int> record_line;
  std::vector<std::string> rec;
  std::string field;
  bool quoted = false, field_started = false;
  int line = 1, rec_line = 1;
  auto end_field = [&] {
    rec.push_back(field);
    field.clear();
    field_started = false;
  };
  auto end_record = [&] {
    end_field();
    if (!(rec.size() == 1 && rec[0].empty())) {
      records.push_back(rec);
      record_line.push_back(rec_line);
    }
    rec.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"' && !field_started) {
      quoted = true;
      field_started = true;
    } else if (c == ',') {
      end_field();
    } else if (c == '\r') {
      // CRLF: the LF ends the record.
    } else if (c == '\n') {
      end_record();
      ++line;
      rec_line = line;
    } else {
      field += c;
      field_started = true;
    }
  }
  if (quoted) {
    return Status::Error(
        "bad_csv", source + ":" + std::to_string(rec_line) + ": a quoted field is never closed");
  }
  if (!field.empty() || !rec.empty()) end_record();
  if (records.empty()) return Status::Error("bad_csv", source + ": empty file (no header row)");

  SweepTable t;
  t.source = source;
  t.columns = records[0];
  for (size_t r = 1; r < records.size(); ++r) {
    if (records[r].size() != t.columns.size()) {
      return Status::Error("bad_csv", source + ":" + std::to_string(record_line[r]) + ": " +
                                          std::to_string(records[r].size()) +
                                          " fields, the "
                                          "header has " +
                                          std::to_string(t.columns.size()));
    }
    t.rows.push_back(records[r]);
  }
  const size_t n = t.columns.size();
  t.is_key.assign(n, false);
  t.numeric.assign(n, true);
  for (size_t c = 0; c < n; ++c) {
    // A key path has a '.'; a metric's interval (".ci95") and a key's byte value (".value")
    // are numbers about other columns, not keys.
    const std::string& name = t.columns[c];
    auto ends = [&](std::string_view suffix) {
      return name.size() > suffix.size() &&
             name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    t.is_key[c] = name.find('.') != std::string::npos && !ends(".ci95") && !ends(".value");
    bool any = false;
    for (const auto& row : t.rows) {
      if (row[c].empty()) continue;
      double d;
      any = true;
      if (!ParseDouble(row[c], &d)) {
        t.numeric[c] = false;
        break;
      }
    }
    if (!any) t.numeric[c] = false;
  }
  return t;
}

Result<SweepTable> LoadSweepCsv(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::Error("missing_file", path + ": cannot open the sweep CSV");
  std::stringstream ss;
  ss << f.rdbuf();
  return ParseSweepCsv(ss.str(), path);
}

ChartData BuildChart(const SweepTable& t, int x_col, int series_col, int metric_col) {
  ChartData out;
  const int ncols = static_cast<int>(t.columns.size());
  if (x_col < 0 || x_col >= ncols || metric_col < 0 || metric_col >= ncols) return out;
  if (series_col >= ncols) series_col = -1;
  const bool x_numeric = t.numeric[static_cast<size_t>(x_col)];
  std::map<std::string, int> x_index;  // non-numeric x: categories in quantity/text order
  if (!x_numeric) {
    for (const auto& row : t.rows) {
      const std::string& xs = row[static_cast<size_t>(x_col)];
      if (std::find(out.x_labels.begin(), out.x_labels.end(), xs) == out.x_labels.end()) {
        out.x_labels.push_back(xs);
      }
    }
    SortLabels(out.x_labels);
    for (size_t i = 0; i < out.x_labels.size(); ++i) x_index[out.x_labels[i]] = static_cast<int>(i);
  }
  struct Acc {
    double sum = 0;
    double ci = 0;
    int n = 0;
    bool overloaded = false;
  };
  // The metric's interval column (replicates) and the overload flag, when the CSV has them.
  const int ci_col = t.Find(t.columns[static_cast<size_t>(metric_col)] + ".ci95");
  const int over_col = t.Find("overloaded");
  // series value → (x → accumulated y)
  std::map<std::string, std::map<double, Acc>> acc;
  std::vector<std::string> series_order;
  for (const auto& row : t.rows) {
    double y;
    if (!ParseDouble(row[static_cast<size_t>(metric_col)], &y) || !std::isfinite(y)) {
      ++out.skipped_rows;
      continue;
    }
    double x;
    const std::string& xs = row[static_cast<size_t>(x_col)];
    if (x_numeric) {
      if (!ParseDouble(xs, &x)) {
        ++out.skipped_rows;
        continue;
      }
    } else {
      x = x_index.at(xs);
    }
    const std::string key = series_col >= 0 ? row[static_cast<size_t>(series_col)] : "";
    if (!acc.count(key)) series_order.push_back(key);
    Acc& a = acc[key][x];
    a.sum += y;
    ++a.n;
    double v;
    if (ci_col >= 0 && ParseDouble(row[static_cast<size_t>(ci_col)], &v)) a.ci = v;
    if (over_col >= 0 && ParseDouble(row[static_cast<size_t>(over_col)], &v) && v > 0)
      a.overloaded = true;
  }
  SortLabels(series_order);
  for (const auto& key : series_order) {
    Series s;
    s.label = series_col >= 0 ? t.columns[static_cast<size_t>(series_col)] + " = " + key
                              : t.columns[static_cast<size_t>(metric_col)];
    for (const auto& [x, a] : acc[key]) {
      // An average of several rows has no interval of its own.
      s.points.push_back({x, a.sum / a.n, a.n, a.n == 1 ? a.ci : 0.0, a.overloaded});
    }
    out.series.push_back(std::move(s));
  }
  return out;
}

std::vector<double> NiceTicks(double lo, double hi, int max_ticks) {
  std::vector<double> out;
  if (!std::isfinite(lo) || !std::isfinite(hi) || max_ticks < 1) return out;
  if (hi < lo) std::swap(lo, hi);
  if (hi == lo) {
    out.push_back(lo);
    return out;
  }
  const double raw = (hi - lo) / max_ticks;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  const double first = std::ceil(lo / step - 1e-9) * step;
  for (double v = first; v <= hi + step * 1e-9; v += step) {
    out.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
  }
  return out;
}

std::string FormatTick(double v) {
  char b[32];
  const double a = std::abs(v);
  if (a >= 1e9) {
    std::snprintf(b, sizeof b, "%gG", v / 1e9);
  } else if (a >= 1e6) {
    std::snprintf(b, sizeof b, "%gM", v / 1e6);
  } else if (a >= 1e4) {
    std::snprintf(b, sizeof b, "%gk", v / 1e3);
  } else {
    std::snprintf(b, sizeof b, "%g", v);
  }
  return b;
}

}  // namespace kvsim::viz
