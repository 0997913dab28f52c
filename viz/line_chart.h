// A line chart drawn with ImDrawList (ImGui 1.86 has only PlotLines): axes with round ticks,
// grid lines, one coloured line with point markers per series, a legend, and a tooltip for
// the point nearest the mouse.
#pragma once

#include <imgui.h>

#include <limits>
#include <string>
#include <vector>

#include "viz/sweep_table.h"

namespace kvsim::viz {

struct ChartOptions {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log_x = false;  // log2 x axis (block sizes, pack sizes); needs x > 0
  bool y_from_zero = true;
  double marker_x = std::numeric_limits<double>::quiet_NaN();  // a vertical "now" line
  bool legend = true;
};

// Where a legend box of `legend` size goes inside the plot area [a, b]: the corner (top
// right, top left, bottom right, bottom left, in that order of preference) that covers the
// fewest of `points` (screen positions), so the legend never hides the data when a corner is
// free of it. Returns the box's top-left.
ImVec2 PlaceLegend(const std::vector<ImVec2>& points, ImVec2 a, ImVec2 b, ImVec2 legend);

// Draws into a `size` region at the cursor (advancing it). Series i uses
// CategoricalColour(i), which is also its legend swatch.
void DrawLineChart(const ChartData& data, const ChartOptions& options, ImVec2 size);

}  // namespace kvsim::viz
