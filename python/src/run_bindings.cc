// run, sweep and load_tree: the steps of `kvsim run` and `kvsim sweep` (apps/kvsim/cmd_run.cc,
// cmd_sweep.cc) over the same library functions, so that the CSVs are byte-identical to the
// CLI's. The simulation runs without the GIL; progress calls back into Python with it.
#include <fmt/format.h>
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <ostream>
#include <streambuf>

#include "apps/kvsim/version.h"
#include "python/src/common.h"
#include "sim/output_file.h"
#include "sim/run/point.h"
#include "sim/run/provenance.h"
#include "sim/run/run_report.h"
#include "sim/run/scenario_checks.h"
#include "sim/sweep/run_tree.h"
#include "sim/sweep/sweep_runner.h"
#include "sim/workload/i_workload.h"

namespace kvsim::py {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Calls a Python progress callback from any thread (the GIL is taken for it). Ctrl-C while
// the simulation runs asks the run to stop between points (RequestStop), as SIGINT does for
// the CLI; Stopped() then says so and the caller raises KeyboardInterrupt.
class Progress {
 public:
  explicit Progress(pyb::object callback) : callback_(std::move(callback)) {}
  template <class... Args>
  void operator()(Args&&... args) {
    pyb::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) Stop();
    if (callback_.is_none()) return;
    try {
      callback_(std::forward<Args>(args)...);
    } catch (pyb::error_already_set&) {
      Stop();  // KeyboardInterrupt (or a broken callback): finish the points in flight
    }
  }
  // After the run, with the GIL: raises KeyboardInterrupt if it was stopped.
  void RaiseIfStopped() {
    if (!stopped_) return;
    ClearStopRequest();
    PyErr_SetNone(PyExc_KeyboardInterrupt);
    throw pyb::error_already_set();
  }

 private:
  void Stop() {
    PyErr_Clear();
    stopped_ = true;
    RequestStop();
  }
  pyb::object callback_;
  bool stopped_ = false;
};

// An ostream whose complete lines go to a Progress callback (RunSweep's log).
class LineBuf : public std::streambuf {
 public:
  explicit LineBuf(Progress& progress) : progress_(progress) {}

 protected:
  int overflow(int c) override {
    if (c == traits_type::eof()) return 0;
    if (c == '\n' || c == '\r') {
      if (!line_.empty()) progress_(line_);
      line_.clear();
    } else {
      line_ += static_cast<char>(c);
    }
    return c;
  }

 private:
  Progress& progress_;
  std::string line_;
};

// The tree `kvsim run` / `sweep` would run, its points and its seeds; bad input raises.
struct LoadedRun {
  ConfigNode tree;
  std::vector<SweepPoint> points;
  int64_t seeds = 1;
  std::string source;
  std::vector<std::string> notes;
};

LoadedRun Load(const std::string& scenario, const std::vector<std::string>& overrides,
               int64_t seeds) {
  LoadedRun r;
  r.tree = Unwrap(LoadRunTree({scenario, overrides}, seeds, &r.notes));
  r.source = ScenarioSourceName(scenario);
  r.points = Unwrap(ExpandSweep(r.tree));
  r.seeds = Unwrap(SweepSeeds(r.tree));
  return r;
}

// kvsim.Scenario.load / .set check the scenario as `kvsim run` would, before anything runs.
void CheckTree(const std::string& scenario, const std::vector<std::string>& overrides) {
  LoadedRun r = Load(scenario, overrides, 0);
  Unwrap(ParseScenario(r.points.front().tree, r.source));
}

pyb::dict Run(const std::string& scenario, const std::vector<std::string>& overrides,
              int64_t seeds, int jobs, const std::string& out, bool force, bool keep_requests,
              bool keep_steps, pyb::object progress_callback) {
  LoadedRun run = Load(scenario, overrides, seeds);
  const Scenario first = Unwrap(ParseScenario(run.points.front().tree, run.source));
  for (const std::string& note : ScenarioNotes(first)) run.notes.push_back(note);
  const bool many = run.points.size() > 1;
  // As `kvsim run`: one point is checked as `kvsim layout` checks it; a sweep's workload only.
  if (Status w = many ? CheckWorkload(first.sim.workload) : ValidateScenario(first); !w.ok()) {
    Raise(w);
  }
  const auto npoints = static_cast<int64_t>(run.points.size());
  const SweepIdentity sweep = IdentifySweep(run.tree, npoints);
  ProvenanceContext context{KvsimVersion(), "run", scenario, overrides, jobs, run.seeds};
  if (!out.empty()) {
    if (Status s = CheckOutDir(out, sweep.id, force); !s.ok()) Raise(s);
    if (Status s = WriteProvenance(out, run.tree, sweep.id, npoints, context); !s.ok()) Raise(s);
  }
  auto point_options = [&](const SweepPoint& p) {
    PointOptions po;
    if (!out.empty()) {
      po.out_dir = many ? (std::filesystem::path(out) / "points" /
                           fmt::format("{:04d}", p.index)).string()
                        : out;
    }
    po.keep_requests = keep_requests;
    po.keep_steps = keep_steps;
    return po;
  };
  std::map<int64_t, PointResult> results;
  Progress progress(std::move(progress_callback));
  const auto t0 = std::chrono::steady_clock::now();
  {
    pyb::gil_scoped_release release;
    RunPoints(run.points, run.source, jobs, run.seeds, point_options, [&](PointResult&& r) {
      results.emplace(r.index, std::move(r));
      progress(results.size(), run.points.size());
    });
  }
  progress.RaiseIfStopped();
  const RowSchema schema = SweepRowSchema(run.points, run.seeds);
  std::string csv = SweepCsvHeader(Unwrap(SweepKeys(run.tree)), schema) + "\n";
  for (const auto& [idx, r] : results) csv += SweepCsvRow(r, schema, sweep) + "\n";
  if (!out.empty() && (many || run.seeds > 1)) {  // as `kvsim run -o`
    if (Status w = WriteFileAtomically((std::filesystem::path(out) / "summary.csv").string(), csv);
        !w.ok()) {
      Raise(w);
    }
  }
  context.wall_s = SecondsSince(t0);
  if (!out.empty()) {
    if (Status s = WriteProvenance(out, run.tree, sweep.id, npoints, context); !s.ok()) Raise(s);
  }
  std::vector<const PointResult*> ordered;
  for (const auto& [idx, r] : results) ordered.push_back(&r);
  const int64_t first_seed = BaseSeed(run.points.front().tree).ok()
                                 ? BaseSeed(run.points.front().tree).value()
                                 : 0;
  const RunReport report = FormatRun(
      ordered, {first.name, many, false, out,
                fmt::format("kvsim run: {} — {}", first.name, first.description), run.seeds,
                first_seed});
  if (!report.error.ok()) Raise(report.error);

  pyb::list requests;
  pyb::list steps;  // one column dict per run (point and seed): pandas concatenates them
  for (const auto& [idx, r] : results) {
    for (const KeptOutputs& k : r.kept) {
      if (keep_requests) requests.append(pyb::make_tuple(idx, k.seed, k.requests_csv));
      if (keep_steps) {
        pyb::dict constants;
        constants["point"] = idx;
        constants["seed"] = k.seed;
        steps.append(StepColumns(k.steps, constants, true, nullptr));
      }
    }
  }
  pyb::dict d;
  d["csv"] = csv;
  d["report"] = report.out;
  d["warnings"] = report.err;
  d["notes"] = run.notes;
  d["exit_code"] = report.exit_code;
  d["provenance"] = ProvenanceJsonText(run.tree, sweep.id, npoints, context);
  d["requests"] = requests;
  d["steps"] = steps;
  return d;
}

pyb::dict Sweep(const std::string& scenario, const std::vector<std::string>& overrides,
                int64_t seeds, int jobs, const std::string& out, int shard_k, int shard_n,
                bool per_point, bool force, int64_t max_points, pyb::object progress_callback) {
  LoadedRun run = Load(scenario, overrides, seeds);
  const Scenario first = Unwrap(ParseScenario(run.points.front().tree, run.source));
  if (Status w = CheckWorkload(first.sim.workload); !w.ok()) Raise(w);
  SweepOptions o;
  o.jobs = jobs;
  o.out_dir = out;
  o.shard_k = shard_k;
  o.shard_n = shard_n;
  o.per_point_outputs = per_point;
  o.force = force;
  o.max_points = max_points;
  const SweepIdentity identity = IdentifySweep(run.tree, static_cast<int64_t>(run.points.size()));
  ProvenanceContext context{KvsimVersion(), "sweep", scenario, overrides, jobs, run.seeds,
                            shard_k, shard_n};
  if (Status p = WriteProvenance(out, run.tree, identity.id, identity.points, context); !p.ok()) {
    Raise(p);
  }
  Progress progress(std::move(progress_callback));
  SweepTally tally;
  Status s;
  const auto t0 = std::chrono::steady_clock::now();
  {
    pyb::gil_scoped_release release;
    LineBuf buf(progress);
    std::ostream log(&buf);
    s = RunSweep(run.tree, run.source, o, log, &tally);
    log.flush();
  }
  progress.RaiseIfStopped();
  context.wall_s = SecondsSince(t0);
  if (Status p = WriteProvenance(out, run.tree, identity.id, identity.points, context);
      !p.ok() && s.ok()) {
    s = p;
  }
  if (!s.ok()) Raise(s);
  pyb::dict d;
  d["csv_path"] = SweepCsvPath(o);
  d["complete"] = tally.complete;
  d["failed"] = tally.failed;
  d["notes"] = run.notes;
  d["provenance"] = ProvenanceJsonText(run.tree, identity.id, identity.points, context);
  return d;
}

}  // namespace

void BindRun(pyb::module_& m) {
  using pyb::arg;
  m.def("check_scenario", &CheckTree, arg("scenario"), arg("overrides"));
  m.def("run", &Run, arg("scenario"), arg("overrides"), arg("seeds"), arg("jobs"), arg("out"),
        arg("force"), arg("keep_requests"), arg("keep_steps"), arg("progress"));
  m.def("sweep", &Sweep, arg("scenario"), arg("overrides"), arg("seeds"), arg("jobs"),
        arg("out"), arg("shard_k"), arg("shard_n"), arg("per_point"), arg("force"),
        arg("max_points"), arg("progress"));
}

}  // namespace kvsim::py
