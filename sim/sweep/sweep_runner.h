// Sweeps: running the points of a scenario's `sweep:` block and writing one CSV row each.
// A sweep sees points and rows only: each point runs through the run layer (RunPoint,
// sim/run/point.h), whatever kind of simulation it is, and its row is its MetricSet under
// the sweep's RowSchema.
//
// RunPoints runs points on threads (`kvsim run` and `kvsim sweep`). RunSweep (`kvsim
// sweep`): runs the points of a sweep (or the slice `--shard K/N` selects: points with
// index % N == K) on `jobs` threads and writes one CSV row per point. The columns come from
// the kinds of all the sweep's points (SweepRowSchema): a sweep of single engines has the
// single-engine columns, a sweep of P/D clusters the cluster columns, and a sweep that mixes
// them (say an axis that switches `cluster:` on and off) a `kind` column and the union of
// both; every shard computes the same header, so shards merge.
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

#include "sim/run/point.h"
#include "sim/sweep/sweep_spec.h"

namespace kvsim {

// The row schema of a sweep's CSV: from the kinds of all its points (every shard agrees),
// with the axes whose values carry a byte unit (valued_labels).
// With seeds > 1 each metric column is followed by its interval column (RowSchemaFor).
RowSchema SweepRowSchema(const std::vector<SweepPoint>& points, int64_t seeds = 1);

// The sweep CSV's header line (no newline) for these sweep keys, and one point's row (no
// newline): point index, the label values (as written), the numeric values of the
// schema's valued_labels, "ok" or "error: <message>", the schema's fields
// (RowFields; metrics are empty on error), then the sweep's identity (sweep_id,
// sweep_points). `kvsim sweep` writes these rows and `kvsim run -o` the same ones in
// summary.csv.
std::string SweepCsvHeader(const std::vector<std::string>& keys, const RowSchema& schema);
std::string SweepCsvRow(const PointResult& r, const RowSchema& schema, const SweepIdentity& sweep);

// A process-wide request to stop (SIGINT/SIGTERM handlers call RequestStop; it only stores
// to a lock-free atomic, so it is async-signal-safe). RunPoints starts no new point once it
// is set; the points in flight finish, so every finished point is kept.
void RequestStop();
bool StopRequested();
// Withdraws the request, for a process that goes on after a stopped run (the Python module,
// after KeyboardInterrupt); the CLI exits instead.
void ClearStopRequest();

// Runs `points` on `jobs` threads, calling `done` (under a lock) as each finishes; after
// RequestStop, no further point starts. With seeds > 1 every point runs once per seed
// (seed … seed+seeds−1, the replicates spread over the threads) and `done` gets the
// combined result (sim/run/replicates.h) once all its seeds are in; a replicate's outputs go
// to OUT/seed-S/ and its trace and step log to FILE.seed-S.EXT.
// FILE.json → FILE.seed-S.json: where a replicate's trace or step log goes.
std::string ReplicatePath(const std::string& path, int64_t seed);

void RunPoints(const std::vector<SweepPoint>& points, const std::string& source, int jobs,
               int64_t seeds,
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
  bool force = false;              // replace a CSV in out_dir that holds another sweep
};

// `--shard SPEC`: "K/N" (0-based); "slurm/N", shard SLURM_ARRAY_TASK_ID mod N of N, so
// --array=0-(N-1) and --array=1-N both run every shard once and a rerun of failed tasks
// (--array=2,5) runs exactly their shards; or "slurm", which takes N from KVSIM_SHARDS when
// set (scripts/slurm/submit.sh exports it) and otherwise from the job array's own range
// (SLURM_ARRAY_TASK_ID/_MIN/_MAX/_STEP/_COUNT: right for the whole array only, since a
// rerun of one task is an array of one). `getenv` is the environment to read (tests pass
// their own).
Status ParseShard(const std::string& spec, const std::function<const char*(const char*)>& getenv,
                  int* shard_k, int* shard_n);

// The CSV file a sweep (or shard) writes into out_dir.
std::string SweepCsvPath(const SweepOptions& o);

// What a sweep (or shard) ended with, resumed rows included.
struct SweepTally {
  int64_t points = 0;                 // rows in the CSV (or the journal, if stopped early)
  std::vector<int64_t> failed;        // indices of the error rows
  std::vector<std::string> kinds;     // the kinds of the sweep's points ("engine", "pd")
  bool complete = false;              // the CSV was written (false after --max-points)
};

// Runs the sweep; progress and notes go to `log`. After RequestStop it returns an
// "interrupted" error once the points in flight are journaled (a rerun continues). A shard that finds its finished CSV in
// out_dir skips the points already there (a rerun of a Slurm array task redoes nothing);
// a CSV of another sweep is refused unless options.force. A lock file (<csv>.lock, flock)
// refuses a second process running the same shard into the same directory. Returns the status of the sweep itself
// (I/O, bad sweep block, point 0's scenario, journal mismatch); failed points are rows, not
// errors: they are counted in `tally` (optional) and the last log line says how many.
Status RunSweep(const ConfigNode& tree, const std::string& source, const SweepOptions& options,
                std::ostream& log, SweepTally* tally = nullptr);

// `kvsim merge`: joins shard CSVs into `out` (same header; rows by point index; duplicates
// must agree). Strict: every row must carry the same sweep_id (a shard of another sweep is a
// "foreign_shard" error naming its file) and every point 0..sweep_points-1 must be present
// ("missing_points", naming them, nothing written) unless allow_missing, which writes what
// there is and warns in `log`.
Status MergeSweepCsvs(const std::vector<std::string>& inputs, const std::string& out,
                      std::ostream& log, bool allow_missing = false);

}  // namespace kvsim
