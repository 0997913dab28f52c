#include "sim/run/metric_set.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "sim/csv.h"

namespace kvsim {

const Metric* MetricSet::Find(std::string_view name) const {
  for (const Metric& m : items_) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

double MetricSet::Number(std::string_view name, double fallback) const {
  const Metric* m = Find(name);
  return m ? m->number() : fallback;
}

std::vector<MetricInfo> MetricSet::Infos() const {
  std::vector<MetricInfo> out;
  out.reserve(items_.size());
  for (const Metric& m : items_) out.push_back({m.name, m.unit});
  return out;
}

std::string CsvValue(const Metric& m) {
  return m.integer() ? std::to_string(std::get<int64_t>(m.value))
                     : CsvNumber(std::get<double>(m.value));
}

std::string MetricSetJson(const MetricSet& set) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const Metric& m : set.items()) {
    if (m.integer()) {
      j[m.name] = std::get<int64_t>(m.value);
    } else {
      j[m.name] = std::get<double>(m.value);
    }
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

// A cell's width on a terminal: its UTF-8 code points ("±" is two bytes, one column), as
// fmt counts them when it pads.
size_t CodePoints(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

}  // namespace

std::string FormatTable(const TableLayout& layout, const std::vector<TableRow>& rows) {
  size_t w = 5;
  for (const TableRow& r : rows) w = std::max(w, r.label.size());
  const std::string indent(static_cast<size_t>(layout.indent), ' ');
  const std::string gap(static_cast<size_t>(layout.gap), ' ');
  // The cells first: a metric with an interval (replicates) shows "mean ±half", and its
  // column widens to fit; otherwise a column is exactly as wide as its layout says.
  const size_t ncol = layout.columns.size();
  std::vector<std::vector<std::string>> cells(rows.size(), std::vector<std::string>(ncol));
  std::vector<size_t> widths(ncol);
  for (size_t j = 0; j < ncol; ++j) {
    const TableColumn& c = layout.columns[j];
    widths[j] = static_cast<size_t>(c.width) + c.suffix.size();
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    const TableRow& r = rows[i];
    if (r.metrics == nullptr) continue;
    for (size_t j = 0; j < ncol; ++j) {
      const TableColumn& c = layout.columns[j];
      const Metric* m = r.metrics->Find(c.metric);
      const Metric* ci = r.metrics->Find(c.metric + ".ci95");
      std::string& cell = cells[i][j];
      if (m == nullptr || (!r.measured && !c.always)) {
        cell = fmt::format("{:>{}}", "n/a", static_cast<size_t>(c.width) + c.suffix.size());
      } else if (ci != nullptr && ci->number() > 0) {
        const int p = m->integer() && c.scale == 1 ? 0 : c.precision;
        cell = fmt::format("{:>{}.{}f} ±{:.{}f}", m->number() * c.scale, c.width, p,
                           ci->number() * c.scale, p) +
               c.suffix;
        widths[j] = std::max(widths[j], CodePoints(cell));
      } else if (m->integer() && c.scale == 1) {
        cell = fmt::format("{:>{}}", std::get<int64_t>(m->value), c.width) + c.suffix;
      } else {
        cell = fmt::format("{:>{}.{}f}", m->number() * c.scale, c.width, c.precision) + c.suffix;
      }
    }
  }
  std::string out = indent + fmt::format("{:<{}}", "point", w);
  for (size_t j = 0; j < ncol; ++j) {
    out += gap + fmt::format("{:>{}}", layout.columns[j].header, widths[j]);
  }
  out += "\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const TableRow& r = rows[i];
    out += indent + fmt::format("{:<{}}", r.label, w);
    if (r.metrics == nullptr) {
      out += gap + "error: " + r.error + "\n";
      continue;
    }
    for (size_t j = 0; j < ncol; ++j) {
      const std::string& cell = cells[i][j];
      // Only a widened column pads (a plain cell that overflows its width stays as it was).
      const size_t base = static_cast<size_t>(layout.columns[j].width) +
                          layout.columns[j].suffix.size();
      out += gap + (widths[j] > base ? fmt::format("{:>{}}", cell, widths[j]) : cell);
    }
    out += "\n";
  }
  return out;
}

}  // namespace kvsim
