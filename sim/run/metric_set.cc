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

std::string FormatTable(const TableLayout& layout, const std::vector<TableRow>& rows) {
  size_t w = 5;
  for (const TableRow& r : rows) w = std::max(w, r.label.size());
  const std::string indent(static_cast<size_t>(layout.indent), ' ');
  const std::string gap(static_cast<size_t>(layout.gap), ' ');
  std::string out = indent + fmt::format("{:<{}}", "point", w);
  for (const TableColumn& c : layout.columns) {
    out += gap + fmt::format("{:>{}}", c.header, static_cast<size_t>(c.width) + c.suffix.size());
  }
  out += "\n";
  for (const TableRow& r : rows) {
    out += indent + fmt::format("{:<{}}", r.label, w);
    if (r.metrics == nullptr) {
      out += gap + "error: " + r.error + "\n";
      continue;
    }
    for (const TableColumn& c : layout.columns) {
      out += gap;
      const Metric* m = r.metrics->Find(c.metric);
      if (m == nullptr || (!r.measured && !c.always)) {
        out += fmt::format("{:>{}}", "n/a", static_cast<size_t>(c.width) + c.suffix.size());
      } else if (m->integer() && c.scale == 1) {
        out += fmt::format("{:>{}}", std::get<int64_t>(m->value), c.width) + c.suffix;
      } else {
        out += fmt::format("{:>{}.{}f}", m->number() * c.scale, c.width, c.precision) + c.suffix;
      }
    }
    out += "\n";
  }
  return out;
}

}  // namespace kvsim
