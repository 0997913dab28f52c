#include "viz/ui_util.h"

#include <cmath>

namespace kvsim::viz {

void HelpMarker(const char* text) {
  ImGui::SameLine();
  ImGui::TextDisabled("(?)");
  if (ImGui::IsItemHovered()) {
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 30.0f);
    ImGui::TextUnformatted(text);
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
  }
}

void DrawHatch(ImDrawList* dl, ImVec2 a, ImVec2 b, Rgba colour, float spacing) {
  if (b.x <= a.x || b.y <= a.y) return;
  dl->PushClipRect(a, b, true);
  const float h = b.y - a.y;
  // Lines from bottom-left to top-right, anchored to absolute x so adjacent runs line up.
  const float start = a.x - h - std::fmod(a.x - h, spacing);
  for (float x = start; x < b.x; x += spacing) {
    dl->AddLine(ImVec2(x, b.y), ImVec2(x + h, a.y), colour, 1.0f);
  }
  dl->PopClipRect();
}

void DrawLegend(const std::vector<LegendEntry>& entries) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float sw = ImGui::GetTextLineHeight();
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  bool first = true;
  for (const LegendEntry& e : entries) {
    const float w = sw + 4 + ImGui::CalcTextSize(e.label.c_str()).x + 14;
    if (!first) {
      ImGui::SameLine();
      if (ImGui::GetCursorScreenPos().x + w > right) ImGui::NewLine();
    }
    first = false;
    const ImVec2 p = ImGui::GetCursorScreenPos();
    if (e.colour != 0) {
      dl->AddRectFilled(p, ImVec2(p.x + sw, p.y + sw), e.colour);
      if (e.hatched) DrawHatch(dl, p, ImVec2(p.x + sw, p.y + sw), palette::kHatch, 4.0f);
    }
    ImGui::Dummy(ImVec2(sw, sw));
    ImGui::SameLine(0, 4);
    ImGui::TextUnformatted(e.label.c_str());
  }
}

}  // namespace kvsim::viz
