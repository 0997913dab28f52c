// The Block pool panel (see the header): a simulation's pools step by step, or a trace replay.
#include "viz/panels/block_pool_panel.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/kv_cache_manager.h"
#include "sim/report/plan_report.h"
#include "viz/colors.h"
#include "viz/line_chart.h"
#include "viz/panel.h"
#include "viz/pool_replay.h"
#include "viz/ui_util.h"

namespace kvsim::viz {

void BlockPoolPanel::Draw(ViewerContext& ctx) {
  if (ctx.sim) {
    DrawSim(ctx);
    return;
  }
  sim_seen_ = nullptr;
  PlanModel& pm = *ctx.plan;
  pm.ReplanIfChanged();
  if (!pm.has_plan()) {
    ImGui::TextWrapped("No plan: %s", pm.error().c_str());
    return;
  }
  if (trace_names_.empty()) {
    trace_names_ = EmbeddedTraceNames();
    trace_names_.insert(trace_names_.begin(), kDemoTraceName);
    std::strncpy(path_, DefaultTrace(ctx.trace).c_str(), sizeof path_ - 1);
  }
  DrawControls(pm);
  if (!error_.empty()) {
    ImGui::PushTextWrapPos(0);
    ImGui::TextColored(ImVec4(1, 0.45f, 0.4f, 1), "%s", error_.c_str());
    ImGui::PopTextWrapPos();
  }
  if (!replay_) return;
  HandleKeys();
  DrawScrubber();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float legend_h = ImGui::GetTextLineHeightWithSpacing() * 2;
  const float plots_h = std::max(140.0f, (avail.y - legend_h) * 0.36f);
  DrawGrid(avail.x, avail.y - plots_h - legend_h - 8);
  DrawLegendRow();
  DrawPlots(avail.x, plots_h);
}

void BlockPoolPanel::DrawControls(PlanModel& pm) {
  // The combo names the file (paths share the "scenarios/traces/" prefix and would clip);
  // the text box is as wide as the path, within limits; both show the full path on hover.
  ImGui::PushItemWidth(300);
  if (ImGui::BeginCombo("##trace", TraceFileName(path_).c_str())) {
    for (const auto& n : trace_names_) {
      if (ImGui::Selectable(TraceFileName(n).c_str(), n == path_))
        std::strncpy(path_, n.c_str(), sizeof path_ - 1);
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", n.c_str());
    }
    ImGui::EndCombo();
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", path_);
  ImGui::PopItemWidth();
  ImGui::SameLine();
  const float path_w = ImGui::CalcTextSize(path_).x + 2 * ImGui::GetStyle().FramePadding.x + 8;
  ImGui::PushItemWidth(std::clamp(path_w, 200.0f, 480.0f));
  ImGui::InputText("trace", path_, sizeof path_);
  if (ImGui::IsItemHovered() && !ImGui::IsItemActive()) ImGui::SetTooltip("%s", path_);
  ImGui::PopItemWidth();
  HelpMarker(
      "a built-in sample trace, or a JSONL file: tokens or Mooncake hash_ids "
      "(see sim/trace/request_trace.h)");
  ImGui::SameLine();
  ImGui::PushItemWidth(110);
  int cap = static_cast<int>(capacity_);
  if (ImGui::InputInt("blocks", &cap, 16, 256)) capacity_ = std::max(0, cap);
  HelpMarker(
      "pool size (num_gpu_blocks, incl. the null block); 0 = the plan's num_blocks. "
      "Shrink it to watch eviction.");
  ImGui::SameLine();
  int conc = static_cast<int>(concurrency_);
  if (ImGui::InputInt("live requests", &conc)) concurrency_ = std::clamp(conc, 0, 4096);
  HelpMarker("requests kept allocated at once (oldest completes first); 0 = one at a time");
  ImGui::PopItemWidth();
  ImGui::SameLine();
  const bool reload = ImGui::Button("replay");
  const std::string key = std::string(path_) + "|" + std::to_string(capacity_) + "|" +
                          std::to_string(concurrency_) + "|" + std::to_string(pm.plan_stamp());
  if (reload || key != loaded_key_) {
    loaded_key_ = key;
    Load(pm.plan());
  }
}

void BlockPoolPanel::Load(const KvCachePlan& plan) {
  replay_.reset();
  error_.clear();
  auto cfg = KvCacheManagerConfigFromPlan(plan);
  if (!cfg.ok()) {
    error_ = "cannot build the KV cache manager for this plan: " + cfg.status().message();
    return;
  }
  if (capacity_ > 0) cfg.value().num_blocks = capacity_;
  auto trace = path_ == std::string(kDemoTraceName)
                   ? Result<RequestTrace>(DemoTrace(plan.attn_block_size))
                   : LoadTrace(path_);
  if (!trace.ok()) {
    error_ = trace.status().message();
    return;
  }
  PoolReplayOptions opt;
  opt.concurrency = concurrency_;
  auto r = PoolReplay::Create(std::move(trace.value()), cfg.value(), opt);
  if (!r.ok()) {
    error_ = r.status().message();
    return;
  }
  replay_ = std::move(r.value());
  // First load: the end of the trace (the pool as the trace leaves it).
  time_ = time_ < 0 ? replay_->num_steps() - 1 : std::min<int64_t>(time_, replay_->num_steps() - 1);
  replay_->SeekTo(time_);
  grid_ = CellGrid();
}

void BlockPoolPanel::HandleKeys() {
  const ImGuiIO& io = ImGui::GetIO();
  if (io.WantTextInput) return;
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Space), false)) playing_ = !playing_;
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_PageDown))) ++time_;
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_PageUp))) --time_;
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Home))) time_ = 0;
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_End))) time_ = replay_->num_steps() - 1;
}

void BlockPoolPanel::DrawScrubber() {
  const int64_t n = replay_->num_steps();
  if (ImGui::Button(playing_ ? "pause" : "play ")) playing_ = !playing_;
  ImGui::SameLine();
  if (playing_) {
    play_acc_ += ImGui::GetIO().DeltaTime * 8;  // 8 requests per second
    while (play_acc_ >= 1) {
      play_acc_ -= 1;
      if (++time_ >= n) {
        time_ = n - 1;
        playing_ = false;
      }
    }
  }
  int t = static_cast<int>(time_);
  ImGui::PushItemWidth(-1);
  ImGui::SliderInt("##time", &t, 0, static_cast<int>(n - 1), "request %d");
  ImGui::PopItemWidth();
  time_ = std::clamp<int64_t>(t, 0, n - 1);
  if (time_ != replay_->time()) replay_->SeekTo(time_);
  const PoolStep& s = replay_->steps()[static_cast<size_t>(time_)];
  const KvCacheManager& m = replay_->manager();
  ImGui::Text(
      "request %lld: %s prompt tokens, %s hit (%.1f%%)%s  |  pool: %s blocks, %s free, "
      "%s cached, usage %.1f%%, %lld live requests  |  cumulative hit rate %.1f%%%s",
      static_cast<long long>(time_), WithCommas(s.prompt_tokens).c_str(),
      WithCommas(s.hit_tokens).c_str(),
      s.prompt_tokens ? 100.0 * s.hit_tokens / s.prompt_tokens : 0.0, s.served ? "" : " NOT SERVED",
      WithCommas(m.config().num_blocks).c_str(), WithCommas(m.num_free_blocks()).c_str(),
      WithCommas(m.pool().num_cached_blocks()).c_str(), 100.0 * s.usage,
      static_cast<long long>(s.live_requests), 100.0 * s.cumulative_hit_rate,
      // A pool without prefix caching (a P/D prefill pool, often) hits 0 % by design.
      m.config().enable_caching ? "" : "  |  prefix caching off");
}

Rgba BlockPoolPanel::BlockColour(BlockId b, bool* hit) const {
  *hit = false;
  switch (replay_->State(b)) {
    case BlockState::kNull:
      return palette::kNull;
    case BlockState::kFree:
      return palette::kFree;
    case BlockState::kCached:
      return palette::kCached;
    case BlockState::kInUse: {
      *hit = replay_->WasHit(b);
      const int64_t r = replay_->Holder(b);
      return r >= 0 ? CategoricalColour(r) : palette::kHighlight;
    }
  }
  return palette::kFree;
}

int64_t CellGrid::Draw(const char* id, int64_t nb, float width, float height, int64_t key,
                       const BlockFn& block) {
  height = std::max(12.0f, height);
  width = std::max(12.0f, width);
  // Cells of at least 6 px; several blocks per cell when the pool is larger than that.
  const int64_t max_cells =
      std::max<int64_t>(1, static_cast<int64_t>(width / 6) * static_cast<int64_t>(height / 6));
  const int64_t per_cell = (nb + max_cells - 1) / max_cells;
  const int64_t cells = (nb + per_cell - 1) / per_cell;
  // Square-ish cells filling the area.
  float side = std::sqrt(width * height / static_cast<float>(cells));
  int cols = std::max(1, static_cast<int>(width / side));
  while (static_cast<int64_t>(cols) * static_cast<int64_t>(height / (width / cols)) < cells) ++cols;
  side = width / static_cast<float>(cols);
  const int rows = static_cast<int>((cells + cols - 1) / cols);
  const int64_t full_key = key * 1000003 + cols * 31 + per_cell;
  if (full_key != key_ || static_cast<int64_t>(colour_.size()) != cells) {
    key_ = full_key;
    per_cell_ = per_cell;
    colour_.assign(static_cast<size_t>(cells), 0);
    mark_.assign(static_cast<size_t>(cells), 0);
    for (int64_t c = 0; c < cells; ++c) {
      // The busiest state among the cell's blocks.
      int best = -1;
      Rgba col = palette::kFree;
      bool any_mark = false;
      for (int64_t b = c * per_cell; b < std::min(nb, (c + 1) * per_cell); ++b) {
        Rgba bc = palette::kFree;
        int rank = 0;
        bool mark = false;
        block(b, &bc, &rank, &mark);
        any_mark |= mark;
        if (rank > best) {
          best = rank;
          col = bc;
        }
      }
      colour_[static_cast<size_t>(c)] = col;
      mark_[static_cast<size_t>(c)] = any_mark;
    }
  }
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 o = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton(id, ImVec2(width, side * static_cast<float>(rows)));
  const bool hovered = ImGui::IsItemHovered();
  // Big cells are drawn one by one with a gap (a grid of blocks); small ones in runs of one
  // colour per row, which keeps a million-block pool to a few thousand rectangles.
  const bool merge = side < 10;
  const float gap = merge ? 0.0f : 1.0f;
  for (int row = 0; row < rows; ++row) {
    const int64_t base = static_cast<int64_t>(row) * cols;
    int64_t c = base;
    const int64_t end = std::min<int64_t>(cells, base + cols);
    while (c < end) {
      const Rgba col = colour_[static_cast<size_t>(c)];
      int64_t c2 = c + 1;
      if (merge) {
        while (c2 < end && colour_[static_cast<size_t>(c2)] == col &&
               !mark_[static_cast<size_t>(c2)] && !mark_[static_cast<size_t>(c)]) {
          ++c2;
        }
      }
      const float x = o.x + side * static_cast<float>(c - base);
      const float x2 = o.x + side * static_cast<float>(c2 - base);
      const float y = o.y + side * static_cast<float>(row);
      dl->AddRectFilled(ImVec2(x, y), ImVec2(x2 - gap, y + side - gap), col);
      for (int64_t k = c; k < c2; ++k) {
        if (!mark_[static_cast<size_t>(k)]) continue;
        const float d = side * 0.3f;
        const float kx = o.x + side * static_cast<float>(k - base);
        dl->AddRectFilled(ImVec2(kx + d, y + d), ImVec2(kx + side - gap - d, y + side - gap - d),
                          IM_COL32(255, 255, 255, 255));
      }
      c = c2;
    }
  }
  if (!hovered) return -1;
  const ImVec2 mp = ImGui::GetIO().MousePos;
  const int64_t c =
      static_cast<int64_t>((mp.y - o.y) / side) * cols + static_cast<int64_t>((mp.x - o.x) / side);
  return c >= 0 && c < cells ? c * per_cell : -1;
}

namespace {

int BlockRank(BlockState st) {
  return st == BlockState::kInUse    ? 3
         : st == BlockState::kCached ? 2
         : st == BlockState::kFree   ? 1
                                     : 0;
}

}  // namespace

void BlockPoolPanel::DrawGrid(float width, float height) {
  const int64_t nb = replay_->config().num_blocks;
  const BlockId b0 =
      static_cast<BlockId>(grid_.Draw("##grid", nb, width, std::max(60.0f, height), time_,
                                      [&](int64_t b, Rgba* col, int* rank, bool* mark) {
                                        *col = BlockColour(static_cast<BlockId>(b), mark);
                                        *rank = BlockRank(replay_->State(static_cast<BlockId>(b)));
                                      }));
  if (b0 < 0) return;
  const int64_t per_cell = grid_.per_cell();
  const BlockPool& pool = replay_->manager().pool();
  ImGui::BeginTooltip();
  if (per_cell > 1) {
    ImGui::Text("blocks %d-%lld (%lld per cell); first block:", b0,
                static_cast<long long>(std::min<int64_t>(nb, b0 + per_cell) - 1),
                static_cast<long long>(per_cell));
  }
  static const char* kStateNames[] = {"null block", "free", "free, cached", "in use"};
  ImGui::Text("block %d: %s, ref %d", b0, kStateNames[static_cast<int>(replay_->State(b0))],
              b0 == kNullBlock ? 0 : pool.ref_cnt(b0));
  if (b0 != kNullBlock && pool.is_cached(b0)) {
    ImGui::Text("hash %016llx, group %d", static_cast<unsigned long long>(pool.block_hash(b0)),
                pool.block_group(b0));
  }
  if (replay_->Holder(b0) >= 0) {
    ImGui::Text("held by request %lld%s", static_cast<long long>(replay_->Holder(b0)),
                replay_->WasHit(b0) ? " (a prefix hit)" : "");
  }
  ImGui::EndTooltip();
}

void BlockPoolPanel::DrawLegendRow() {
  std::vector<LegendEntry> l = {{"free", palette::kFree, false},
                                {"free, cached (evictable)", palette::kCached, false},
                                {"null block", palette::kNull, false}};
  for (const auto& [idx, h] : replay_->live()) {
    if (l.size() >= 9) break;
    l.push_back({"request " + std::to_string(idx), CategoricalColour(idx), false});
  }
  l.push_back({"(white centre: prefix hit)", 0, false});
  DrawLegend(l);
}

void BlockPoolPanel::DrawPlots(float width, float height) {
  const auto& steps = replay_->steps();
  ChartData hit, occ;
  Series per{"hit rate of the request", {}}, cum{"cumulative hit rate", {}};
  Series usage{"pool usage", {}}, cached{"cached blocks / pool", {}};
  const double nb = static_cast<double>(std::max<int64_t>(1, replay_->config().num_blocks - 1));
  for (size_t i = 0; i < steps.size(); ++i) {
    const PoolStep& s = steps[i];
    const double x = static_cast<double>(i);
    per.points.push_back(
        {x, s.prompt_tokens ? static_cast<double>(s.hit_tokens) / s.prompt_tokens : 0, 1});
    cum.points.push_back({x, s.cumulative_hit_rate, 1, 0, false});
    usage.points.push_back({x, s.usage, 1, 0, false});
    cached.points.push_back({x, static_cast<double>(s.cached_blocks) / nb, 1, 0, false});
  }
  hit.series = {per, cum};
  occ.series = {usage, cached};
  ChartOptions o;
  o.x_label = "request";
  o.marker_x = static_cast<double>(time_);
  const float w = (width - 8) / 2;
  o.y_label = "hit rate";
  ImGui::PushID("hit");
  DrawLineChart(hit, o, ImVec2(w, height));
  ImGui::PopID();
  ImGui::SameLine(0, 8);
  o.y_label = "occupancy";
  ImGui::PushID("occ");
  DrawLineChart(occ, o, ImVec2(w, height));
  ImGui::PopID();
}

// ---- Simulation mode ------------------------------------------------------------------

namespace {

Rgba CpuColour(CpuSlotState s) {
  switch (s) {
    case CpuSlotState::kFree:
      return palette::kFree;
    case CpuSlotState::kInFlight:
      return palette::kCpuInFlight;
    case CpuSlotState::kReady:
      return palette::kCpuReady;
    case CpuSlotState::kLoading:
      return palette::kCpuLoading;
  }
  return palette::kFree;
}

const char* CpuStateName(CpuSlotState s) {
  switch (s) {
    case CpuSlotState::kFree:
      return "free";
    case CpuSlotState::kInFlight:
      return "store in flight (not visible to lookups yet)";
    case CpuSlotState::kReady:
      return "ready (evictable)";
    case CpuSlotState::kLoading:
      return "being loaded to the GPU (pinned)";
  }
  return "?";
}

// At most `max_points` evenly spaced points of a per-step series (long runs draw thousands of
// steps into a few hundred pixels).
template <class F>
Series StepSeries(const std::string& label, const StepLog& log, int64_t max_points, F&& y) {
  Series s{label, {}};
  const int64_t n = static_cast<int64_t>(log.steps.size());
  const int64_t every = std::max<int64_t>(1, (n + max_points - 1) / max_points);
  for (int64_t i = 0; i < n; i += every) {
    s.points.push_back({static_cast<double>(log.steps[static_cast<size_t>(i)].step), y(i), 1, 0, false});
  }
  return s;
}

}  // namespace

void BlockPoolPanel::DrawSim(ViewerContext& ctx) {
  const SimRun& sim = *ctx.sim;
  const int64_t n = sim.num_steps();
  if (&sim != sim_seen_) {
    sim_seen_ = &sim;
    gpu_cells_step_ = cpu_cells_step_ = -1;
    grid_ = CellGrid();
    cpu_grid_ = CellGrid();
    playing_ = false;
    const auto& cnt = sim.counts();
    auto at = [&](int64_t i) -> const SimPoolCounts& { return cnt[static_cast<size_t>(i)]; };
    sim_gpu_chart_.series = {
        StepSeries("in use", sim.log(), 1500, [&](int64_t i) { return 1.0 * at(i).in_use; }),
        StepSeries("free, cached", sim.log(), 1500, [&](int64_t i) { return 1.0 * at(i).cached; }),
        StepSeries("free", sim.log(), 1500, [&](int64_t i) { return 1.0 * at(i).free; })};
    sim_cpu_chart_.series = {
        StepSeries("used (in flight + ready + loading)", sim.log(), 1500,
                   [&](int64_t i) {
                     return 1.0 * (at(i).cpu_in_flight + at(i).cpu_ready + at(i).cpu_loading);
                   }),
        StepSeries("ready (incl. loading)", sim.log(), 1500,
                   [&](int64_t i) { return 1.0 * (at(i).cpu_ready + at(i).cpu_loading); }),
        StepSeries("loading", sim.log(), 1500, [&](int64_t i) { return 1.0 * at(i).cpu_loading; })};
  }
  int64_t idx = std::clamp<int64_t>(ctx.sim_index, 0, n - 1);
  const ImGuiIO& io = ImGui::GetIO();
  if (!io.WantTextInput) {
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Space), false)) playing_ = !playing_;
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_PageDown))) ++idx;
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_PageUp))) --idx;
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Home))) idx = 0;
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_End))) idx = n - 1;
  }
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
  ImGui::TextWrapped("simulation (Steps panel): %s — %s", sim.description().c_str(),
                     sim.timing_note().c_str());
  ImGui::PopStyleColor();
  if (ImGui::Button(playing_ ? "pause" : "play ")) playing_ = !playing_;
  ImGui::SameLine();
  if (playing_) {
    play_acc_ += io.DeltaTime * 8;  // 8 steps per second
    while (play_acc_ >= 1) {
      play_acc_ -= 1;
      if (++idx >= n) {
        idx = n - 1;
        playing_ = false;
      }
    }
  }
  idx = std::clamp<int64_t>(idx, 0, n - 1);
  const StepRecord& rec = sim.log().steps[static_cast<size_t>(idx)];
  int t = static_cast<int>(idx);
  ImGui::PushItemWidth(-1);
  const std::string fmt_step = fmt::format("step {} (record %d)", rec.step);
  ImGui::SliderInt("##simstep", &t, 0, static_cast<int>(n - 1), fmt_step.c_str());
  ImGui::PopItemWidth();
  idx = std::clamp<int64_t>(t, 0, n - 1);
  ctx.sim_index = idx;
  const StepRecord& r = sim.log().steps[static_cast<size_t>(idx)];
  const SimPoolCounts& c = sim.counts()[static_cast<size_t>(idx)];
  const int64_t usable = sim.num_gpu_blocks() - 1;
  std::string line = fmt::format(
      "step {}: {} scheduled, {} tokens  |  GPU pool: {} blocks, {} in use, {} free + {} cached "
      "(usage {:.1f}%)",
      r.step, r.scheduled.size(), r.num_scheduled_tokens(), WithCommas(usable + 1), c.in_use,
      c.free, c.cached, usable > 0 ? 100.0 * c.in_use / static_cast<double>(usable) : 0.0);
  if (sim.num_cpu_slots() > 0) {
    line +=
        fmt::format("  |  CPU tier: {} slots, {} in flight, {} ready, {} loading, {} free",
                    sim.num_cpu_slots(), c.cpu_in_flight, c.cpu_ready, c.cpu_loading, c.cpu_free);
  }
  ImGui::TextUnformatted(line.c_str());

  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float legend_h =
      ImGui::GetTextLineHeightWithSpacing() *
      ((sim.num_cpu_slots() ? 3.2f : 2.2f) + (sim.holders_note().empty() ? 0.0f : 1.0f));
  const float plots_h = std::max(130.0f, (avail.y - legend_h) * 0.3f);
  const float grids_h = avail.y - plots_h - legend_h - 8;
  if (idx >= sim.num_snapshots()) {
    const std::string why =
        sim.num_snapshots() == 0
            ? fmt::format("one step's pool is larger than the {} MiB cap",
                          sim.snapshot_budget() >> 20)
            : fmt::format("the snapshots stopped after step {}, where they reached the {} MiB cap",
                          sim.log().steps[static_cast<size_t>(sim.num_snapshots() - 1)].step,
                          sim.snapshot_budget() >> 20);
    ImGui::TextColored(ImVec4(1, 0.75f, 0.3f, 1),
                       "no pool snapshot for this step: %s (records and counts go on)",
                       why.c_str());
    ImGui::Dummy(ImVec2(avail.x, std::max(0.0f, grids_h - ImGui::GetTextLineHeightWithSpacing())));
  } else {
    DrawSimGrids(sim, idx, avail.x, grids_h);
  }
  DrawSimLegend(sim);
  // The plots take what the grids left (square cells rarely fill their share exactly).
  DrawSimPlots(sim, idx, avail.x, std::max(plots_h, ImGui::GetContentRegionAvail().y - 4));
}

void BlockPoolPanel::DrawSimGrids(const SimRun& sim, int64_t index, float width, float height) {
  sim.GpuCells(index, gpu_cells_, gpu_cells_step_);
  const bool cpu = sim.num_cpu_slots() > 0;
  if (cpu) sim.CpuCells(index, cpu_cells_, cpu_cells_step_);
  const float label_h = ImGui::GetTextLineHeightWithSpacing();
  const float cpu_h = cpu ? std::clamp(height * 0.3f, 40.0f, 260.0f) : 0;
  const float gpu_h = height - cpu_h - (cpu ? 2 * label_h : 0);
  const auto& holders = sim.holders();
  const auto& names = sim.log().request_ids;
  auto holder_request = [&](int32_t h) {
    return h >= 0 && static_cast<size_t>(h) < holders.size()
               ? holders[static_cast<size_t>(h)].request
               : -1;
  };
  // The requests holding blocks at this step, for the legend.
  legend_requests_.clear();
  if (cpu)
    ImGui::TextDisabled("GPU pool (%lld blocks)", static_cast<long long>(sim.num_gpu_blocks()));
  const int64_t b0 = grid_.Draw("##simgrid", sim.num_gpu_blocks(), width, gpu_h, index,
                                [&](int64_t b, Rgba* col, int* rank, bool* mark) {
                                  const GpuCell cell = gpu_cells_[static_cast<size_t>(b)];
                                  const BlockState st = GpuCellState(cell);
                                  *rank = BlockRank(st);
                                  *mark = GpuCellLoaded(cell);
                                  switch (st) {
                                    case BlockState::kNull:
                                      *col = palette::kNull;
                                      break;
                                    case BlockState::kFree:
                                      *col = palette::kFree;
                                      break;
                                    case BlockState::kCached:
                                      *col = palette::kCached;
                                      break;
                                    case BlockState::kInUse: {
                                      const int32_t r = holder_request(GpuCellHolder(cell));
                                      *col =
                                          r >= 0 ? CategoricalColour(r) : palette::kUnknownHolder;
                                      break;
                                    }
                                  }
                                });
  for (const GpuCell cell : gpu_cells_) {
    if (GpuCellState(cell) != BlockState::kInUse || legend_requests_.size() >= 8) continue;
    const int32_t r = holder_request(GpuCellHolder(cell));
    if (std::find(legend_requests_.begin(), legend_requests_.end(), r) == legend_requests_.end()) {
      legend_requests_.push_back(r);
    }
  }
  if (b0 >= 0) {
    const GpuCell cell = gpu_cells_[static_cast<size_t>(b0)];
    ImGui::BeginTooltip();
    if (grid_.per_cell() > 1) {
      ImGui::Text("blocks %lld-%lld (%lld per cell); first block:", static_cast<long long>(b0),
                  static_cast<long long>(std::min(sim.num_gpu_blocks(), b0 + grid_.per_cell()) - 1),
                  static_cast<long long>(grid_.per_cell()));
    }
    static const char* kStateNames[] = {"the null block", "free", "free, cached (evictable)",
                                        "in use"};
    const BlockState st = GpuCellState(cell);
    ImGui::Text("block %lld: %s", static_cast<long long>(b0), kStateNames[static_cast<int>(st)]);
    if (st == BlockState::kInUse) {
      const int32_t h = GpuCellHolder(cell);
      const int32_t r = holder_request(h);
      const int ref = GpuCellRef(cell);
      if (r >= 0) {
        ImGui::Text(
            "held by request %s (KV handle %d)%s", names[static_cast<size_t>(r)].c_str(),
            holders[static_cast<size_t>(h)].handle,
            holders[static_cast<size_t>(h)].ambiguous ? ", or a request with the same prompt" : "");
      } else if (h >= 0) {
        ImGui::Text("held by KV handle %d (request not told)",
                    holders[static_cast<size_t>(h)].handle);
      } else {
        ImGui::Text("held, by no handle the viewer read");
      }
      if (ref > 1) ImGui::Text("ref count %d%s: a shared prefix block", ref, ref == 31 ? "+" : "");
    }
    if (GpuCellLoaded(cell)) ImGui::Text("filled from the CPU tier by a load this step started");
    ImGui::EndTooltip();
  }
  if (!cpu) return;
  ImGui::TextDisabled("CPU offloading tier (%lld slots of offloaded blocks)",
                      static_cast<long long>(sim.num_cpu_slots()));
  const int64_t s0 = cpu_grid_.Draw("##cpugrid", sim.num_cpu_slots(), width, cpu_h, index,
                                    [&](int64_t s, Rgba* col, int* rank, bool* mark) {
                                      const CpuSlotState st =
                                          CpuCellState(cpu_cells_[static_cast<size_t>(s)]);
                                      *col = CpuColour(st);
                                      *rank = st == CpuSlotState::kLoading    ? 4
                                              : st == CpuSlotState::kInFlight ? 3
                                              : st == CpuSlotState::kReady    ? 2
                                                                              : 1;
                                      *mark = CpuCellLoaded(cpu_cells_[static_cast<size_t>(s)]);
                                    });
  if (s0 >= 0) {
    const CpuCell cell = cpu_cells_[static_cast<size_t>(s0)];
    const CpuSlotState st = CpuCellState(cell);
    ImGui::BeginTooltip();
    if (cpu_grid_.per_cell() > 1) {
      ImGui::Text(
          "slots %lld-%lld (%lld per cell); first slot:", static_cast<long long>(s0),
          static_cast<long long>(std::min(sim.num_cpu_slots(), s0 + cpu_grid_.per_cell()) - 1),
          static_cast<long long>(cpu_grid_.per_cell()));
    }
    ImGui::Text("CPU slot %lld: %s", static_cast<long long>(s0), CpuStateName(st));
    if (st != CpuSlotState::kFree) {
      const int32_t r = CpuCellRequest(cell);
      ImGui::Text("offloaded block %lld of request %s (the store that filled it)",
                  static_cast<long long>(CpuCellBlock(cell)),
                  r >= 0 ? names[static_cast<size_t>(r)].c_str() : "?");
    }
    if (st == CpuSlotState::kLoading) ImGui::Text("pinned by %d load(s)", CpuCellPins(cell));
    if (CpuCellLoaded(cell)) ImGui::Text("read by a load this step started");
    ImGui::EndTooltip();
  }
}

void BlockPoolPanel::DrawSimLegend(const SimRun& sim) {
  std::vector<LegendEntry> l = {{"free", palette::kFree, false},
                                {"free, cached (evictable)", palette::kCached, false},
                                {"null block", palette::kNull, false}};
  const auto& names = sim.log().request_ids;
  bool unknown = false;
  for (const int32_t r : legend_requests_) {
    if (r < 0) {
      unknown = true;
      continue;
    }
    l.push_back({"request " + names[static_cast<size_t>(r)], CategoricalColour(r), false});
  }
  if (unknown) l.push_back({"in use, request not told", palette::kUnknownHolder, false});
  if (legend_requests_.size() >= 8) l.push_back({"...", 0, false});
  DrawLegend(l);
  if (sim.num_cpu_slots() > 0) {
    DrawLegend({{"CPU slot: free", palette::kFree, false},
                {"store in flight", palette::kCpuInFlight, false},
                {"ready", palette::kCpuReady, false},
                {"loading (pinned)", palette::kCpuLoading, false},
                {"(white centre: a load this step copies it, CPU slot → GPU block)", 0, false}});
  }
  if (const std::string note = sim.holders_note(); !note.empty()) {
    ImGui::TextDisabled("holders: %s", note.c_str());
  }
}

void BlockPoolPanel::DrawSimPlots(const SimRun& sim, int64_t index, float width, float height) {
  ChartOptions o;
  o.x_label = "step";
  o.marker_x = static_cast<double>(sim.log().steps[static_cast<size_t>(index)].step);
  const bool cpu = sim.num_cpu_slots() > 0;
  const float w = cpu ? (width - 8) / 2 : width;
  o.title = "GPU blocks per step";
  o.y_label = "blocks";
  ImGui::PushID("simgpu");
  DrawLineChart(sim_gpu_chart_, o, ImVec2(w, height));
  ImGui::PopID();
  if (!cpu) return;
  ImGui::SameLine(0, 8);
  o.title = "CPU tier slots per step";
  o.y_label = "slots";
  ImGui::PushID("simcpu");
  DrawLineChart(sim_cpu_chart_, o, ImVec2(w, height));
  ImGui::PopID();
}

std::unique_ptr<IPanel> MakeBlockPoolPanel() { return std::make_unique<BlockPoolPanel>(); }

}  // namespace kvsim::viz
