// Colours of the viewer: one palette, the colour of every page-map cell under each
// "colour by" mode, and the legend that names them. Colours are exact RGB values (no
// blending) so that screenshot tests can look for each legend swatch's pixels.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "viz/page_map.h"

namespace kvsim::viz {

// 0xAABBGGRR, as ImGui's IM_COL32 packs it.
using Rgba = uint32_t;
constexpr Rgba MakeRgba(int r, int g, int b, int a = 255) {
  return static_cast<Rgba>(r) | (static_cast<Rgba>(g) << 8) | (static_cast<Rgba>(b) << 16) |
         (static_cast<Rgba>(a) << 24);
}
constexpr int RedOf(Rgba c) { return static_cast<int>(c & 0xff); }
constexpr int GreenOf(Rgba c) { return static_cast<int>((c >> 8) & 0xff); }
constexpr int BlueOf(Rgba c) { return static_cast<int>((c >> 16) & 0xff); }

namespace palette {
constexpr Rgba kKey = MakeRgba(66, 133, 244);     // blue
constexpr Rgba kValue = MakeRgba(244, 160, 36);   // orange
constexpr Rgba kConv = MakeRgba(52, 168, 83);     // green
constexpr Rgba kSsm = MakeRgba(156, 92, 214);     // purple
constexpr Rgba kState = MakeRgba(0, 172, 193);    // teal
constexpr Rgba kPadding = MakeRgba(96, 96, 104);  // grey, drawn hatched
constexpr Rgba kHatch = MakeRgba(150, 150, 160);
constexpr Rgba kHighlight = MakeRgba(255, 236, 64);  // the hovered token, in both layouts
constexpr Rgba kBackground = MakeRgba(24, 26, 30);
// Block pool states.
constexpr Rgba kFree = MakeRgba(58, 62, 70);
constexpr Rgba kCached = MakeRgba(46, 139, 87);
constexpr Rgba kNull = MakeRgba(20, 20, 20);
constexpr Rgba kUnknownHolder = MakeRgba(200, 200, 200);  // in use, holder not told
// CPU offloading tier slots.
constexpr Rgba kCpuInFlight = MakeRgba(255, 179, 0);  // amber: a store is copying into it
constexpr Rgba kCpuReady = MakeRgba(0, 150, 136);     // teal: ready, evictable
constexpr Rgba kCpuLoading = MakeRgba(216, 27, 96);   // magenta: pinned by a load
}  // namespace palette

enum class ColourBy : int { kStructure = 0, kHead, kToken, kLayer };
inline constexpr const char* kColourByNames[] = {"structure (K/V/state)", "head", "token",
                                                 "layer slot"};

// A distinct colour for categorical index i (heads, layers, requests): golden-angle hues.
Rgba CategoricalColour(int64_t i);
// A perceptual ramp (dark blue → yellow) at t in [0, 1].
Rgba RampColour(double t);
// `c` darkened by `f` in [0, 1].
Rgba Darken(Rgba c, double f);

// The fill of a page-map cell: exactly one legend colour per cell (Mamba states keep their
// state colours except when colouring by layer).
Rgba CellColour(const ByteInfo& info, ColourBy mode, const PageMap& map);

struct LegendEntry {
  std::string label;
  Rgba colour = 0;
  bool hatched = false;
};

// The legend for `mode` over the maps shown (only what they contain; a few entries for
// ramps and long categorical lists).
std::vector<LegendEntry> PageLegend(ColourBy mode, const std::vector<const PageMap*>& maps);

}  // namespace kvsim::viz
