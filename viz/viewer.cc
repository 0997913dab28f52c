#include "viz/viewer.h"

#include <imgui.h>

#include <cstdio>

namespace kvsim::viz {

Result<std::unique_ptr<Viewer>> Viewer::Create(const ViewerOptions& options) {
  auto plan = PlanModel::Load(options.scenario_path, options.overrides);
  if (!plan.ok()) return plan.status();
  // A P/D scenario opens on its prefill pool (the Page map compares it with the decode pool).
  if (plan->has_cluster()) {
    plan = PlanModel::Load(options.scenario_path, options.overrides, "prefill");
    if (!plan.ok()) return plan.status();
  }
  auto v = std::unique_ptr<Viewer>(new Viewer());
  v->plan_ = std::make_unique<PlanModel>(std::move(plan.value()));
  v->ctx_.plan = v->plan_.get();
  v->ctx_.sweep_csv = options.sweep_csv;
  v->ctx_.trace = options.trace;
  v->ctx_.step_log = options.step_log;
  v->ctx_.schedule = options.schedule;
  v->ctx_.wait_for_runs = options.wait_for_runs;
  // A simulation asked for on the command line runs before the first frame, so that a
  // --screenshot of either panel shows it.
  if (!options.schedule.requests.empty() && options.run_scenario) {
    return Status::Error("bad_flags", "--requests and --run: choose one simulation");
  }
  Result<std::unique_ptr<SimRun>> sim = std::unique_ptr<SimRun>();
  if (!options.schedule.requests.empty()) {
    sim = RunScheduleSimulation(options.schedule);
  } else if (options.run_scenario) {
    if (Status st = CheckScenarioRunnable(*v->plan_); !st.ok()) return st;
    sim = RunScenarioSimulation(v->plan_->scenario(), ScenarioRunDescription(*v->plan_));
  }
  if (!sim.ok()) return sim.status();
  if (sim.value()) {
    v->ctx_.sim = std::move(sim.value());
    // A step past the last one is an error naming the range, not the last step shown
    // silently: a screenshot of "--step 5000" must not show step 90 under that name.
    const auto& steps = v->ctx_.sim->log().steps;
    if (options.step >= 0 && !steps.empty() && options.step > steps.back().step) {
      return Status::Error("bad_flags",
                           "--step " + std::to_string(options.step) +
                               ": beyond the simulation, whose steps run from " +
                               std::to_string(steps.front().step) + " to " +
                               std::to_string(steps.back().step));
    }
    v->ctx_.sim_index = options.step >= 0 ? v->ctx_.sim->IndexOfStep(options.step) : 0;
  } else if (options.step >= 0) {
    return Status::Error("bad_flags", "--step needs a simulation (--requests or --run)");
  }
  v->panels_.push_back(MakePlanPanel());
  v->panels_.push_back(MakePageMapPanel());
  v->panels_.push_back(MakeBlockPoolPanel());
  v->panels_.push_back(MakeSweepPanel());
  v->panels_.push_back(MakeStepsPanel());
  if (!options.panel.empty() && !v->SelectPanel(options.panel)) {
    std::string ids;
    for (const auto& id : v->PanelIds()) ids += (ids.empty() ? "" : ", ") + id;
    return Status::Error("unknown_panel",
                         "--panel " + options.panel + ": unknown panel; known: " + ids);
  }
  return v;
}

std::string ScenarioRunDescription(const PlanModel& plan) {
  std::string s = "kvsim run " + (plan.scenario_path().empty() ? std::string("(built-in default)")
                                                               : plan.scenario_path());
  for (const std::string& o : plan.OverridesFor(plan.knobs())) s += " --set " + o;
  return s + " (base point, no sweep)";
}

Status CheckScenarioRunnable(const PlanModel& plan) {
  if (plan.has_cluster()) {
    return Status::Error("unsupported",
                         "--run: a P/D scenario runs as a cluster of engines; the Steps panel "
                         "runs single-engine scenarios (kvsim run shows the cluster's results)");
  }
  return Status::Ok();
}

std::string Viewer::WindowTitle() const {
  return "kvsim-viz — " + plan_->scenario_name() + " (" + plan_->scenario().model.name + ")";
}

bool Viewer::TakeScreenshotRequest() {
  const bool r = screenshot_;
  screenshot_ = false;
  return r;
}

std::vector<std::string> Viewer::PanelIds() const {
  std::vector<std::string> ids;
  for (const auto& p : panels_) ids.push_back(p->id());
  return ids;
}

bool Viewer::SelectPanel(const std::string& id) {
  for (size_t i = 0; i < panels_.size(); ++i) {
    if (id == panels_[i]->id()) {
      current_ = static_cast<int>(i);
      return true;
    }
  }
  return false;
}

void Viewer::SelectPanel(int i) {
  const int n = num_panels();
  current_ = ((i % n) + n) % n;
}

void Viewer::HandleKeys() {
  ImGuiIO& io = ImGui::GetIO();
  if (io.KeyCtrl && ImGui::IsKeyPressed('S', false)) {
    screenshot_ = true;
    return;
  }
  // Keys typed into a field belong to the field.
  if (io.WantTextInput) return;
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false) ||
      (!io.KeyCtrl && ImGui::IsKeyPressed('Q', false))) {
    quit_ = true;
    return;
  }
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Tab))) {
    SelectPanel(current_ + (io.KeyShift ? -1 : 1));
    return;
  }
  // Arrows move sliders and combos while one is held; only switch panels when idle.
  if (!ImGui::IsAnyItemActive()) {
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_LeftArrow))) SelectPanel(current_ - 1);
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_RightArrow))) SelectPanel(current_ + 1);
  }
  for (int i = 0; i < num_panels() && i < 9; ++i) {
    if (ImGui::IsKeyPressed('1' + i, false)) SelectPanel(i);
  }
}

void Viewer::Frame() {
  HandleKeys();
  ImGuiIO& io = ImGui::GetIO();
  const ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                                 ImGuiWindowFlags_NoSavedSettings |
                                 ImGuiWindowFlags_NoBringToFrontOnFocus |
                                 // The renderer clears to the window colour: one full-screen
                                 // blended pass fewer, which matters under software GL.
                                 ImGuiWindowFlags_NoBackground;
  ImGui::SetNextWindowPos(ImVec2(0, 0));
  ImGui::SetNextWindowSize(io.DisplaySize);
  ImGui::PushStyleVar(ImGuiStyleVar_WindowRounding, 0);
  ImGui::Begin("kvsim-viz", nullptr, flags);
  ImGui::PopStyleVar();

  const float status_h = ImGui::GetFrameHeightWithSpacing();
  const float list_w = 150;
  ImGui::BeginChild("##panels", ImVec2(list_w, -status_h), true);
  ImGui::TextDisabled("%s", plan_->scenario_name().c_str());
  ImGui::Separator();
  for (int i = 0; i < num_panels(); ++i) {
    char label[64];
    std::snprintf(label, sizeof label, "%d  %s", i + 1, panels_[static_cast<size_t>(i)]->title());
    if (ImGui::Selectable(label, i == current_)) current_ = i;
  }
  ImGui::Separator();
  ImGui::TextDisabled("Tab/←/→/1-5 panels");
  ImGui::TextDisabled("Ctrl+S screenshot");
  ImGui::TextDisabled("Esc/Q quit");
  ImGui::EndChild();
  ImGui::SameLine();

  ImGui::BeginChild("##content", ImVec2(0, -status_h), true);
  IPanel& p = *panels_[static_cast<size_t>(current_)];
  ImGui::TextColored(ImVec4(0.55f, 0.75f, 1.0f, 1.0f), "%s", p.title());
  ImGui::SameLine();
  ImGui::TextDisabled("— %s", p.help());
  ImGui::Separator();
  p.Draw(ctx_);
  ImGui::EndChild();

  // Status bar: frame rate first, since responsiveness is a requirement.
  const KvCachePlan* plan = plan_->has_plan() ? &plan_->plan() : nullptr;
  ImGui::Text("%5.1f fps (%4.1f ms)", ctx_.fps > 0 ? ctx_.fps : io.Framerate,
              1000.0 / (ctx_.fps > 0 ? ctx_.fps : std::max(1e-3f, io.Framerate)));
  ImGui::SameLine();
  ImGui::TextDisabled("|");
  ImGui::SameLine();
  if (plan) {
    ImGui::Text("%s · %lld blocks · block %lld tokens", plan_->scenario().model.name.c_str(),
                static_cast<long long>(plan->num_blocks),
                static_cast<long long>(plan->attn_block_size));
  } else {
    ImGui::TextUnformatted("no plan");
  }
  if (!ctx_.status.empty()) {
    ImGui::SameLine();
    ImGui::TextDisabled("|");
    ImGui::SameLine();
    ImGui::TextUnformatted(ctx_.status.c_str());
  }
  ImGui::End();
}

}  // namespace kvsim::viz
