// kvsim run [SCENARIO] [--set k=v]... [-o DIR] [--trace out.json] [-j N] [--json]
// Runs a scenario through the simulator and prints a table of hit rate, TTFT, TPOT and
// throughput. A scenario with a `sweep:` block runs every point (on -j threads) and prints
// one row per point: that is how the built-in default compares attention pack sizes.
// With -o DIR each point writes metrics.json and requests.csv (DIR itself for one point,
// DIR/points/NNNN for several, plus DIR/summary.csv, the rows `kvsim sweep` writes), and
// DIR gets scenario.resolved.yaml + provenance.json (reproduce with `kvsim run
// DIR/scenario.resolved.yaml`); a DIR of another scenario is refused unless --force; with
// --trace FILE a Chrome trace (FILE.NNNN.json per point for several). A scenario with a
// `cluster:` section runs as a P/D cluster (sim/cluster/cluster_run.h), same flags.
// Exit code: 0; 1 when some points of a sweep failed (the table says which) or rejected
// every request (the table shows n/a and says why; stderr too); 2 for bad input, including
// a run whose every point failed (the first error is printed).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "apps/kvsim/commands.h"
#include "sim/cluster/cluster_run.h"
#include "sim/metrics_output.h"
#include "sim/output_file.h"
#include "sim/report/reference_report.h"
#include "sim/scenario/scenario_loader.h"
#include "sim/sweep/sweep_runner.h"
#include "sim/workload/i_workload.h"

namespace kvsim::cli {
namespace {

struct RunArgs {
  ScenarioArgs scenario;
  std::string out_dir;
  std::string trace;
  std::string step_log;
  int jobs = 1;
  bool json = false;
  bool force = false;
};

std::string TracePathFor(const std::string& base, int64_t index, bool many) {
  if (base.empty() || !many) return base;
  std::filesystem::path p(base);
  return (p.parent_path() / fmt::format("{}.{:04d}{}", p.stem().string(), index,
                                        p.extension().string()))
      .string();
}

void RunRun(const RunArgs& a) {
  LoadOptions opts{a.scenario.scenario, a.scenario.sets};
  auto tree = LoadScenarioTree(opts);
  if (!tree.ok()) return (void)ReportError(tree.status(), a.json);
  for (const std::string& note : FixSweptKeys(tree.value(), a.scenario.sets)) {
    std::cerr << "kvsim: note: " << note << "\n";
  }
  const std::string source = a.scenario.scenario.empty()
                                 ? std::string("<built-in>/") + kDefaultScenarioPath
                                 : a.scenario.scenario;
  auto points = ExpandSweep(tree.value());
  if (!points.ok()) return (void)ReportError(points.status(), a.json);
  // The first point's scenario catches typos and bad values before anything runs.
  auto first = ParseScenario(points->front().tree, source);
  if (!first.ok()) return (void)ReportError(first.status(), a.json);
  const bool many = points->size() > 1;
  const SweepIdentity sweep = IdentifySweep(tree.value(), static_cast<int64_t>(points->size()));
  auto point_options = [&](const SweepPoint& p) {
    PointOptions po;
    if (!a.out_dir.empty()) {
      po.out_dir = many ? (std::filesystem::path(a.out_dir) / "points" /
                           fmt::format("{:04d}", p.index))
                              .string()
                        : a.out_dir;
    }
    po.trace_path = TracePathFor(a.trace, p.index, many);
    po.step_log_path = TracePathFor(a.step_log, p.index, many);
    return po;
  };
  // One point: everything `kvsim layout` checks, before anything runs. A sweep checks the
  // workload only: a point the planner refuses is an error row, and the others still run.
  if (Status w = many ? CheckWorkload(first->sim.workload) : ValidateScenario(first.value());
      !w.ok()) {
    return (void)ReportError(w, a.json);
  }
  if (!a.out_dir.empty()) {
    if (Status s = CheckOutDir(a.out_dir, sweep.id, a.force); !s.ok()) {
      return (void)ReportError(s, a.json);
    }
    if (Status s = WriteProvenance(a.out_dir, "run", tree.value(), a.scenario, sweep.id,
                                   static_cast<int64_t>(points->size()));
        !s.ok()) {
      return (void)ReportError(s, a.json);
    }
  }
  if (first->cluster.enabled) {  // P/D cluster: sim/cluster/cluster_run.h
    ExitCode() = RunClusterPoints(points.value(), source,
                                  {a.out_dir, a.json, a.jobs, point_options, sweep}, std::cout,
                                  std::cerr);
    return;
  }
  std::map<int64_t, PointResult> results;
  if (many) InstallStopHandlers();  // a sweep stops between points
  // Long points show progress on a terminal; never when piped, nor with points in parallel.
  ShowPointProgress(::isatty(STDERR_FILENO) != 0 && (a.jobs == 1 || !many) && !a.json);
  RunPoints(points.value(), source, a.jobs, point_options, [&](PointResult&& r) {
    CheckPointKind(r, /*cluster=*/false);
    results.emplace(r.index, std::move(r));
  });

  int64_t failed = 0;
  int64_t nothing_served = 0;  // points that ran but rejected every request
  std::vector<TableRow> rows;
  nlohmann::ordered_json jpoints = nlohmann::ordered_json::array();
  for (auto& [idx, r] : results) {
    TableRow row;
    row.label = many ? LabelOf(r.labels) : first->name;
    row.ok = r.status.ok();
    row.error = r.status.message();
    row.block_size = r.block_size;
    row.summary = r.summary;
    row.rejections = r.rejections;
    failed += row.ok ? 0 : 1;
    if (row.ok && !r.rejections.empty()) {
      std::cerr << "kvsim: warning: " << (many ? row.label + ": " : "") << r.rejections << "\n";
      // Nothing finished: the point measured nothing, which is a failed experiment.
      if (r.summary.requests_finished == 0) ++nothing_served;
    }
    rows.push_back(row);
    if (a.json) {
      nlohmann::ordered_json jp;
      nlohmann::ordered_json lab = nlohmann::ordered_json::object();
      for (const auto& [k, v] : r.labels) lab[k] = v;
      jp["point"] = lab;
      if (row.ok) {
        jp["attn_block_size"] = r.block_size;
        jp["summary"] = SummaryToJson(r.summary);
        if (!r.rejections.empty()) jp["rejections"] = r.rejections;
        if (!first->sim.reference.summary.empty()) {
          nlohmann::ordered_json jr = nlohmann::ordered_json::array();
          for (const MetricComparison& c :
               CompareWithReference(r.summary, first->sim.reference.summary)) {
            jr.push_back({{"metric", c.metric}, {"simulated", c.simulated},
                          {"measured", c.measured}, {"error", c.error}});
          }
          jp["reference"] = jr;
        }
      } else {
        jp["error"] = r.status.code();
        jp["message"] = r.status.message();
      }
      jpoints.push_back(jp);
    }
  }
  if (!a.out_dir.empty() && many) {
    std::string csv = SweepCsvHeader(SweepKeys(tree.value()).value(), /*cluster=*/false) + "\n";
    for (const auto& [idx, r] : results) csv += SweepCsvRow(r, /*cluster=*/false, sweep) + "\n";
    const std::string path = (std::filesystem::path(a.out_dir) / "summary.csv").string();
    if (Status w = WriteFileAtomically(path, csv); !w.ok()) return (void)ReportError(w, a.json);
  }
  if (StopRequested()) {
    return (void)ReportError(
        Status::Error("interrupted", fmt::format("run: interrupted after {} of {} points",
                                                 results.size(), points->size())),
        a.json);
  }
  // When every point failed there is no table to show: report the first error instead.
  if (!results.empty() && std::all_of(results.begin(), results.end(),
                                      [](const auto& kv) { return !kv.second.status.ok(); })) {
    return (void)ReportError(results.begin()->second.status, a.json);
  }
  if (a.json) {
    nlohmann::ordered_json j;
    j["scenario"] = first->name;
    j["points"] = jpoints;
    j["failed"] = failed;
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    const Scenario& s = first.value();
    std::cout << fmt::format("kvsim run: {} — {}\n", s.name, s.description);
    std::cout << fmt::format("  model {} (TP {}), hardware {} [{}], seed {}\n", s.model.name,
                             s.cache.tp, s.sim.hardware.name, s.sim.hardware_source, s.seed);
    std::cout << fmt::format("  budget {} tokens / {} seqs, KV memory {:.1f} GiB\n",
                             s.scheduler.max_num_batched_tokens, s.scheduler.max_num_seqs,
                             static_cast<double>(s.cache.kv_memory_bytes) / (1 << 30));
    // The workload line comes from a point that ran (it names the trace actually used).
    for (const auto& [idx, r] : results) {
      if (r.status.ok()) {
        std::cout << "  workload " << r.workload << "\n";
        break;
      }
    }
    std::cout << "\n" << FormatRunTable("", rows);
    if (!results.empty()) {
      const PointResult& r0 = results.begin()->second;
      std::cout << fmt::format("\n  {} requests finished per point (first point: {:.1f}s "
                               "simulated, {:.2f}s wall)\n",
                               r0.summary.requests_finished, r0.summary.makespan_s, r0.wall_s);
    }
    if (!first->sim.reference.summary.empty()) {
      // A scenario that reproduces a measured run: simulated beside measured, per point.
      size_t row_index = 0;
      for (const auto& [idx, r] : results) {
        const std::string& label = rows[row_index++].label;
        if (!r.status.ok()) continue;
        std::string title = "\nsimulated vs measured";
        if (many) title += " (" + label + ")";
        if (!first->sim.reference.source.empty()) title += ": " + first->sim.reference.source;
        std::cout << FormatReferenceTable(
            title, CompareWithReference(r.summary, first->sim.reference.summary));
      }
    }
    if (failed > 0) {
      std::cout << fmt::format("  {} of {} points failed (the table says why)\n", failed,
                               results.size());
    }
    if (!a.out_dir.empty()) std::cout << "  outputs in " << a.out_dir << "\n";
  }
  if (failed > 0 || nothing_served > 0) ExitCode() = 1;
  // An output that could not be written outranks failed points: the numbers are lost.
  for (const auto& [idx, r] : results) {
    if (!r.status.ok() && ExitCodeFor(r.status) == kExitWriteFailed) ExitCode() = kExitWriteFailed;
  }
}

}  // namespace

void RegisterRun(CLI::App& app) {
  static RunArgs args;
  CLI::App* cmd = app.add_subcommand(
      "run", "simulate a scenario and print hit rate, TTFT, TPOT, throughput (default: the "
             "built-in attention-pack study)");
  AddScenarioArgs(cmd, &args.scenario);
  cmd->add_option("-o,--out", args.out_dir, "write metrics.json and requests.csv here");
  cmd->add_option("--trace", args.trace, "write a Chrome/Perfetto trace (JSON) here");
  cmd->add_option("--step-log", args.step_log,
                  "write the scheduler's decisions, one JSON record per step (docs/step-log.md; "
                  "FILE.NNNN.jsonl per point for several points; single-engine points)");
  cmd->add_option("-j,--jobs", args.jobs, "points to run in parallel")->check(CLI::Range(1, 256));
  cmd->add_flag("--json", args.json, "print one JSON object instead of the table");
  cmd->add_flag("--force", args.force, "write into an -o DIR that holds another run's results");
  cmd->callback([] { RunRun(args); });
}

}  // namespace kvsim::cli
