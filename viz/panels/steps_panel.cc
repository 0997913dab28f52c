#include "viz/panels/steps_panel.h"

#include <fmt/format.h>
#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "viz/line_chart.h"
#include "viz/ui_util.h"

namespace kvsim::viz {

Rgba ChunkColour(ChunkKind k) {
  switch (k) {
    case ChunkKind::kPrefill: return steps_palette::kPrefill;
    case ChunkKind::kDecode: return steps_palette::kDecode;
    case ChunkKind::kRecompute: return steps_palette::kRecompute;
  }
  return steps_palette::kPrefill;
}

namespace {

const char* KindName(ChunkKind k) {
  switch (k) {
    case ChunkKind::kPrefill: return "prefill";
    case ChunkKind::kDecode: return "decode";
    case ChunkKind::kRecompute: return "recompute";
  }
  return "?";
}

std::string IdList(const StepLog& log, const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ", ";
    if (i == 40) return s + fmt::format("... ({} in all)", ids.size());
    s += log.request_ids[static_cast<size_t>(ids[i])];
  }
  return s.empty() ? "-" : s;
}

}  // namespace

StepsPanel::~StepsPanel() {
  if (pending_.valid()) pending_.wait();  // the worker reads nothing of ours, but finish it
}

Status StepsPanel::Open(const std::string& path) {
  auto log = ReadStepLog(path);
  loaded_ = path;
  if (!log.ok()) {
    error_ = log.status().message();
    file_log_.reset();
    return log.status();
  }
  error_.clear();
  file_log_ = std::make_unique<StepLog>(std::move(log).value());
  selected_ = 0;
  return Status::Ok();
}

void StepsPanel::Run(ViewerContext& ctx, Source source, bool wait) {
  if (pending_.valid()) return;  // one run at a time
  source_ = source;
  error_.clear();
  if (source == Source::kSchedule) {
    ScheduleOptions o = ctx.schedule;
    pending_ = std::async(std::launch::async, [o] { return RunScheduleSimulation(o); });
  } else if (source == Source::kScenario) {
    if (Status st = CheckScenarioRunnable(*ctx.plan); !st.ok()) {
      error_ = st.message();
      return;
    }
    // The worker gets its own copy of the scenario: the plan may change meanwhile.
    Scenario sc = ctx.plan->scenario();
    std::string desc = ScenarioRunDescription(*ctx.plan);
    pending_ = std::async(std::launch::async, [sc = std::move(sc), desc = std::move(desc)] {
      return RunScenarioSimulation(sc, desc);
    });
  }
  PollRun(ctx, wait);
}

void StepsPanel::SetSource(ViewerContext& ctx, Source source) {
  started_ = true;
  source_ = source;
  error_.clear();
  // A step-log file has no pool: the Block pool panel goes back to its trace replay.
  if (source_ == Source::kFile) ctx.sim.reset();
}

void StepsPanel::PollRun(ViewerContext& ctx, bool wait) {
  if (!pending_.valid()) return;
  if (!wait && pending_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
  auto r = pending_.get();
  if (!r.ok()) {
    error_ = r.status().message();
    return;
  }
  ctx.sim = std::move(r.value());
  ctx.sim_index = 0;
  selected_ = 0;
  ctx.status = fmt::format("simulated {} steps", ctx.sim->num_steps());
}

void StepsPanel::DrawScheduleFlags(ViewerContext& ctx) {
  ScheduleOptions& o = ctx.schedule;
  auto num = [](const char* label, int64_t* v, float w, const char* help) {
    ImGui::SameLine();
    ImGui::PushItemWidth(w);
    ImGui::InputScalar(label, ImGuiDataType_S64, v);
    ImGui::PopItemWidth();
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", help);
  };
  auto choice = [](const char* label, std::string* v, std::initializer_list<const char*> opts,
                   float w) {
    ImGui::SameLine();
    ImGui::PushItemWidth(w);
    if (ImGui::BeginCombo(label, v->c_str())) {
      for (const char* c : opts) {
        if (ImGui::Selectable(c, *v == c)) *v = c;
      }
      ImGui::EndCombo();
    }
    ImGui::PopItemWidth();
  };
  ImGui::TextDisabled("GPU");
  num("block size", &o.block_size, 46, "--block-size: tokens per KV block");
  num("GPU blocks", &o.num_gpu_blocks, 58, "--num-gpu-blocks: N - 1 usable (block 0 is null)");
  num("budget", &o.max_num_batched_tokens, 58, "--max-num-batched-tokens: tokens per step");
  num("max seqs", &o.max_num_seqs, 46, "--max-num-seqs: running requests at most");
  choice("policy", &o.policy, {"fcfs", "priority"}, 80);
  choice("semantics", &o.semantics, {"latest", "classic"}, 80);
  ImGui::SameLine();
  ImGui::Checkbox("async", &o.async_scheduling);
  ImGui::TextDisabled("CPU");
  num("CPU blocks", &o.num_cpu_blocks, 58, "--num-cpu-blocks: the offloading tier (0 = none)");
  num("offload block", &o.offload_block_size, 46,
      "--offload-block-size: tokens, a multiple of the block size (0 = equal)");
  choice("eviction", &o.eviction_policy, {"lru", "arc"}, 60);
  choice("copies", &o.xfer_timing, {"instant", "next-step"}, 96);
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip("--xfer-timing: a copy finishes with the output of its step or the next");
  }
}

void StepsPanel::DrawSource(ViewerContext& ctx) {
  static const char* kSources[] = {"step log file", "kvsim schedule (step clock)",
                                   "scenario (engine)"};
  ImGui::PushItemWidth(210);
  int src = static_cast<int>(source_);
  if (ImGui::Combo("##source", &src, kSources, 3)) SetSource(ctx, static_cast<Source>(src));
  ImGui::PopItemWidth();
  ImGui::SameLine();
  const bool busy = pending_.valid();
  switch (source_) {
    case Source::kFile: {
      ImGui::PushItemWidth(420);
      ImGui::InputText("step log", path_, sizeof path_);
      ImGui::PopItemWidth();
      HelpMarker(
          "a JSONL step log: kvsim schedule REQUESTS.jsonl --step-log OUT.jsonl, or kvsim run "
          "--step-log OUT.jsonl (docs/step-log.md has the record format)");
      ImGui::SameLine();
      const bool reload = ImGui::Button("open");
      if (path_[0] && (reload || loaded_ != path_)) {
        (void)Open(path_);
        ctx.sim.reset();
      }
      break;
    }
    case Source::kSchedule: {
      ImGui::PushItemWidth(380);
      if (ImGui::InputText("requests", requests_, sizeof requests_))
        ctx.schedule.requests = requests_;
      ImGui::PopItemWidth();
      HelpMarker(
          "REQUESTS.jsonl for kvsim schedule: {\"id\", \"tokens\", \"max_tokens\", "
          "\"arrival_step\", \"priority\"} per line; e.g. scenarios/traces/sample_requests.jsonl "
          "with 40 GPU blocks, budget 64 and 200 CPU blocks");
      ImGui::SameLine();
      if (busy) {
        ImGui::TextDisabled("running...");
      } else if (ImGui::Button("run")) {
        Run(ctx, Source::kSchedule);
      }
      DrawScheduleFlags(ctx);
      break;
    }
    case Source::kScenario: {
      ImGui::TextUnformatted(ScenarioRunDescription(*ctx.plan).c_str());
      HelpMarker(
          "the loaded scenario (with the Plan panel's knobs) through the discrete-event engine, "
          "as kvsim run does for one point; a sweep: block is not expanded");
      ImGui::SameLine();
      if (busy) {
        ImGui::TextDisabled("running...");
      } else if (ImGui::Button("run")) {
        Run(ctx, Source::kScenario);
      }
      break;
    }
  }
}

void StepsPanel::Draw(ViewerContext& ctx) {
  if (!started_) {
    started_ = true;
    // Nothing on the command line for this panel (no --steps, --requests or --run): it opens
    // on the loaded scenario's own simulation, kvsim run's base point through the engine,
    // rather than on an empty state. A P/D scenario (a cluster, not one engine) or a plan in
    // error keeps the empty state.
    const bool open_on_scenario = !ctx.sim && ctx.step_log.empty() &&
                                  ctx.schedule == ScheduleOptions{} && ctx.plan->ok() &&
                                  CheckScenarioRunnable(*ctx.plan).ok();
    if (!ctx.step_log.empty()) std::strncpy(path_, ctx.step_log.c_str(), sizeof path_ - 1);
    if (ctx.sim) {
      source_ = ctx.sim->kind() == SimRun::Kind::kSchedule ? Source::kSchedule : Source::kScenario;
    } else if (!ctx.schedule.requests.empty()) {
      source_ = Source::kSchedule;
    }
    if (open_on_scenario) Run(ctx, Source::kScenario, ctx.wait_for_runs);
    if (ctx.schedule == ScheduleOptions{}) {
      // Nothing given: the README's two-tier demo (the shipped sample, run from the repo root).
      ctx.schedule.requests = "scenarios/traces/sample_requests.jsonl";
      ctx.schedule.num_gpu_blocks = 40;
      ctx.schedule.max_num_batched_tokens = 64;
      ctx.schedule.num_cpu_blocks = 200;
    }
    std::strncpy(requests_, ctx.schedule.requests.c_str(), sizeof requests_ - 1);
  }
  PollRun(ctx, false);
  DrawSource(ctx);
  if (!error_.empty()) {
    ImGui::PushTextWrapPos(0);
    ImGui::TextColored(ImVec4(1, 0.45f, 0.4f, 1), "%s", error_.c_str());
    ImGui::PopTextWrapPos();
  }
  // The log shown: the simulation's when it is of the source picked, else the file's.
  const SimRun::Kind want =
      source_ == Source::kSchedule ? SimRun::Kind::kSchedule : SimRun::Kind::kScenario;
  sim_ = source_ != Source::kFile && ctx.sim && ctx.sim->kind() == want ? ctx.sim.get() : nullptr;
  log_ = sim_ ? &sim_->log() : source_ == Source::kFile ? file_log_.get() : nullptr;
  if (!log_) {
    if (!error_.empty() || pending_.valid()) return;
    if (source_ == Source::kFile) {
      ImGui::TextWrapped(
          "No step log open. Write one with `kvsim schedule REQUESTS.jsonl --step-log "
          "steps.jsonl` and open it here or with kvsim-viz --steps steps.jsonl, or pick a "
          "simulation above.");
      if (ctx.plan->has_cluster()) {
        ImGui::TextDisabled(
            "(a P/D scenario is a cluster of engines, so it is not run here at start; kvsim run "
            "shows the cluster's results)");
      }
    } else {
      ImGui::TextWrapped("Press run: the Block pool panel then shows the simulated pool.");
    }
    return;
  }
  const StepLog& log = *log_;
  const int64_t n = static_cast<int64_t>(log.steps.size());
  if (sim_) selected_ = ctx.sim_index;  // the Block pool panel may have moved it
  HandleKeys();
  selected_ = std::clamp<int64_t>(selected_, 0, n - 1);
  ImGui::Text("%lld steps (%lld..%lld), %zu requests, %lld preemptions%s",
              static_cast<long long>(n), static_cast<long long>(log.steps.front().step),
              static_cast<long long>(log.steps.back().step), log.request_ids.size(),
              static_cast<long long>(log.total_preemptions),
              log.has_summary || sim_ ? "" : "  (no summary line: decode = 1-token chunks)");
  if (sim_) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
    ImGui::TextWrapped(
        "simulated: %s  |  pool snapshots (Block pool panel): %lld of %lld steps, %.2f MiB "
        "(keyframes + deltas, cap %lld MiB)%s",
        sim_->description().c_str(), static_cast<long long>(sim_->num_snapshots()),
        static_cast<long long>(n), static_cast<double>(sim_->snapshot_bytes()) / (1 << 20),
        static_cast<long long>(sim_->snapshot_budget() >> 20),
        sim_->truncated() ? "; later records dropped" : "");
    ImGui::PopStyleColor();
  }
  int sel = static_cast<int>(selected_);
  ImGui::PushItemWidth(-260);
  ImGui::SliderInt("##step", &sel, 0, static_cast<int>(n - 1), "record %d");
  ImGui::PopItemWidth();
  selected_ = std::clamp<int64_t>(sel, 0, n - 1);
  ImGui::SameLine();
  ImGui::PushItemWidth(150);
  ImGui::SliderInt("steps shown", &window_, 10, 1000);
  ImGui::PopItemWidth();

  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float legend_h = ImGui::GetTextLineHeightWithSpacing() * 1.5f;
  const float record_h = ImGui::GetTextLineHeightWithSpacing() * 6.5f;
  const float rest = std::max(200.0f, avail.y - legend_h - record_h);
  DrawBars(avail.x, rest * 0.6f);
  std::vector<LegendEntry> legend = {
      {"prefill chunk", steps_palette::kPrefill, false},
      {"decode", steps_palette::kDecode, false},
      {"recompute after preemption", steps_palette::kRecompute, false},
      {"preemption", steps_palette::kPreempt, false}};
  if (log.steps.front().has_offload()) {
    legend.push_back(
        {"CPU tier load started (to be scheduled after it)", palette::kCpuLoading, false});
  }
  DrawLegend(legend);
  DrawLines(avail.x, rest * 0.4f - 8);
  DrawRecord();
  if (sim_) ctx.sim_index = selected_;
}

void StepsPanel::HandleKeys() {
  const ImGuiIO& io = ImGui::GetIO();
  if (io.WantTextInput) return;
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_PageDown))) ++selected_;
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_PageUp))) --selected_;
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Home))) selected_ = 0;
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_End))) {
    selected_ = static_cast<int64_t>(log_->steps.size()) - 1;
  }
}

void StepsPanel::DrawBars(float width, float height) {
  const StepLog& log = *log_;
  const int64_t n = static_cast<int64_t>(log.steps.size());
  const int64_t shown = std::min<int64_t>(window_, n);
  // The window keeps the selected record in view, a third from the left when it can.
  const int64_t first = std::clamp<int64_t>(selected_ - shown / 3, 0, n - shown);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 o = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton("##bars", ImVec2(width, height));
  const bool hovered = ImGui::IsItemHovered();
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  dl->AddRectFilled(o, ImVec2(o.x + width, o.y + height), palette::kBackground);
  const float fh = ImGui::GetTextLineHeight();
  const float left = 64, right = 16, top = fh * 1.6f, bottom = fh * 2.2f;
  const ImVec2 a(o.x + left, o.y + top), b(o.x + width - right, o.y + height - bottom);
  const ImU32 axis = IM_COL32(200, 200, 210, 255);
  const ImU32 grid = IM_COL32(70, 72, 80, 255);
  const double ymax = std::max<double>(1, static_cast<double>(log.max_tokens_in_step)) * 1.05;
  auto py = [&](double y) { return b.y - static_cast<float>(y / ymax) * (b.y - a.y); };
  for (double v : NiceTicks(0, ymax, 5)) {
    const float y = py(v);
    dl->AddLine(ImVec2(a.x, y), ImVec2(b.x, y), grid);
    const std::string s = FormatTick(v);
    const ImVec2 ts = ImGui::CalcTextSize(s.c_str());
    dl->AddText(ImVec2(a.x - ts.x - 6, y - ts.y / 2), axis, s.c_str());
  }
  dl->AddText(ImVec2(a.x, o.y + 2), axis, "tokens scheduled per step, stacked by request");
  const float slot = (b.x - a.x) / static_cast<float>(shown);
  const float bar = std::max(1.0f, slot * 0.8f);
  const StepChunk* hover_chunk = nullptr;
  const StepRecord* hover_step = nullptr;
  for (int64_t i = 0; i < shown; ++i) {
    const StepRecord& s = log.steps[static_cast<size_t>(first + i)];
    const float x0 = a.x + slot * static_cast<float>(i) + (slot - bar) / 2;
    const float x1 = x0 + bar;
    if (first + i == selected_) {
      dl->AddRectFilled(ImVec2(x0 - (slot - bar) / 2, a.y), ImVec2(x0 - (slot - bar) / 2 + slot, b.y),
                        IM_COL32(60, 64, 80, 255));
    }
    double acc = 0;
    // Consecutive segments of one kind too thin to tell apart (a decode of one token among
    // hundreds) are drawn as one rectangle: a busy engine step has hundreds of chunks, and
    // a rectangle each would cost more than the software renderer's frame budget.
    float run_y0 = 0, run_y1 = 0;
    Rgba run_col = 0;
    bool run_open = false;
    auto flush = [&] {
      if (run_open) dl->AddRectFilled(ImVec2(x0, run_y1), ImVec2(x1, run_y0), run_col);
      run_open = false;
    };
    for (const StepChunk& c : s.scheduled) {
      const float y0 = py(acc), y1 = py(acc + static_cast<double>(c.n));
      const Rgba col = ChunkColour(c.kind);
      const bool tall = y0 - y1 > 3 && bar > 4;
      if (tall || !run_open || col != run_col) flush();
      if (tall) {
        dl->AddRectFilled(ImVec2(x0, y1), ImVec2(x1, y0), col);
        dl->AddLine(ImVec2(x0, y1), ImVec2(x1, y1), IM_COL32(24, 26, 30, 255));  // separator
      } else if (run_open) {
        run_y1 = y1;
      } else {
        run_open = true;
        run_col = col;
        run_y0 = y0;
        run_y1 = y1;
      }
      if (hovered && mouse.x >= x0 && mouse.x < x1 && mouse.y >= y1 && mouse.y <= y0) {
        hover_chunk = &c;
        hover_step = &s;
      }
      acc += static_cast<double>(c.n);
    }
    flush();
    float top = py(acc) - 4;
    if (!s.preempted.empty()) {  // a red triangle above the bar
      const float cx = (x0 + x1) / 2, ty = top;
      const float r = std::clamp(slot * 0.45f, 3.0f, 7.0f);
      dl->AddTriangleFilled(ImVec2(cx - r, ty - 2 * r), ImVec2(cx + r, ty - 2 * r), ImVec2(cx, ty),
                            steps_palette::kPreempt);
      top -= 2 * r + 2;
    }
    if (s.cpu_load_blocks > 0) {  // a magenta square above the bar: the CPU tier loads
      const float cx = (x0 + x1) / 2;
      const float r = std::clamp(slot * 0.4f, 3.0f, 6.0f);
      dl->AddRectFilled(ImVec2(cx - r, top - 2 * r), ImVec2(cx + r, top), palette::kCpuLoading);
    }
    if (hovered && !hover_step && mouse.x >= x0 - (slot - bar) / 2 &&
        mouse.x < x0 - (slot - bar) / 2 + slot) {
      hover_step = &s;
      if (ImGui::IsMouseClicked(ImGuiMouseButton_Left)) selected_ = first + i;
    }
  }
  // x ticks: step numbers at about 8 places.
  const int64_t every = std::max<int64_t>(1, shown / 8);
  for (int64_t i = 0; i < shown; i += every) {
    const std::string s = std::to_string(log.steps[static_cast<size_t>(first + i)].step);
    const float x = a.x + slot * (static_cast<float>(i) + 0.5f);
    const ImVec2 ts = ImGui::CalcTextSize(s.c_str());
    dl->AddText(ImVec2(x - ts.x / 2, b.y + 4), axis, s.c_str());
  }
  dl->AddText(ImVec2((a.x + b.x) / 2 - 14, b.y + fh + 6), axis, "step");
  dl->AddLine(ImVec2(a.x, b.y), ImVec2(b.x, b.y), axis, 1.5f);
  dl->AddLine(ImVec2(a.x, a.y), ImVec2(a.x, b.y), axis, 1.5f);
  if (hover_chunk) {
    ImGui::BeginTooltip();
    ImGui::Text("step %lld: request %s", static_cast<long long>(hover_step->step),
                log.request_ids[static_cast<size_t>(hover_chunk->request)].c_str());
    ImGui::Text("%s: %lld tokens from position %lld", KindName(hover_chunk->kind),
                static_cast<long long>(hover_chunk->n), static_cast<long long>(hover_chunk->before));
    if (hover_chunk->hit >= 0) {
      ImGui::Text("taken from the waiting queue, prefix hit %lld tokens",
                  static_cast<long long>(hover_chunk->hit));
    }
    ImGui::EndTooltip();
  } else if (hover_step) {
    ImGui::BeginTooltip();
    ImGui::Text("step %lld: %zu requests, %lld tokens, %lld free blocks (click to select)",
                static_cast<long long>(hover_step->step), hover_step->scheduled.size(),
                static_cast<long long>(hover_step->num_scheduled_tokens()),
                static_cast<long long>(hover_step->num_free_blocks));
    if (hover_step->cpu_load_blocks > 0) {
      ImGui::Text("CPU tier: loads of %lld offloaded blocks start (loading: %s)",
                  static_cast<long long>(hover_step->cpu_load_blocks),
                  IdList(log, hover_step->loading).c_str());
    }
    ImGui::EndTooltip();
  }
}

void StepsPanel::DrawLines(float width, float height) {
  const StepLog& log = *log_;
  const int64_t n = static_cast<int64_t>(log.steps.size());
  const int64_t shown = std::min<int64_t>(window_, n);
  const int64_t first = std::clamp<int64_t>(selected_ - shown / 3, 0, n - shown);
  ChartData data;
  Series free{"free blocks", {}}, running{"running", {}}, waiting{"waiting", {}};
  for (int64_t i = first; i < first + shown; ++i) {
    const StepRecord& s = log.steps[static_cast<size_t>(i)];
    const double x = static_cast<double>(s.step);
    free.points.push_back({x, static_cast<double>(s.num_free_blocks), 1, 0, false});
    if (s.running >= 0) running.points.push_back({x, static_cast<double>(s.running), 1, 0, false});
    if (s.waiting >= 0) waiting.points.push_back({x, static_cast<double>(s.waiting), 1, 0, false});
  }
  data.series.push_back(std::move(free));
  if (!running.points.empty()) data.series.push_back(std::move(running));
  if (!waiting.points.empty()) data.series.push_back(std::move(waiting));
  ChartOptions opt;
  opt.title = "free blocks after each decision; running and waiting requests";
  opt.x_label = "step";
  opt.marker_x = static_cast<double>(log.steps[static_cast<size_t>(selected_)].step);
  DrawLineChart(data, opt, ImVec2(width, std::max(120.0f, height)));
}

void StepsPanel::DrawRecord() {
  const StepLog& log = *log_;
  const StepRecord& s = log.steps[static_cast<size_t>(selected_)];
  std::string sched;
  for (size_t i = 0; i < s.scheduled.size(); ++i) {
    const StepChunk& c = s.scheduled[i];
    if (i == 24) {
      sched += fmt::format(" ... ({} in all)", s.scheduled.size());
      break;
    }
    sched += fmt::format("{}[{}, {}, {}, {}]", i ? " " : "",
                         log.request_ids[static_cast<size_t>(c.request)], c.n, c.before, c.hit);
  }
  ImGui::Text("step %lld: %zu scheduled, %lld tokens, %lld free blocks%s%s",
              static_cast<long long>(s.step), s.scheduled.size(),
              static_cast<long long>(s.num_scheduled_tokens()),
              static_cast<long long>(s.num_free_blocks),
              s.running >= 0 ? fmt::format(", {} running", s.running).c_str() : "",
              s.waiting >= 0 ? fmt::format(", {} waiting", s.waiting).c_str() : "");
  ImGui::PushTextWrapPos(0);
  ImGui::TextWrapped("scheduled [id, n, before, hit]: %s", sched.empty() ? "-" : sched.c_str());
  if (s.preempted.empty()) {
    ImGui::Text("preempted: -");
  } else {
    ImGui::TextColored(ImVec4(0.92f, 0.45f, 0.4f, 1), "preempted: %s",
                       IdList(log, s.preempted).c_str());
  }
  ImGui::Text("finished: %s", IdList(log, s.finished).c_str());
  if (s.has_offload()) {
    ImGui::Text(
        "CPU tier: %lld blocks used, %lld ready; this decision loads %lld, stores %lld "
        "offloaded blocks; loading: %s",
        static_cast<long long>(s.cpu_blocks_used), static_cast<long long>(s.cpu_blocks_ready),
        static_cast<long long>(s.cpu_load_blocks), static_cast<long long>(s.cpu_store_blocks),
        IdList(log, s.loading).c_str());
  }
  if (s.t_start_ns >= 0 && s.t_end_ns >= 0) {
    ImGui::Text("time %.3f .. %.3f ms (%.3f ms)", 1e-6 * static_cast<double>(s.t_start_ns),
                1e-6 * static_cast<double>(s.t_end_ns),
                1e-6 * static_cast<double>(s.t_end_ns - s.t_start_ns));
  }
  ImGui::PopTextWrapPos();
}

std::unique_ptr<IPanel> MakeStepsPanel() { return std::make_unique<StepsPanel>(); }

}  // namespace kvsim::viz
