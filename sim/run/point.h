// Running one point of an experiment, whatever kind it is: RunPoint parses the point's
// scenario tree, builds its Simulation (sim/run/simulation.h), runs it, optionally writes
// its outputs (metrics.json, requests.csv, a Chrome trace, the step log), and returns a
// PointResult: the point's labels, status, kind and MetricSet. A point whose scenario is
// invalid (say a pack size the model does not allow) comes back as a failed PointResult,
// not a crash. This is all a sweep sees of a simulation: points in, rows out
// (RowSchemaFor / RowFields below).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "sim/config/config_tree.h"
#include "sim/labels.h"
#include "sim/run/metric_set.h"
#include "sim/run/simulation.h"

namespace kvsim {

struct PointOptions {
  std::string out_dir;        // write metrics.json + requests.csv here ("" = none)
  std::string trace_path;     // write a Chrome trace here ("" = none)
  std::string step_log_path;  // write the step log (JSONL) here ("" = none; engines only)
  // Keep in memory, in PointResult::kept (the Python module's DataFrames): requests.csv's
  // text, and every step record (engines only; a long run's records take much memory).
  bool keep_requests = false;
  bool keep_steps = false;
};

// What RunPoint kept in memory of one run (one seed) of a point, when PointOptions asked.
struct KeptOutputs {
  int64_t seed = 0;
  std::string requests_csv;       // "" unless keep_requests
  std::vector<StepRecord> steps;  // empty unless keep_steps
};

struct PointResult {
  int64_t index = 0;
  Labels labels;
  Status status;  // not ok: the point failed (bad config, or an output not written)
  // The kind the point's scenario asks for; null when the scenario did not parse.
  const SimulationKind* kind = nullptr;
  MetricSet metrics;  // kind->columns, in order; empty when the simulation did not run
  double wall_s = 0;
  std::string workload;      // the workload's one-line description (and any fallback note)
  std::string report;        // Simulation::Report()
  std::string rejections;    // "" when no request was rejected
  std::string overload;      // "" unless the queue grew through the run
  std::string breakdown;     // Simulation::Breakdown (per DP rank), "" when none
  std::string summary_json;  // the kind's full summary, JSON text
  std::optional<ReferenceComparison> reference;
  std::vector<KeptOutputs> kept;  // one per seed that ran, in seed order, when asked

  bool ran() const { return !metrics.empty(); }
  // Ran, and some request finished: there is something to measure.
  bool measured() const { return ran() && metrics.Number("finished") > 0; }
};

PointResult RunPoint(int64_t index, const Labels& labels, const ConfigNode& tree,
                     const std::string& source, const PointOptions& options);

// The kind a point's scenario tree asks for, without parsing it (a sweep learns the kinds of
// all its points before running any; a point that then fails still has its kind). Agrees
// with KindOf(ParseScenario(tree)) wherever that parses.
const SimulationKind* KindOfPoint(const ConfigNode& tree);

// The metric columns of rows of points of these kinds (nulls ignored): one kind's columns;
// for several kinds a "kind" column, then the union of their columns in order of first
// appearance, so one CSV holds single-engine and P/D rows (each leaves the other's
// columns empty). With seeds > 1 (replicates, sim/run/replicates.h): a `seeds` column, then
// each metric followed by its 95 % interval half-width, `<metric>.ci95`.
struct RowSchema {
  bool with_kind = false;
  std::vector<std::string> columns;
  // Sweep axes (indexes into a point's labels) whose values are written with a unit
  // ("16GiB"): the CSV gives each a numeric `<key>.value` column (bytes) after the keys.
  std::vector<size_t> valued_labels;
  size_t width() const { return columns.size() + (with_kind ? 1 : 0); }
};
RowSchema RowSchemaFor(const std::vector<const SimulationKind*>& kinds, int64_t seeds = 1);
// A point's fields under `schema`: its kind (when the schema has the column), then each
// column's CSV value, empty where the point has no such metric (or did not run).
std::vector<std::string> RowFields(const PointResult& r, const RowSchema& schema);

// When on, a point that runs longer than 2 s prints a progress line (requests finished,
// simulated time, ETA) to stderr once a second, then clears it. `kvsim run` turns it on
// when stderr is a terminal and points run one at a time. (Kinds that keep a step log.)
void ShowPointProgress(bool on);

// Seconds as h:mm:ss.
std::string FormatDuration(double s);

}  // namespace kvsim
