// Viewer: the whole kvsim-viz UI for one scenario, independent of the window system.
// Frame() draws one ImGui frame (call it between ImGui::NewFrame() and ImGui::Render()):
// a left list of panels, the visible panel with its help line, and a status bar. It also
// handles the global keys:
//   Tab / Shift+Tab, Left / Right (when no widget is active), 1–5   switch panels
//   Esc or Q                                                       quit
//   Ctrl+S                                                         screenshot request
// main.cc owns the GLFW window and the OpenGL renderer; tests drive Frame() in a headless
// ImGui context. Keys are read as GLFW key codes (ASCII for letters and digits), which is
// what the GLFW backend of ImGui 1.86 writes into io.KeysDown.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "viz/panel.h"
#include "viz/plan_model.h"

namespace kvsim::viz {

struct ViewerOptions {
  std::string scenario_path;  // empty: the built-in default scenario
  std::vector<std::string> overrides;
  std::string sweep_csv;
  std::string trace;     // empty: a built-in sample trace
  std::string step_log;  // --steps: the step log the Steps panel opens
  // --requests (and the schedule flags): run kvsim schedule's step clock at start.
  ScheduleOptions schedule;
  bool run_scenario = false;   // --run: run the scenario through the engine at start
  int64_t step = -1;           // --step: the record to select first (its step number)
  std::string panel = "plan";  // initial panel id
  // Wait for runs the panels start by themselves (the Steps panel's opening run of the
  // scenario) before drawing: what --screenshot and --frames need.
  bool wait_for_runs = false;
};

class Viewer {
 public:
  static Result<std::unique_ptr<Viewer>> Create(const ViewerOptions& options);

  void Frame();

  std::string WindowTitle() const;
  bool quit_requested() const { return quit_; }
  // True once after Ctrl+S; main writes the PNG and calls SetStatus().
  bool TakeScreenshotRequest();
  void SetStatus(const std::string& s) { ctx_.status = s; }
  void SetFps(double fps) { ctx_.fps = fps; }

  int panel_index() const { return current_; }
  int num_panels() const { return static_cast<int>(panels_.size()); }
  IPanel& panel(int i) { return *panels_[static_cast<size_t>(i)]; }
  const IPanel& current_panel() const { return *panels_[static_cast<size_t>(current_)]; }
  // The error the visible panel shows, or "" (IPanel::error).
  std::string panel_error() const { return current_panel().error(ctx_); }
  bool SelectPanel(const std::string& id);
  void SelectPanel(int i);
  std::vector<std::string> PanelIds() const;
  PlanModel& plan() { return *plan_; }
  ViewerContext& context() { return ctx_; }

 private:
  void HandleKeys();

  std::unique_ptr<PlanModel> plan_;
  ViewerContext ctx_;
  std::vector<std::unique_ptr<IPanel>> panels_;
  int current_ = 0;
  bool quit_ = false;
  bool screenshot_ = false;
};

}  // namespace kvsim::viz
