// A line chart drawn with ImDrawList (ImGui 1.86 has only PlotLines): axes with round ticks,
// grid lines, one coloured line with point markers per series, a legend, and a tooltip for
// the point nearest the mouse.
#pragma once

#include <imgui.h>

#include <limits>
#include <string>

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

// Draws into a `size` region at the cursor (advancing it). Series i uses
// CategoricalColour(i), which is also its legend swatch.
void DrawLineChart(const ChartData& data, const ChartOptions& options, ImVec2 size);

}  // namespace kvsim::viz
