// IPanel: one page of the viewer (Plan, Page map, Block pool, Sweep, Steps), each in its own file
// under viz/panels/ (Tracy's one-translation-unit-per-view split). The Viewer owns the
// panels and the shared ViewerContext and calls Draw() for the visible one inside the main
// content region; a panel keeps its own UI state (zoom, selection) across frames.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "viz/plan_model.h"
#include "viz/sim_run.h"

namespace kvsim::viz {

// What every panel may read or change: the live plan, the simulation the Steps and Block pool
// panels share, and a one-line status message.
struct ViewerContext {
  PlanModel* plan = nullptr;
  std::string sweep_csv;     // --sweep: the CSV the Sweep panel opens at start
  std::string trace;         // --trace: the request trace the Block pool panel replays
  std::string step_log;      // --steps: the step log the Steps panel opens
  ScheduleOptions schedule;  // --requests and the schedule flags: the Steps panel's inputs
  // A simulation the Steps panel ran (or the command line asked for). The Block pool panel
  // shows its pool while it is set, and both panels scrub the same record, `sim_index` (an
  // index into sim->log().steps). Null: the Steps panel shows a step-log file and the Block
  // pool panel replays a trace.
  std::shared_ptr<const SimRun> sim;
  int64_t sim_index = 0;
  // Headless runs (--screenshot, --frames): a run a panel starts by itself is waited for, so
  // the frame drawn shows its result rather than "running...".
  bool wait_for_runs = false;
  std::string status;  // shown in the status bar until replaced
  double fps = 0;
};

// "kvsim run SCENARIO --set ... (base point, no sweep)": what RunScenarioSimulation runs for the
// loaded plan.
std::string ScenarioRunDescription(const PlanModel& plan);
// Refuses P/D scenarios (the plan then shows one pool of a cluster), else nothing.
Status CheckScenarioRunnable(const PlanModel& plan);

class IPanel {
 public:
  virtual ~IPanel() = default;
  // Short id used by --panel and in file names: "plan", "page_map", "block_pool", "sweep".
  virtual const char* id() const = 0;
  virtual const char* title() const = 0;
  // The help line drawn at the top of the panel: what it shows and which keys/mouse do what.
  virtual const char* help() const = 0;
  virtual void Draw(ViewerContext& ctx) = 0;
  // The error the panel shows (a bad --trace or --sweep file, a refused plan), or "" when it
  // shows data. `kvsim-viz --screenshot` exits non-zero when this is set, so scripts notice.
  virtual std::string error(const ViewerContext& ctx) const {
    return ctx.plan && !ctx.plan->ok() ? ctx.plan->error() : "";
  }
};

std::unique_ptr<IPanel> MakePlanPanel();
std::unique_ptr<IPanel> MakePageMapPanel();
std::unique_ptr<IPanel> MakeBlockPoolPanel();
std::unique_ptr<IPanel> MakeSweepPanel();
std::unique_ptr<IPanel> MakeStepsPanel();

}  // namespace kvsim::viz
