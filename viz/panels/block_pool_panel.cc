// The Block pool panel: replay a request trace through core's KvCacheManager on the live
// plan's groups and pool, and show the pool at any request of the trace as a grid of blocks
// (free, cached, in use coloured by request), with a time scrubber and plots of hit rate and
// occupancy over time. Large pools are drawn with several blocks per cell (the cell takes the
// "busiest" state of its blocks: in use > cached > free).
#include "viz/panels/block_pool_panel.h"

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
  PlanModel& pm = *ctx.plan;
  pm.ReplanIfChanged();
  if (!pm.has_plan()) {
    ImGui::TextWrapped("No plan: %s", pm.error().c_str());
    return;
  }
  if (trace_names_.empty()) {
    trace_names_ = EmbeddedTraceNames();
    if (!ctx.trace.empty()) std::strncpy(path_, ctx.trace.c_str(), sizeof path_ - 1);
    for (const auto& n : trace_names_) {
      if (!path_[0] && n.find("mooncake") != std::string::npos) {
        std::strncpy(path_, n.c_str(), sizeof path_ - 1);
      }
    }
    if (!path_[0] && !trace_names_.empty())
      std::strncpy(path_, trace_names_[0].c_str(), sizeof path_ - 1);
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
  ImGui::PushItemWidth(300);
  if (ImGui::BeginCombo("##trace", path_)) {
    for (const auto& n : trace_names_) {
      if (ImGui::Selectable(n.c_str(), n == path_))
        std::strncpy(path_, n.c_str(), sizeof path_ - 1);
    }
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  ImGui::InputText("trace", path_, sizeof path_);
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
  auto trace = LoadTrace(path_);
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
  cells_key_ = -1;
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
      "%s cached, usage %.1f%%, %lld live requests  |  cumulative hit rate %.1f%%",
      static_cast<long long>(time_), WithCommas(s.prompt_tokens).c_str(),
      WithCommas(s.hit_tokens).c_str(),
      s.prompt_tokens ? 100.0 * s.hit_tokens / s.prompt_tokens : 0.0, s.served ? "" : " NOT SERVED",
      WithCommas(m.config().num_blocks).c_str(), WithCommas(m.num_free_blocks()).c_str(),
      WithCommas(m.pool().num_cached_blocks()).c_str(), 100.0 * s.usage,
      static_cast<long long>(s.live_requests), 100.0 * s.cumulative_hit_rate);
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

void BlockPoolPanel::DrawGrid(float width, float height) {
  const int64_t nb = replay_->config().num_blocks;
  height = std::max(60.0f, height);
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
  const int64_t key = time_ * 1000003 + cols * 31 + per_cell;
  if (key != cells_key_) {
    cells_key_ = key;
    cell_colour_.assign(static_cast<size_t>(cells), 0);
    cell_hit_.assign(static_cast<size_t>(cells), 0);
    for (int64_t c = 0; c < cells; ++c) {
      // The busiest state among the cell's blocks.
      int best = -1;
      Rgba col = palette::kFree;
      bool any_hit = false;
      for (int64_t b = c * per_cell; b < std::min(nb, (c + 1) * per_cell); ++b) {
        const BlockState st = replay_->State(static_cast<BlockId>(b));
        const int rank = st == BlockState::kInUse    ? 3
                         : st == BlockState::kCached ? 2
                         : st == BlockState::kFree   ? 1
                                                     : 0;
        bool hit = false;
        const Rgba bc = BlockColour(static_cast<BlockId>(b), &hit);
        any_hit |= hit;
        if (rank > best) {
          best = rank;
          col = bc;
        }
      }
      cell_colour_[static_cast<size_t>(c)] = col;
      cell_hit_[static_cast<size_t>(c)] = any_hit;
    }
  }
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 o = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton("##grid", ImVec2(width, side * rows));
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
      const Rgba col = cell_colour_[static_cast<size_t>(c)];
      int64_t c2 = c + 1;
      if (merge) {
        while (c2 < end && cell_colour_[static_cast<size_t>(c2)] == col &&
               !cell_hit_[static_cast<size_t>(c2)] && !cell_hit_[static_cast<size_t>(c)]) {
          ++c2;
        }
      }
      const float x = o.x + side * static_cast<float>(c - base);
      const float x2 = o.x + side * static_cast<float>(c2 - base);
      const float y = o.y + side * static_cast<float>(row);
      dl->AddRectFilled(ImVec2(x, y), ImVec2(x2 - gap, y + side - gap), col);
      for (int64_t k = c; k < c2; ++k) {
        if (!cell_hit_[static_cast<size_t>(k)]) continue;
        const float d = side * 0.3f;
        const float kx = o.x + side * static_cast<float>(k - base);
        dl->AddRectFilled(ImVec2(kx + d, y + d), ImVec2(kx + side - gap - d, y + side - gap - d),
                          IM_COL32(255, 255, 255, 255));
      }
      c = c2;
    }
  }
  if (hovered) {
    const ImVec2 mp = ImGui::GetIO().MousePos;
    const int64_t c = static_cast<int64_t>((mp.y - o.y) / side) * cols +
                      static_cast<int64_t>((mp.x - o.x) / side);
    if (c >= 0 && c < cells) {
      const BlockId b0 = static_cast<BlockId>(c * per_cell);
      const BlockPool& pool = replay_->manager().pool();
      ImGui::BeginTooltip();
      if (per_cell > 1) {
        ImGui::Text("blocks %d-%lld (%lld per cell); first block:", b0,
                    static_cast<long long>(std::min(nb, (c + 1) * per_cell) - 1),
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
  }
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
    cum.points.push_back({x, s.cumulative_hit_rate, 1});
    usage.points.push_back({x, s.usage, 1});
    cached.points.push_back({x, static_cast<double>(s.cached_blocks) / nb, 1});
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

std::unique_ptr<IPanel> MakeBlockPoolPanel() { return std::make_unique<BlockPoolPanel>(); }

}  // namespace kvsim::viz
