// kvsim sweep [SCENARIO] [--set k=v]... [-j N] [--seeds N] [--shard K/N|slurm/N|slurm] [-o DIR] [--per-point]
//             [--count] [--force]
// Runs every point of the scenario's (default: the built-in default's) `sweep:` block and writes DIR/sweep.csv (one row per
// point). Interrupted sweeps resume from DIR's journal when rerun with the same arguments,
// and a rerun of a finished sweep or shard skips the points already in its CSV;
// `--shard K/N` runs the points with index % N == K (0-based) into
// DIR/sweep.shard-K-of-N.csv, and `--shard slurm/N` (or `slurm` with KVSIM_SHARDS) takes K
// from a Slurm job array's task id (scripts/slurm/); `kvsim merge` joins the shard files. `--count` prints the
// number of points and exits. A scenario with a `cluster:` section sweeps a P/D cluster (one
// row of cluster metrics per point); a sweep may mix single engines and clusters (the rows
// then carry a `kind` column and both kinds' columns; sim/sweep/sweep_runner.h).
// Exit code: 0 when every point ran; 1 when some points failed (their rows say why, and the
// last stderr line counts them); 2 for bad input (flags, scenario, journal of another sweep);
// 4 when the CSV or journal cannot be written; 130/143 after SIGINT/SIGTERM, once the points
// in flight are journaled (rerun to continue).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "apps/kvsim/commands.h"
#include "sim/scenario/scenario_loader.h"
#include "sim/sweep/sweep_runner.h"
#include "sim/workload/i_workload.h"

namespace kvsim::cli {
namespace {

struct SweepArgs {
  ScenarioArgs scenario;
  std::string out_dir = "sweep_out";
  std::string shard;
  int jobs = 1;
  int64_t seeds = 0;  // 0: the scenario's sweep.seeds (default 1)
  bool per_point = false;
  bool count = false;
  bool force = false;
  int64_t max_points = 0;
};

void RunSweepCmd(const SweepArgs& a) {
  SweepOptions o;
  o.jobs = a.jobs;
  o.out_dir = a.out_dir;
  o.per_point_outputs = a.per_point;
  o.max_points = a.max_points;
  o.force = a.force;
  o.progress_bar = ::isatty(STDERR_FILENO) != 0;
  if (!a.shard.empty()) {
    Status s = ParseShard(a.shard, [](const char* name) { return std::getenv(name); },
                          &o.shard_k, &o.shard_n);
    if (!s.ok()) return (void)ReportError(s, false);
  }
  auto tree = LoadRunTree(a.scenario, a.seeds);
  if (!tree.ok()) return (void)ReportError(tree.status(), false);
  auto seeds = SweepSeeds(tree.value());
  if (!seeds.ok()) return (void)ReportError(seeds.status(), false);
  // Catch scenario errors (typos, bad values) once, up front, on the first point.
  auto points = ExpandSweep(tree.value());
  if (!points.ok()) return (void)ReportError(points.status(), false);
  if (a.count) {
    std::cout << points->size() << "\n";
    return;
  }
  const std::string source = ScenarioSource(a.scenario);
  auto first = ParseScenario(points->front().tree, source);
  if (!first.ok()) return (void)ReportError(first.status(), false);
  if (Status w = CheckWorkload(first->sim.workload); !w.ok()) return (void)ReportError(w, false);
  // DIR reproduces itself (shards of one sweep write the same two files).
  const SweepIdentity identity = IdentifySweep(tree.value(), static_cast<int64_t>(points->size()));
  RunContext context{o.jobs, seeds.value(), o.shard_k, o.shard_n};
  if (Status p = WriteProvenance(o.out_dir, "sweep", tree.value(), a.scenario, identity.id,
                                 identity.points, context);
      !p.ok()) {
    return (void)ReportError(p, false);
  }
  SweepTally tally;
  InstallStopHandlers();
  const auto t0 = std::chrono::steady_clock::now();
  Status s = RunSweep(tree.value(), source, o, std::cerr, &tally);
  context.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (Status p = WriteProvenance(o.out_dir, "sweep", tree.value(), a.scenario, identity.id,
                                 identity.points, context);
      !p.ok() && s.ok()) {
    s = p;
  }
  if (!s.ok()) return (void)ReportError(s, false);
  if (tally.complete) std::cout << SweepCsvPath(o) << "\n";
  if (!tally.failed.empty()) {
    std::cerr << "kvsim: " << tally.failed.size() << " of " << tally.points
              << " sweep points failed (exit code 1)\n";
    ExitCode() = 1;
  }
}

}  // namespace

void RegisterSweep(CLI::App& app) {
  static SweepArgs args;
  CLI::App* cmd = app.add_subcommand(
      "sweep", "run a scenario's sweep: block into a resumable CSV (one row per point)");
  AddScenarioArgs(cmd, &args.scenario);
  cmd->add_option("-o,--out", args.out_dir, "output directory (sweep.csv, journal)")
      ->capture_default_str();
  cmd->add_option("-j,--jobs", args.jobs, "points (and seeds) run in parallel threads")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--seeds", args.seeds,
                  "replicates: run every point with seeds seed … seed+N−1; each metric column "
                  "is the mean, followed by its 95 % interval <metric>.ci95 (sets sweep.seeds)")
      ->check(CLI::Range(int64_t{1}, kMaxSweepSeeds));
  cmd->add_option("--shard", args.shard,
                  "run slice K of N (0-based): points with index % N == K; `slurm/N` runs "
                  "shard SLURM_ARRAY_TASK_ID mod N, `slurm` takes N from KVSIM_SHARDS (else "
                  "from the job array's range)")
      ->type_name("K/N|slurm/N|slurm");
  cmd->add_flag("--count", args.count, "print the number of points and exit");
  cmd->add_flag("--force", args.force, "replace a sweep CSV in DIR that holds another sweep");
  cmd->add_flag("--per-point", args.per_point,
                "also write DIR/points/NNNN/metrics.json and requests.csv");
  cmd->add_option("--max-points", args.max_points,
                  "stop after N new points (the journal keeps them; rerun to continue)");
  cmd->callback([] { RunSweepCmd(args); });
}

}  // namespace kvsim::cli
