// kvsim run [SCENARIO] [--set k=v]... [-o DIR] [--trace out.json] [-j N] [--json]
// Runs a scenario through the simulator and prints a table of hit rate, TTFT, TPOT and
// throughput. A scenario with a `sweep:` block runs every point (on -j threads) and prints
// one row per point: that is how the built-in default compares attention pack sizes.
// With -o DIR each point writes metrics.json and requests.csv (DIR itself for one point,
// DIR/points/NNNN for several, plus DIR/summary.csv, the rows `kvsim sweep` writes), and
// DIR gets scenario.resolved.yaml + provenance.json (reproduce with `kvsim run
// DIR/scenario.resolved.yaml`); a DIR of another scenario is refused unless --force; with
// --trace FILE a Chrome trace (FILE.NNNN.json per point for several). A scenario with a
// `cluster:` section runs as a P/D cluster, same flags; a sweep may mix the two. What is
// printed for which kind is sim/run/run_report.h's business, not this file's.
// Exit code: 0; 1 when some points of a sweep failed (the table says which) or rejected
// every request (the table shows n/a and says why; stderr too); 2 for bad input, including
// a run whose every point failed (the first error is printed).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "apps/kvsim/commands.h"
#include "sim/output_file.h"
#include "sim/run/point.h"
#include "sim/run/run_report.h"
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
  int64_t seeds = 0;  // 0: the scenario's sweep.seeds (default 1)
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

int64_t FirstSeed(const ConfigNode& tree) {
  auto s = BaseSeed(tree);
  return s.ok() ? s.value() : 0;
}

void RunRun(const RunArgs& a) {
  auto tree = LoadRunTree(a.scenario, a.seeds);
  if (!tree.ok()) return (void)ReportError(tree.status(), a.json);
  const std::string source = ScenarioSource(a.scenario);
  auto points = ExpandSweep(tree.value());
  if (!points.ok()) return (void)ReportError(points.status(), a.json);
  auto seeds = SweepSeeds(tree.value());
  if (!seeds.ok()) return (void)ReportError(seeds.status(), a.json);
  // The first point's scenario catches typos and bad values before anything runs.
  auto first = ParseScenario(points->front().tree, source);
  if (!first.ok()) return (void)ReportError(first.status(), a.json);
  if (!a.json) {
    for (const std::string& note : ScenarioNotes(first.value())) {
      std::cerr << "kvsim: note: " << note << "\n";
    }
  }
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
                                   static_cast<int64_t>(points->size()),
                                   {a.jobs, seeds.value()});
        !s.ok()) {
      return (void)ReportError(s, a.json);
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::map<int64_t, PointResult> results;
  if (many) InstallStopHandlers();  // a sweep stops between points
  // Long points show progress on a terminal; never when piped, nor with points in parallel.
  ShowPointProgress(::isatty(STDERR_FILENO) != 0 && (a.jobs == 1 || !many) && !a.json);
  RunPoints(points.value(), source, a.jobs, seeds.value(), point_options,
            [&](PointResult&& r) { results.emplace(r.index, std::move(r)); });

  if (!a.out_dir.empty() && (many || seeds.value() > 1)) {
    // The rows `kvsim sweep` writes for the same scenario, byte for byte.
    const RowSchema schema = SweepRowSchema(points.value(), seeds.value());
    std::string csv = SweepCsvHeader(SweepKeys(tree.value()).value(), schema) + "\n";
    for (const auto& [idx, r] : results) csv += SweepCsvRow(r, schema, sweep) + "\n";
    const std::string path = (std::filesystem::path(a.out_dir) / "summary.csv").string();
    if (Status w = WriteFileAtomically(path, csv); !w.ok()) return (void)ReportError(w, a.json);
  }
  if (!a.out_dir.empty()) {  // again, with the wall time
    RunContext context{a.jobs, seeds.value()};
    context.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (Status s = WriteProvenance(a.out_dir, "run", tree.value(), a.scenario, sweep.id,
                                   static_cast<int64_t>(points->size()), context);
        !s.ok()) {
      return (void)ReportError(s, a.json);
    }
  }
  if (StopRequested()) {
    return (void)ReportError(
        Status::Error("interrupted", fmt::format("run: interrupted after {} of {} points",
                                                 results.size(), points->size())),
        a.json);
  }
  std::vector<const PointResult*> ordered;
  for (const auto& [idx, r] : results) ordered.push_back(&r);
  const RunReport report =
      FormatRun(ordered, {first->name, many, a.json, a.json ? std::string() : a.out_dir,
                          fmt::format("kvsim run: {} — {}", first->name, first->description),
                          seeds.value(), FirstSeed(points->front().tree)});
  if (!report.error.ok()) return (void)ReportError(report.error, a.json);
  std::cerr << report.err;
  std::cout << report.out;
  if ((many || seeds.value() > 1) && !a.trace.empty() && !a.json) {  // names not given
    const int64_t s0 = FirstSeed(points->front().tree), n = seeds.value();
    auto name = [&](int64_t index, int64_t seed) {
      const std::string p = TracePathFor(a.trace, index, many);
      return n > 1 ? ReplicatePath(p, seed) : p;
    };
    std::cerr << "kvsim: traces: " << name(0, s0) << " … "
              << name(static_cast<int64_t>(points->size()) - 1, s0 + n - 1)
              << (n > 1 ? " (one per point and seed)\n" : " (one per point)\n");
  }
  ExitCode() = report.exit_code;
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
  cmd->add_option("--trace", args.trace,
                  "write a Chrome/Perfetto trace (JSON) here (FILE.NNNN.json per point for "
                  "several points)");
  cmd->add_option("--step-log", args.step_log,
                  "write the scheduler's decisions, one JSON record per step (docs/step-log.md; "
                  "FILE.NNNN.jsonl per point for several points; single-engine points)");
  cmd->add_option("-j,--jobs", args.jobs, "points (and seeds) to run in parallel")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--seeds", args.seeds,
                  "replicates: run every point with seeds seed … seed+N−1 and print each "
                  "metric's mean ± 95 % interval (sets sweep.seeds)")
      ->check(CLI::Range(int64_t{1}, kMaxSweepSeeds));
  cmd->add_flag("--json", args.json, "print one JSON object instead of the table");
  cmd->add_flag("--force", args.force, "write into an -o DIR that holds another run's results");
  cmd->callback([] { RunRun(args); });
}

}  // namespace kvsim::cli
