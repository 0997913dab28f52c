// What `kvsim run` prints for the points it ran, whatever their kinds: one function over
// PointResults (sim/run/point.h) that writes the text (or --json) output, the warnings and
// the exit status. How a run is presented follows its points' SimulationKinds:
//   * any single-engine point (kHeaderThenTable): the first such point's Report() (the
//     scenario in four lines), then one table per kind present (single engines first when
//     point 0 is one), rejections under the tables, the requests finished per point, and
//     each point's simulated-vs-measured table when its scenario has a `reference:`;
//   * only P/D points (kReportOrTable): one point prints its Report() (setup + summary),
//     several print the table;
//   * --json: {"scenario", "points": [{"point": {labels}, "kind", "metrics", "summary",
//     ...} or {"point", "error", "message"}], "failed"} for every kind.
// A point whose requests were all rejected measured nothing: its row shows n/a and the run
// exits 1; so does a run with failed points. A run whose every point failed is an error.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "sim/run/point.h"

namespace kvsim {

struct RunReportOptions {
  std::string scenario_name;  // point 0's scenario: the single row's label, JSON "scenario"
  bool many = false;          // several points: rows are labelled by their sweep values
  bool json = false;
  std::string out_dir;  // non-empty: the last line says where the outputs are
  // "kvsim run: NAME — DESCRIPTION": heads a table of P/D points with the workload line, as
  // an engine point's report heads the engine table (empty: no header).
  std::string title;
  int64_t seeds = 1;      // replicates per point (> 1: cells show mean ± 95 % interval)
  int64_t first_seed = 0; // the first replicate's seed
};

struct RunReport {
  Status error;       // not ok: every point failed; print this error alone
  std::string out;    // stdout
  std::string err;    // stderr (warnings; print before `out`)
  int exit_code = 0;  // 0, or 1 when some points failed or measured nothing
};

// `results` in point order.
RunReport FormatRun(const std::vector<const PointResult*>& results, const RunReportOptions& o);

}  // namespace kvsim
