// Small ImGui helpers shared by the panels: the "(?)" help marker, hatched rectangles for
// padding, and a legend row of colour swatches.
#pragma once

#include <imgui.h>

#include <vector>

#include "viz/colors.h"

namespace kvsim::viz {

// A "(?)" after the previous item whose tooltip is `text`.
void HelpMarker(const char* text);

// Diagonal hatching over [a, b] in `colour` (lines every `spacing` pixels), clipped to it.
void DrawHatch(ImDrawList* dl, ImVec2 a, ImVec2 b, Rgba colour, float spacing = 6.0f);

// One row of legend swatches (wrapping to the available width). Returns the height used.
void DrawLegend(const std::vector<LegendEntry>& entries);

}  // namespace kvsim::viz
