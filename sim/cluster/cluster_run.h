// Running P/D cluster scenarios: what `kvsim run` and `kvsim sweep` do for a point whose
// scenario has a `cluster:` section.
//
// RunClusterScenario is the one code path both commands share: build the ClusterSim, run
// it, and (optionally) write the point's metrics.json (the summary), requests.csv (one row
// per request: instances, the TTFT parts, what was transferred) and a Chrome trace. The
// sweep runner (sim/sweep/sweep_runner.h) calls it from RunPoint, so cluster sweeps get the
// same threads, journal, resume, shards and merge as single-engine sweeps; their CSV rows
// have the columns of ClusterSweepColumns.
//
// RunClusterPoints is `kvsim run` on a cluster scenario: one point prints the cluster's
// static setup and the simulation summary; a sweep (e.g. prefill:decode ratios × link
// bandwidths) prints one row per point and, with an output directory, writes summary.csv —
// byte-identical to what `kvsim sweep` writes for the same scenario. The outputs depend only
// on the scenario and its seed, not on the number of threads.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "sim/cluster/cluster_sim.h"
#include "sim/sweep/sweep_spec.h"

namespace kvsim {

struct PointOptions;

struct ClusterPointOutput {
  Status status;       // not ok: bad input (setup, plans) or an output file failed
  bool ran = false;    // the simulation ran (summary is valid)
  ClusterSummary summary;
  std::string workload;  // the workload's one-line description
  std::string report;    // static setup + summary, as `kvsim run` prints a single point
};

// Runs one cluster scenario. `label` names the point in metrics.json ("" for a single run).
// Non-empty `out_dir`: writes metrics.json and requests.csv there; non-empty `trace_path`:
// writes a Chrome/Perfetto trace (ClusterSim::SetTrace).
ClusterPointOutput RunClusterScenario(const Scenario& sc, const std::string& label,
                                      const std::string& out_dir, const std::string& trace_path);

struct ClusterRunOptions {
  std::string out_dir;  // summary.csv goes here for a sweep ("" = no files)
  bool json = false;    // machine-readable stdout
  int jobs = 1;         // points in parallel
  // Per-point output paths (metrics.json/requests.csv directory, trace file).
  std::function<PointOptions(const SweepPoint&)> point_options;
  SweepIdentity sweep;  // the identity columns of summary.csv
};

// Runs every point (`kvsim run`). Returns the exit code: 0; 1 when some points of a sweep
// failed while others ran (the table and summary.csv say which and why); 2 when the input is
// bad (a single point, or every point of a sweep, failed: the first error is printed).
int RunClusterPoints(const std::vector<SweepPoint>& points, const std::string& source,
                     const ClusterRunOptions& options, std::ostream& out, std::ostream& err);

const std::vector<std::string>& ClusterSweepColumns();
std::vector<std::string> ClusterSweepValues(const ClusterSummary& s);
// requests.csv of one run.
std::string ClusterRequestsCsv(const ClusterSim& sim);

}  // namespace kvsim
