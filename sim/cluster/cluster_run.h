// Running P/D cluster scenarios from the command line: what `kvsim run` does when the
// scenario has a `cluster:` section. One point prints the cluster's static setup and the
// simulation summary; a sweep (e.g. prefill:decode ratios × link bandwidths) prints one row
// per point. With an output directory each point writes metrics.json (the summary) and
// requests.csv (one row per request: instances, the TTFT parts, what was transferred), and
// a sweep also writes summary.csv (one row per point, the columns of ClusterSweepColumns).
// Points run one after another; the outputs depend only on the scenario and its seed.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "sim/cluster/cluster_sim.h"
#include "sim/sweep/sweep_spec.h"

namespace kvsim {

struct ClusterRunOptions {
  std::string out_dir;  // empty: no files
  bool json = false;    // machine-readable stdout
};

// Runs every point. Returns the exit code: 0, or 2 when a point's input is bad (the error is
// printed and, for a sweep, the row says why; the other points still run).
int RunClusterPoints(const std::vector<SweepPoint>& points, const std::string& source,
                     const ClusterRunOptions& options, std::ostream& out, std::ostream& err);

const std::vector<std::string>& ClusterSweepColumns();
std::vector<std::string> ClusterSweepValues(const ClusterSummary& s);
// requests.csv of one run.
std::string ClusterRequestsCsv(const ClusterSim& sim);

}  // namespace kvsim
