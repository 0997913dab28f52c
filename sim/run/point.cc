#include "sim/run/point.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>

#include "core/check.h"
#include "sim/csv.h"
#include "sim/scenario/cluster_sections.h"
#include "sim/scenario/scenario_loader.h"
#include "sim/trace_export.h"

namespace kvsim {
namespace {

std::atomic<bool> g_progress{false};

}  // namespace

std::string FormatDuration(double s) {
  const int64_t t = static_cast<int64_t>(s + 0.5);
  return fmt::format("{}:{:02d}:{:02d}", t / 3600, static_cast<int>(t / 60 % 60),
                     static_cast<int>(t % 60));
}

void ShowPointProgress(bool on) { g_progress.store(on); }

const SimulationKind* KindOfPoint(const ConfigNode& tree) {
  if (IsClusterTree(tree)) return &ClusterKind();
  const ConfigNode* cache = tree.Find("cache");
  const ConfigNode* off = cache != nullptr ? cache->Find("offload") : nullptr;
  return off != nullptr && off->is_map() ? &EngineOffloadKind() : &EngineKind();
}

PointResult RunPoint(int64_t index, const Labels& labels, const ConfigNode& tree,
                     const std::string& source, const PointOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  auto wall = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  PointResult r;
  r.index = index;
  r.labels = labels;
  auto sc = ParseScenario(tree, source);
  if (!sc.ok()) {
    r.status = sc.status();
    return r;
  }
  r.kind = &KindOf(sc.value());
  auto made = MakeSimulation(sc.value());
  if (!made.ok()) {
    r.status = made.status();
    r.wall_s = wall();
    return r;
  }
  Simulation& sim = *made.value();
  std::unique_ptr<TraceRecorder> trace;
  if (!options.trace_path.empty()) {
    trace = std::make_unique<TraceRecorder>(sc->sim.run.trace_max_requests);
    sim.SetTrace(trace.get());
  }
  std::ofstream step_log;
  if (!options.step_log_path.empty()) {
    step_log.open(options.step_log_path);
    if (!step_log) {
      r.status = Status::Error("write_failed", options.step_log_path + ": cannot write");
      return r;
    }
  }
  // Progress of a long point (ShowPointProgress: `kvsim run` on a terminal): from 2 s of wall
  // time on, one rewritten stderr line a second with the requests finished of the workload's
  // cap, the simulated time and an ETA. It only reads the step records.
  const bool progress = g_progress.load();
  const int64_t cap = sc->sim.workload.num_requests;
  int64_t finished = 0;
  bool shown = false;
  auto last = t0;
  const std::string prefix = labels.empty() ? "" : LabelOf(labels) + ": ";
  KeptOutputs kept;
  kept.seed = static_cast<int64_t>(sc->seed);
  StepRecordSink step_sink = [&](const StepRecord& rec) {
    if (step_log.is_open()) step_log << StepRecordJson(rec) << '\n';
    if (options.keep_steps) kept.steps.push_back(rec);
    if (!progress) return;
    // A prefill instance's "finished" is a prompt handed to a decoder, not a request done.
    if (rec.instance.rfind("prefill", 0) != 0) finished += static_cast<int64_t>(rec.finished.size());
    const auto now = std::chrono::steady_clock::now();
    if (now - t0 < std::chrono::seconds(2) || now - last < std::chrono::seconds(1)) return;
    last = now;
    shown = true;
    const double el = wall();
    const std::string eta = cap > 0 && finished > 0
                                ? FormatDuration(el * static_cast<double>(cap - finished) /
                                                 static_cast<double>(finished))
                                : "?";
    std::fprintf(stderr, "\r  %s%lld%s requests finished, %.1f s simulated, %s elapsed, ETA %s  ",
                 prefix.c_str(), static_cast<long long>(finished),
                 cap > 0 ? fmt::format(" of {}", cap).c_str() : "", sim.now() / 1e9,
                 FormatDuration(el).c_str(), eta.c_str());
  };
  if (step_log.is_open() || progress || options.keep_steps) sim.SetStepLog(&step_sink);
  sim.Run();
  if (shown) std::fputs("\r\033[K", stderr);  // the table follows on a clean line
  if (step_log.is_open()) {
    step_log.close();
    if (!step_log)
      r.status = Status::Error("write_failed", options.step_log_path + ": write failed");
  }
  r.metrics = sim.Metrics();
  // The kind's declared columns are the row's columns (a sweep writes its header first).
  KVSIM_CHECK(r.metrics.items().size() == r.kind->columns.size());
  for (size_t i = 0; i < r.kind->columns.size(); ++i) {
    KVSIM_CHECK(r.metrics.items()[i].name == r.kind->columns[i].name);
  }
  r.workload = sim.Workload();
  r.report = sim.Report();
  r.rejections = sim.Rejections();
  r.overload = sim.Overload();
  r.breakdown = sim.Breakdown();
  r.summary_json = sim.SummaryJson();
  r.reference = sim.CompareWithReference();
  if (options.keep_requests) kept.requests_csv = sim.RequestsCsv();
  if (options.keep_requests || options.keep_steps) r.kept.push_back(std::move(kept));
  if (!options.out_dir.empty()) {
    if (Status s = sim.WriteOutputs(options.out_dir, labels); !s.ok() && r.status.ok()) {
      r.status = s;
    }
  }
  if (trace) {
    if (Status s = trace->Write(options.trace_path); !s.ok() && r.status.ok()) r.status = s;
  }
  r.wall_s = wall();
  return r;
}

RowSchema RowSchemaFor(const std::vector<const SimulationKind*>& kinds, int64_t seeds) {
  RowSchema schema;
  std::vector<const SimulationKind*> seen;
  for (const SimulationKind* k : kinds) {
    if (k != nullptr && std::find(seen.begin(), seen.end(), k) == seen.end()) seen.push_back(k);
  }
  schema.with_kind = seen.size() > 1;
  for (const SimulationKind* k : seen) {
    for (const MetricInfo& c : k->columns) {
      if (std::find(schema.columns.begin(), schema.columns.end(), c.name) == schema.columns.end()) {
        schema.columns.push_back(c.name);
      }
    }
  }
  if (seeds > 1) {  // replicates: the count, then each metric beside its interval
    std::vector<std::string> cols = {"seeds"};
    for (const std::string& c : schema.columns) {
      cols.push_back(c);
      cols.push_back(c + ".ci95");
    }
    schema.columns = std::move(cols);
  }
  return schema;
}

std::vector<std::string> RowFields(const PointResult& r, const RowSchema& schema) {
  std::vector<std::string> fields;
  fields.reserve(schema.width());
  if (schema.with_kind) fields.push_back(r.kind ? r.kind->name : "");
  for (const std::string& c : schema.columns) {
    const Metric* m = r.metrics.Find(c);
    fields.push_back(m ? CsvValue(*m) : "");
  }
  return fields;
}

}  // namespace kvsim
