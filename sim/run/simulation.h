// Simulation: one point of an experiment, whatever simulates it — one vLLM engine
// (sim/engine.h) or a prefill/decode cluster (sim/cluster/cluster_sim.h). The run layer
// (sim/run/) is the only code that knows which kinds exist: the sweep sees points and rows
// (sim/run/point.h), and `kvsim run` prints through sim/run/run_report.h, without asking
// what ran.
//
//   MakeSimulation(scenario)    the kind the scenario asks for (`cluster:` → P/D)
//   SetTrace / SetStepLog       optional observers, before Run()
//   Run()                       simulate, once
//   Metrics()                   the point's metrics: exactly kind().columns, in that order
//   WriteOutputs(dir, labels)   metrics.json and requests.csv of the point
//   RequestsCsv()               requests.csv's text (the Python module keeps it in memory)
//   Report()                    what `kvsim run` prints about the point (SimulationKind says
//                               where: above the table, or instead of it)
// Everything a Simulation returns depends only on the scenario and its seed.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "sim/event.h"
#include "sim/instance/step_log_io.h"
#include "sim/labels.h"
#include "sim/report/reference_report.h"
#include "sim/run/metric_set.h"

namespace kvsim {

struct Scenario;
class TraceRecorder;

// What kind of simulation a point is, and how `kvsim run` presents points of that kind.
struct SimulationKind {
  // How `kvsim run` prints a run whose points are all of this kind:
  //   kHeaderThenTable  the first point's Report() (the scenario in a few lines), then the
  //                     table, even for one point (single engines);
  //   kReportOrTable    one point: its Report() alone; several: the table alone (P/D).
  enum class Presentation { kHeaderThenTable, kReportOrTable };

  std::string name;                 // "engine" | "pd": the CSV's kind column in mixed sweeps
  std::vector<MetricInfo> columns;  // the metrics of every point of this kind, in order
  TableLayout table;                // its rows in `kvsim run`'s table
  Presentation presentation = Presentation::kHeaderThenTable;
};

const SimulationKind& EngineKind();
// A single engine with a CPU offloading tier (cache.offload): the engine's columns, then the
// tier's (CPU hit rate, GiB loaded / stored, tier occupancy, load wait).
const SimulationKind& EngineOffloadKind();
const SimulationKind& ClusterKind();
// The kind `sc` runs as.
const SimulationKind& KindOf(const Scenario& sc);

// A point's simulated metrics beside the measured ones of its scenario's `reference:`.
struct ReferenceComparison {
  std::string source;  // where the measurements come from ("" if not said)
  std::vector<MetricComparison> rows;
  // Per load stage with measured metrics: "stage K (R/s for D s)" and its rows, from the
  // finished requests that arrived in that stage (StageMetrics).
  std::vector<std::pair<std::string, std::vector<MetricComparison>>> stages;
};

class Simulation {
 public:
  virtual ~Simulation() = default;
  virtual const SimulationKind& kind() const = 0;

  // Records a Chrome/Perfetto trace while running (not owned; must outlive Run()).
  virtual void SetTrace(TraceRecorder* trace) = 0;
  // One step-log record per executed step of every instance (docs/step-log.md). Not owned;
  // must outlive Run().
  virtual void SetStepLog(const StepRecordSink* sink) = 0;
  virtual void Run() = 0;
  // Simulated time so far (progress lines read it while Run() calls the step log).
  virtual Tick now() const = 0;

  virtual MetricSet Metrics() const = 0;
  // DIR/metrics.json and DIR/requests.csv (DIR is created), `labels` naming the point.
  virtual Status WriteOutputs(const std::string& dir, const Labels& labels) const = 0;
  // The text of that requests.csv.
  virtual std::string RequestsCsv() const = 0;
  virtual std::string Report() const = 0;
  // The workload in one line, with any fallback note.
  virtual std::string Workload() const = 0;
  // "" when no request was rejected, else "R of N requests rejected: why".
  virtual std::string Rejections() const = 0;
  // "" unless the queue grew through the run (arrivals beyond what was served), else why.
  virtual std::string Overload() const { return ""; }
  // What `kvsim run` prints below the table about the point's parts (one line per DP rank);
  // "" when there is nothing to say.
  virtual std::string Breakdown() const { return ""; }
  // The full summary (metrics.json's "summary") as JSON text.
  virtual std::string SummaryJson() const = 0;
  // Simulated against measured, when the scenario reproduces a measured run.
  virtual std::optional<ReferenceComparison> CompareWithReference() const = 0;
};

// Builds the simulation `sc` describes; bad input (plans, setups, workloads) is a Status.
Result<std::unique_ptr<Simulation>> MakeSimulation(const Scenario& sc);

}  // namespace kvsim
