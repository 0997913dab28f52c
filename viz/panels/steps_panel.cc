#include "viz/panels/steps_panel.h"

#include <fmt/format.h>
#include <imgui.h>

#include <algorithm>
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

Status StepsPanel::Open(const std::string& path) {
  auto log = ReadStepLog(path);
  loaded_ = path;
  if (!log.ok()) {
    error_ = log.status().message();
    log_.reset();
    return log.status();
  }
  error_.clear();
  log_ = std::make_unique<StepLog>(std::move(log).value());
  selected_ = 0;
  return Status::Ok();
}

void StepsPanel::Draw(ViewerContext& ctx) {
  if (!path_[0] && !ctx.step_log.empty()) {
    std::strncpy(path_, ctx.step_log.c_str(), sizeof path_ - 1);
  }
  ImGui::PushItemWidth(420);
  ImGui::InputText("step log", path_, sizeof path_);
  ImGui::PopItemWidth();
  HelpMarker(
      "a JSONL step log: kvsim schedule REQUESTS.jsonl --step-log OUT.jsonl, or kvsim run "
      "--step-log OUT.jsonl (shared/reference/step-log.md has the record format)");
  ImGui::SameLine();
  const bool reload = ImGui::Button("open");
  if (path_[0] && (reload || loaded_ != path_)) (void)Open(path_);
  if (!error_.empty()) {
    ImGui::PushTextWrapPos(0);
    ImGui::TextColored(ImVec4(1, 0.45f, 0.4f, 1), "%s", error_.c_str());
    ImGui::PopTextWrapPos();
  }
  if (!log_) {
    if (error_.empty()) {
      ImGui::TextWrapped(
          "No step log open. Write one with `kvsim schedule REQUESTS.jsonl --step-log "
          "steps.jsonl` and open it here or with kvsim-viz --steps steps.jsonl.");
    }
    return;
  }
  const StepLog& log = *log_;
  const int64_t n = static_cast<int64_t>(log.steps.size());
  HandleKeys();
  selected_ = std::clamp<int64_t>(selected_, 0, n - 1);
  ImGui::Text("%lld steps (%lld..%lld), %zu requests, %lld preemptions%s",
              static_cast<long long>(n), static_cast<long long>(log.steps.front().step),
              static_cast<long long>(log.steps.back().step), log.request_ids.size(),
              static_cast<long long>(log.total_preemptions),
              log.has_summary ? "" : "  (no summary line: decode = 1-token chunks)");
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
  const float record_h = ImGui::GetTextLineHeightWithSpacing() * 5.5f;
  const float rest = std::max(200.0f, avail.y - legend_h - record_h);
  DrawBars(avail.x, rest * 0.6f);
  DrawLegend({{"prefill chunk", steps_palette::kPrefill, false},
              {"decode", steps_palette::kDecode, false},
              {"recompute after preemption", steps_palette::kRecompute, false},
              {"preemption", steps_palette::kPreempt, false}});
  DrawLines(avail.x, rest * 0.4f - 8);
  DrawRecord();
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
    for (const StepChunk& c : s.scheduled) {
      const float y0 = py(acc), y1 = py(acc + static_cast<double>(c.n));
      dl->AddRectFilled(ImVec2(x0, y1), ImVec2(x1, y0), ChunkColour(c.kind));
      if (y0 - y1 > 3 && bar > 4) {
        dl->AddLine(ImVec2(x0, y1), ImVec2(x1, y1), IM_COL32(24, 26, 30, 255));  // separator
      }
      if (hovered && mouse.x >= x0 && mouse.x < x1 && mouse.y >= y1 && mouse.y <= y0) {
        hover_chunk = &c;
        hover_step = &s;
      }
      acc += static_cast<double>(c.n);
    }
    if (!s.preempted.empty()) {  // a red triangle above the bar
      const float cx = (x0 + x1) / 2, ty = py(acc) - 4;
      const float r = std::clamp(slot * 0.45f, 3.0f, 7.0f);
      dl->AddTriangleFilled(ImVec2(cx - r, ty - 2 * r), ImVec2(cx + r, ty - 2 * r), ImVec2(cx, ty),
                            steps_palette::kPreempt);
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
    free.points.push_back({x, static_cast<double>(s.num_free_blocks), 1});
    if (s.running >= 0) running.points.push_back({x, static_cast<double>(s.running), 1});
    if (s.waiting >= 0) waiting.points.push_back({x, static_cast<double>(s.waiting), 1});
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
  if (s.t_start_ns >= 0 && s.t_end_ns >= 0) {
    ImGui::Text("time %.3f .. %.3f ms (%.3f ms)", 1e-6 * static_cast<double>(s.t_start_ns),
                1e-6 * static_cast<double>(s.t_end_ns),
                1e-6 * static_cast<double>(s.t_end_ns - s.t_start_ns));
  }
  ImGui::PopTextWrapPos();
}

std::unique_ptr<IPanel> MakeStepsPanel() { return std::make_unique<StepsPanel>(); }

}  // namespace kvsim::viz
