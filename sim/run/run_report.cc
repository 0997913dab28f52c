#include "sim/run/run_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "sim/metrics_output.h"

namespace kvsim {
namespace {

using Presentation = SimulationKind::Presentation;

std::string JsonText(const nlohmann::ordered_json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string Json(const std::vector<const PointResult*>& results, const RunReportOptions& o,
                 int64_t failed) {
  nlohmann::ordered_json points = nlohmann::ordered_json::array();
  for (const PointResult* r : results) {
    nlohmann::ordered_json jp;
    jp["point"] = LabelsToJson(r->labels);
    if (r->kind) jp["kind"] = r->kind->name;
    if (!r->status.ok()) {
      jp["error"] = r->status.code();
      jp["message"] = r->status.message();
    } else {
      jp["metrics"] = nlohmann::ordered_json::parse(MetricSetJson(r->metrics));
      jp["summary"] = nlohmann::ordered_json::parse(r->summary_json);
      if (!r->rejections.empty()) jp["rejections"] = r->rejections;
      if (r->reference) {
        auto rows_json = [](const std::vector<MetricComparison>& rows) {
          nlohmann::ordered_json j = nlohmann::ordered_json::array();
          for (const MetricComparison& c : rows) {
            j.push_back({{"metric", c.metric},
                         {"simulated", c.simulated},
                         {"measured", c.measured},
                         {"error", c.error}});
          }
          return j;
        };
        jp["reference"] = rows_json(r->reference->rows);
        if (!r->reference->stages.empty()) {
          nlohmann::ordered_json js = nlohmann::ordered_json::array();
          for (const auto& [stage, rows] : r->reference->stages) {
            js.push_back({{"stage", stage}, {"rows", rows_json(rows)}});
          }
          jp["reference_stages"] = js;
        }
      }
    }
    points.push_back(jp);
  }
  nlohmann::ordered_json j;
  j["scenario"] = o.scenario_name;
  if (o.seeds > 1) {
    j["seeds"] = nlohmann::ordered_json::array();
    for (int64_t k = 0; k < o.seeds; ++k) j["seeds"].push_back(o.first_seed + k);
  }
  j["points"] = points;
  j["failed"] = failed;
  return JsonText(j);
}

// The tables of a run: one per kind present, in order of first appearance; a point whose
// scenario did not parse (no kind) joins the first table. `like` (optional) sets every
// table's indent and gap, so that the tables of a mixed run line up under one header.
std::string Tables(const std::vector<const PointResult*>& results, const RunReportOptions& o,
                   const TableLayout* like) {
  std::vector<const SimulationKind*> order;
  for (const PointResult* r : results) {
    if (r->kind && std::find(order.begin(), order.end(), r->kind) == order.end()) {
      order.push_back(r->kind);
    }
  }
  if (order.empty()) order.push_back(&EngineKind());
  std::string out;
  for (const SimulationKind* k : order) {
    std::vector<TableRow> rows;
    for (const PointResult* r : results) {
      if ((r->kind ? r->kind : order.front()) != k) continue;
      TableRow row;
      row.label = o.many ? ShortLabelOf(r->labels) : o.scenario_name;
      if (r->status.ok()) {
        row.metrics = &r->metrics;
        row.measured = r->measured();
      } else {
        row.error = r->status.message();
      }
      rows.push_back(std::move(row));
    }
    if (!out.empty()) out += "\n";
    TableLayout layout = k->table;
    if (like) {
      layout.indent = like->indent;
      layout.gap = like->gap;
    }
    out += FormatTable(layout, rows);
  }
  return out;
}

}  // namespace

RunReport FormatRun(const std::vector<const PointResult*>& results, const RunReportOptions& o) {
  RunReport rep;
  int64_t failed = 0;
  int64_t nothing_served = 0;  // points that ran but rejected every request
  for (const PointResult* r : results) {
    if (!r->status.ok()) {
      ++failed;
      continue;
    }
    if (!r->overload.empty()) {
      rep.err +=
          "kvsim: warning: " + (o.many ? LabelOf(r->labels) + ": " : "") + r->overload + "\n";
    }
    if (!r->rejections.empty()) {
      rep.err +=
          "kvsim: warning: " + (o.many ? LabelOf(r->labels) + ": " : "") + r->rejections + "\n";
      // Nothing finished: the point measured nothing, which is a failed experiment.
      if (!r->measured()) ++nothing_served;
    }
  }
  const int64_t n = static_cast<int64_t>(results.size());
  // When every point failed there is no table to show: report the first error instead.
  if (n > 0 && failed == n) {
    rep.error = results.front()->status;
    return rep;
  }
  rep.exit_code = failed > 0 || nothing_served > 0 ? 1 : 0;
  if (o.json) {
    rep.out = Json(results, o, failed);
    return rep;
  }
  const bool only_reports = std::all_of(results.begin(), results.end(), [](const PointResult* r) {
    return r->kind == nullptr || r->kind->presentation == Presentation::kReportOrTable;
  });
  std::string& out = rep.out;
  const std::string replicates =
      o.seeds > 1 ? fmt::format("  {} seeds per point ({} … {}): each cell is the mean ± the "
                                "half-width of its 95 % interval (Student t)\n",
                                o.seeds, o.first_seed, o.first_seed + o.seeds - 1)
                  : "";
  if (only_reports && !o.many && o.seeds <= 1) {
    for (const PointResult* r : results) {
      if (r->status.ok()) out += r->report;
    }
  } else if (only_reports) {
    const auto ok = std::find_if(results.begin(), results.end(),
                                 [](const PointResult* r) { return r->status.ok(); });
    if (!o.title.empty() && ok != results.end()) {
      out += o.title + "\n  workload " + (*ok)->workload + "\n\n";
    }
    out += replicates + Tables(results, o, nullptr);
  } else {
    const TableLayout* like = nullptr;
    for (const PointResult* r : results) {
      if (r->kind && r->kind->presentation == Presentation::kHeaderThenTable) {
        like = &r->kind->table;
        break;
      }
    }
    for (const PointResult* r : results) {
      if (r->status.ok() && r->kind->presentation == Presentation::kHeaderThenTable) {
        out += r->report;
        break;
      }
    }
    out += "\n" + replicates + Tables(results, o, like);
    for (const PointResult* r : results) {
      if (!r->status.ok() || r->breakdown.empty()) continue;
      out += "\n" + (o.many ? "  " + LabelOf(r->labels) + ":\n" : std::string()) + r->breakdown;
    }
    for (const PointResult* r : results) {
      if (r->status.ok() && !r->rejections.empty()) {
        out += "  " + (o.many ? LabelOf(r->labels) + ": " : "") + r->rejections + "\n";
      }
    }
    if (!results.empty()) {
      const PointResult& r0 = *results.front();
      out += fmt::format(
          "\n  {} requests finished per point (first point: {:.1f}s simulated, {:.2f}s wall)\n",
          static_cast<int64_t>(r0.metrics.Number("finished")), r0.metrics.Number("makespan_s"),
          r0.wall_s);
    }
    for (const PointResult* r : results) {
      if (!r->status.ok() || !r->reference) continue;
      // A scenario that reproduces a measured run: simulated beside measured, per point.
      std::string title = "\nsimulated vs measured";
      if (o.many) title += " (" + LabelOf(r->labels) + ")";
      if (!r->reference->source.empty()) title += ": " + r->reference->source;
      out += FormatReferenceTable(title, r->reference->rows);
      for (const auto& [stage, rows] : r->reference->stages) {
        out += FormatReferenceTable("  " + stage, rows);
      }
    }
  }
  if (failed > 0) {
    out += fmt::format("  {} of {} points failed (the table says why)\n", failed, n);
  }
  if (!o.out_dir.empty()) out += "  outputs in " + o.out_dir + "\n";
  return rep;
}

}  // namespace kvsim
