// Running scenario points, one or many.
//
// RunPoint: parse one point's tree, build an Engine, run it, optionally write its outputs
// (metrics.json, requests.csv, Chrome trace). A point whose scenario is invalid (say a pack
// size the model does not allow) comes back as a failed PointResult, not a crash.
//
// RunSweep (`kvsim sweep`): runs the points of a sweep (or the slice `--shard K/N` selects:
// points with index % N == K) on `jobs` threads and writes one CSV row per point.
// Crash safety: each finished row is appended to a journal (<csv>.journal) with one write()
// and an fsync, so a killed sweep (even kill -9) loses at most the points in flight; a
// torn last line is discarded on resume. Rerunning the same command skips the journaled
// points. When every point is done the CSV is written sorted by point index (temp file +
// rename) and the journal removed, so an interrupted-and-resumed sweep, a -j 1 and a -j 8
// sweep all produce the same bytes. The journal starts with a fingerprint of the scenario
// tree; resuming with a different scenario is an error.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "sim/metrics_output.h"
#include "sim/sweep/sweep_spec.h"

namespace kvsim {

struct PointOptions {
  std::string out_dir;     // write metrics.json + requests.csv here ("" = none)
  std::string trace_path;  // write a Chrome trace here ("" = none)
};

struct PointResult {
  int64_t index = 0;
  Labels labels;
  Status status;  // not ok: the point failed (bad config); the row says why
  RunSummary summary;
  int64_t block_size = 0;
  std::vector<std::string> csv_values;  // SweepMetricColumns() order (empty on failure)
  double wall_s = 0;
  std::string workload;  // the workload's one-line description (and any fallback note)
};

PointResult RunPoint(const SweepPoint& point, const std::string& source,
                     const PointOptions& options);

// Runs `points` on `jobs` threads, calling `done` (under a lock) as each finishes.
void RunPoints(const std::vector<SweepPoint>& points, const std::string& source, int jobs,
               const std::function<PointOptions(const SweepPoint&)>& options,
               const std::function<void(PointResult&&)>& done);

struct SweepOptions {
  int jobs = 1;
  int shard_k = 0;  // this shard (0-based)
  int shard_n = 1;  // number of shards
  std::string out_dir = "sweep_out";
  bool per_point_outputs = false;  // also write DIR/points/NNNN/{metrics.json,requests.csv}
  bool progress_bar = false;       // a TTY progress bar (else plain lines)
  int64_t max_points = 0;          // stop after this many new points (0 = all); the journal
                                   // keeps them and the next run resumes (time-boxed jobs)
};

// The CSV file a sweep (or shard) writes into out_dir.
std::string SweepCsvPath(const SweepOptions& o);

// Runs the sweep; progress and notes go to `log`. Returns the status of the sweep itself
// (I/O, bad sweep block, journal mismatch); failed points are rows, not errors.
Status RunSweep(const ConfigNode& tree, const std::string& source, const SweepOptions& options,
                std::ostream& log);

// `kvsim merge`: joins shard CSVs into `out` (same header; rows by point index; duplicates
// must agree). Reports missing point indices in `log`.
Status MergeSweepCsvs(const std::vector<std::string>& inputs, const std::string& out,
                      std::ostream& log);

}  // namespace kvsim
