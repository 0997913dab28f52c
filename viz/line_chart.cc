#include "viz/line_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "viz/colors.h"

namespace kvsim::viz {

ImVec2 PlaceLegend(const std::vector<ImVec2>& points, ImVec2 a, ImVec2 b, ImVec2 legend) {
  const ImVec2 corners[] = {{b.x - legend.x, a.y},
                            {a.x, a.y},
                            {b.x - legend.x, b.y - legend.y},
                            {a.x, b.y - legend.y}};
  ImVec2 best = corners[0];
  size_t best_n = SIZE_MAX;
  for (const ImVec2& c : corners) {
    size_t n = 0;
    for (const ImVec2& p : points) {
      n += p.x >= c.x && p.x <= c.x + legend.x && p.y >= c.y && p.y <= c.y + legend.y;
    }
    if (n < best_n) best_n = n, best = c;
  }
  return best;
}

void DrawLineChart(const ChartData& data, const ChartOptions& opt, ImVec2 size) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 o = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton("##chart", size);
  const bool hovered = ImGui::IsItemHovered();
  const ImU32 axis = IM_COL32(200, 200, 210, 255);
  const ImU32 grid = IM_COL32(70, 72, 80, 255);
  const float fh = ImGui::GetTextLineHeight();

  auto tx = [&](double x) { return opt.log_x ? std::log2(std::max(x, 1e-300)) : x; };
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const Series& s : data.series) {
    for (const SeriesPoint& p : s.points) {
      if (opt.log_x && p.x <= 0) continue;
      x0 = std::min(x0, tx(p.x));
      x1 = std::max(x1, tx(p.x));
      y0 = std::min(y0, p.y - p.ci);
      y1 = std::max(y1, p.y + p.ci);
    }
  }
  dl->AddRectFilled(o, ImVec2(o.x + size.x, o.y + size.y), palette::kBackground);
  if (!std::isfinite(x0)) {
    dl->AddText(ImVec2(o.x + 10, o.y + 10), axis, "no points to plot");
    return;
  }
  if (opt.y_from_zero) y0 = std::min(y0, 0.0), y1 = std::max(y1, 0.0);
  if (x1 == x0) x0 -= 0.5, x1 += 0.5;
  if (y1 == y0) y1 = y0 + 1;
  const double ypad = (y1 - y0) * 0.05;
  y1 += ypad;
  if (!opt.y_from_zero || y0 < 0) y0 -= ypad;

  // Plot area: room for y tick labels on the left, x labels below, title above.
  const float left = 64, right = 16, top = fh * 1.8f, bottom = fh * 3.0f;
  const ImVec2 a(o.x + left, o.y + top), b(o.x + size.x - right, o.y + size.y - bottom);
  auto px = [&](double x) {
    return a.x + static_cast<float>((tx(x) - x0) / (x1 - x0)) * (b.x - a.x);
  };
  auto py = [&](double y) { return b.y - static_cast<float>((y - y0) / (y1 - y0)) * (b.y - a.y); };

  // Grid and ticks.
  for (double v : NiceTicks(y0, y1, 6)) {
    const float y = py(v);
    dl->AddLine(ImVec2(a.x, y), ImVec2(b.x, y), grid);
    const std::string s = FormatTick(v);
    const ImVec2 ts = ImGui::CalcTextSize(s.c_str());
    dl->AddText(ImVec2(a.x - ts.x - 6, y - ts.y / 2), axis, s.c_str());
  }
  std::vector<double> xticks;
  if (!data.x_labels.empty()) {
    for (size_t i = 0; i < data.x_labels.size(); ++i) xticks.push_back(static_cast<double>(i));
  } else if (opt.log_x) {
    for (double e = std::ceil(x0); e <= x1 + 1e-9; e += std::max(1.0, std::floor((x1 - x0) / 8))) {
      xticks.push_back(std::pow(2.0, e));
    }
  } else {
    xticks = NiceTicks(x0, x1, 8);
  }
  for (double v : xticks) {
    const float x = px(v);
    dl->AddLine(ImVec2(x, a.y), ImVec2(x, b.y), grid);
    const std::string s =
        data.x_labels.empty() ? FormatTick(v) : data.x_labels[static_cast<size_t>(v)];
    const ImVec2 ts = ImGui::CalcTextSize(s.c_str());
    dl->AddText(ImVec2(x - ts.x / 2, b.y + 4), axis, s.c_str());
  }
  dl->AddLine(ImVec2(a.x, b.y), ImVec2(b.x, b.y), axis, 1.5f);
  dl->AddLine(ImVec2(a.x, a.y), ImVec2(a.x, b.y), axis, 1.5f);
  const ImVec2 xl = ImGui::CalcTextSize(opt.x_label.c_str());
  dl->AddText(ImVec2((a.x + b.x - xl.x) / 2, b.y + fh + 8), axis, opt.x_label.c_str());
  dl->AddText(ImVec2(o.x + 4, o.y + 2), axis,
              (opt.y_label + (opt.title.empty() ? "" : "   " + opt.title)).c_str());

  if (std::isfinite(opt.marker_x) && (!opt.log_x || opt.marker_x > 0)) {
    const float x = px(opt.marker_x);
    if (x >= a.x && x <= b.x)
      dl->AddLine(ImVec2(x, a.y), ImVec2(x, b.y), palette::kHighlight, 1.5f);
  }
  // Lines and markers.
  bool any_overloaded = false;
  dl->PushClipRect(ImVec2(a.x - 4, a.y - 4), ImVec2(b.x + 4, b.y + 4), true);
  for (size_t si = 0; si < data.series.size(); ++si) {
    const Series& s = data.series[si];
    const Rgba c = CategoricalColour(static_cast<int64_t>(si));
    for (size_t i = 1; i < s.points.size(); ++i) {
      if (opt.log_x && (s.points[i - 1].x <= 0 || s.points[i].x <= 0)) continue;
      dl->AddLine(ImVec2(px(s.points[i - 1].x), py(s.points[i - 1].y)),
                  ImVec2(px(s.points[i].x), py(s.points[i].y)), c, 2.0f);
    }
    for (const SeriesPoint& p : s.points) {
      if (s.points.size() > 80) break;  // markers only where they stay readable
      if (opt.log_x && p.x <= 0) continue;
      const ImVec2 q(px(p.x), py(p.y));
      dl->AddRectFilled(ImVec2(q.x - 3, q.y - 3), ImVec2(q.x + 3, q.y + 3), c);
      if (p.ci > 0) {  // the 95 % interval of replicates, with caps
        const float lo = py(p.y - p.ci), hi = py(p.y + p.ci);
        dl->AddLine(ImVec2(q.x, lo), ImVec2(q.x, hi), c, 1.5f);
        dl->AddLine(ImVec2(q.x - 4, lo), ImVec2(q.x + 4, lo), c, 1.5f);
        dl->AddLine(ImVec2(q.x - 4, hi), ImVec2(q.x + 4, hi), c, 1.5f);
      }
      if (p.overloaded) {  // the queue grew through this point's run
        dl->AddCircle(q, 9.0f, IM_COL32(235, 70, 60, 255), 0, 2.0f);
        any_overloaded = true;
      }
    }
  }
  dl->PopClipRect();

  // Legend, in the corner of the plot with the fewest points under it.
  float lw = 0;
  for (const Series& s : data.series) lw = std::max(lw, ImGui::CalcTextSize(s.label.c_str()).x);
  if (opt.legend && !data.series.empty() && data.series.size() <= 16) {
    const ImVec2 box(lw + fh + 18, (fh + 4) * static_cast<float>(data.series.size()) + 6);
    std::vector<ImVec2> pts;
    for (const Series& s : data.series) {
      for (const SeriesPoint& p : s.points) {
        if (!(opt.log_x && p.x <= 0)) pts.emplace_back(px(p.x), py(p.y));
      }
    }
    const ImVec2 at = PlaceLegend(pts, ImVec2(a.x + 4, a.y + 2), ImVec2(b.x - 4, b.y - 2), box);
    const float lx = at.x + 6;
    float ly = at.y + 4;
    dl->AddRectFilled(at, ImVec2(at.x + box.x, at.y + box.y), IM_COL32(24, 26, 30, 255));
    for (size_t si = 0; si < data.series.size(); ++si) {
      const Rgba c = CategoricalColour(static_cast<int64_t>(si));
      dl->AddRectFilled(ImVec2(lx, ly), ImVec2(lx + fh, ly + fh), c);
      dl->AddText(ImVec2(lx + fh + 6, ly), axis, data.series[si].label.c_str());
      ly += fh + 4;
    }
  }

  if (any_overloaded) {
    const char* note = "red ring: overloaded (the queue grew; TTFT measures the backlog)";
    dl->AddText(ImVec2(a.x + 6, b.y - fh - 4), IM_COL32(235, 70, 60, 255), note);
  }

  // Tooltip: the point nearest the mouse.
  if (hovered) {
    const ImVec2 m = ImGui::GetIO().MousePos;
    float best = 20 * 20;
    const Series* bs = nullptr;
    const SeriesPoint* bp = nullptr;
    for (const Series& s : data.series) {
      for (const SeriesPoint& p : s.points) {
        if (opt.log_x && p.x <= 0) continue;
        const float dx = px(p.x) - m.x, dy = py(p.y) - m.y;
        if (dx * dx + dy * dy < best) best = dx * dx + dy * dy, bs = &s, bp = &p;
      }
    }
    if (bp) {
      ImGui::BeginTooltip();
      ImGui::Text("%s", bs->label.c_str());
      ImGui::Text("%s = %s", opt.x_label.c_str(),
                  data.x_labels.empty() ? FormatTick(bp->x).c_str()
                                        : data.x_labels[static_cast<size_t>(bp->x)].c_str());
      ImGui::Text("%s = %.6g", opt.y_label.c_str(), bp->y);
      if (bp->ci > 0) ImGui::Text("95 %% interval: ± %.6g", bp->ci);
      if (bp->rows > 1) ImGui::TextDisabled("mean of %d rows", bp->rows);
      if (bp->overloaded) ImGui::TextColored(ImVec4(0.92f, 0.27f, 0.24f, 1), "overloaded: TTFT measures the backlog");
      ImGui::EndTooltip();
    }
  }
}

}  // namespace kvsim::viz
