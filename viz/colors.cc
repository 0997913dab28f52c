#include "viz/colors.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace kvsim::viz {
namespace {

Rgba FromHsv(double h, double s, double v) {
  h = std::fmod(h, 1.0) * 6.0;
  const int i = static_cast<int>(h);
  const double f = h - i;
  const double p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
  double r = v, g = t, b = p;
  switch (i) {
    case 0:
      r = v;
      g = t;
      b = p;
      break;
    case 1:
      r = q;
      g = v;
      b = p;
      break;
    case 2:
      r = p;
      g = v;
      b = t;
      break;
    case 3:
      r = p;
      g = q;
      b = v;
      break;
    case 4:
      r = t;
      g = p;
      b = v;
      break;
    default:
      r = v;
      g = p;
      b = q;
      break;
  }
  return MakeRgba(static_cast<int>(r * 255 + 0.5), static_cast<int>(g * 255 + 0.5),
                  static_cast<int>(b * 255 + 0.5));
}

Rgba StructureColour(Region r) {
  switch (r) {
    case Region::kKey:
      return palette::kKey;
    case Region::kValue:
      return palette::kValue;
    case Region::kConvState:
      return palette::kConv;
    case Region::kSsmState:
      return palette::kSsm;
    case Region::kOtherState:
      return palette::kState;
    case Region::kPadding:
      return palette::kPadding;
  }
  return palette::kPadding;
}

}  // namespace

Rgba CategoricalColour(int64_t i) {
  constexpr double kGolden = 0.61803398875;
  return FromHsv(0.58 + kGolden * static_cast<double>(i), 0.62, 0.92);
}

Rgba RampColour(double t) {
  t = std::clamp(t, 0.0, 1.0);
  // Three stops, roughly viridis: deep blue → teal → yellow.
  const double stops[3][3] = {{59, 28, 140}, {33, 145, 140}, {253, 231, 37}};
  const double x = t * 2;
  const int i = std::min(1, static_cast<int>(x));
  const double f = x - i;
  auto mix = [&](int k) {
    return static_cast<int>(stops[i][k] + (stops[i + 1][k] - stops[i][k]) * f + 0.5);
  };
  return MakeRgba(mix(0), mix(1), mix(2));
}

Rgba Darken(Rgba c, double f) {
  auto d = [&](int v) { return static_cast<int>(v * (1 - f) + 0.5); };
  return MakeRgba(d(RedOf(c)), d(GreenOf(c)), d(BlueOf(c)), static_cast<int>(c >> 24));
}

Rgba CellColour(const ByteInfo& info, ColourBy mode, const PageMap& map) {
  if (!info.valid()) return palette::kPadding;
  const bool state = info.region == Region::kConvState || info.region == Region::kSsmState ||
                     info.region == Region::kOtherState;
  if (state && mode != ColourBy::kLayer) return StructureColour(info.region);
  switch (mode) {
    case ColourBy::kStructure:
      return StructureColour(info.region);
    case ColourBy::kHead:
      return CategoricalColour(info.coord.head);
    case ColourBy::kToken: {
      const int64_t n = std::max<int64_t>(1, map.manager_block_tokens() - 1);
      return RampColour(static_cast<double>(info.manager_token) / static_cast<double>(n));
    }
    case ColourBy::kLayer:
      return CategoricalColour(info.layer);
  }
  return palette::kPadding;
}

std::vector<LegendEntry> PageLegend(ColourBy mode, const std::vector<const PageMap*>& maps) {
  std::set<Region> regions;
  int64_t max_heads = 0, max_tokens = 0;
  std::vector<std::pair<int, std::string>> layers;
  for (const PageMap* m : maps) {
    if (!m) continue;
    for (const PageSegment& s : m->segments()) {
      if (s.layer < 0) {
        regions.insert(Region::kPadding);
        continue;
      }
      regions.insert(s.region);
    }
    for (const PageOwner& o : m->owners()) {
      if (o.kind != LayerKind::kMamba) {
        regions.insert(Region::kValue);  // attention segments are labelled K but hold V too
        max_heads = std::max(max_heads, o.layout.num_heads);
        max_tokens = std::max(max_tokens, o.layout.manager_block_tokens());
        if (o.layout.v_bytes == 0) regions.erase(Region::kValue);
      }
      for (size_t s = 0; s < o.slot_layers.size(); ++s) {
        if (o.slot_layers[s] < 0) continue;
        std::pair<int, std::string> e{o.slot_layers[s], o.slot_names[s]};
        if (std::find(layers.begin(), layers.end(), e) == layers.end()) layers.push_back(e);
      }
    }
  }
  std::vector<LegendEntry> out;
  auto add_states = [&] {
    if (regions.count(Region::kConvState)) out.push_back({"conv state", palette::kConv, false});
    if (regions.count(Region::kSsmState)) out.push_back({"SSM state", palette::kSsm, false});
    if (regions.count(Region::kOtherState)) out.push_back({"state", palette::kState, false});
  };
  switch (mode) {
    case ColourBy::kStructure:
      if (regions.count(Region::kKey)) out.push_back({"K", palette::kKey, false});
      if (regions.count(Region::kValue)) out.push_back({"V", palette::kValue, false});
      add_states();
      break;
    case ColourBy::kHead: {
      const int64_t shown = std::min<int64_t>(max_heads, 8);
      for (int64_t h = 0; h < shown; ++h) {
        out.push_back({"head " + std::to_string(h), CategoricalColour(h), false});
      }
      if (max_heads > shown) out.push_back({"… " + std::to_string(max_heads) + " heads", 0, false});
      add_states();
      break;
    }
    case ColourBy::kToken:
      if (max_tokens > 0) {
        out.push_back({"token 0", RampColour(0), false});
        out.push_back({"token " + std::to_string(max_tokens / 2), RampColour(0.5), false});
        out.push_back({"token " + std::to_string(max_tokens - 1), RampColour(1), false});
      }
      add_states();
      break;
    case ColourBy::kLayer: {
      std::sort(layers.begin(), layers.end());
      const size_t shown = std::min<size_t>(layers.size(), 12);
      for (size_t i = 0; i < shown; ++i) {
        out.push_back({layers[i].second, CategoricalColour(layers[i].first), false});
      }
      if (layers.size() > shown) {
        out.push_back({"… " + std::to_string(layers.size()) + " layers", 0, false});
      }
      break;
    }
  }
  if (regions.count(Region::kPadding)) out.push_back({"padding", palette::kPadding, true});
  return out;
}

}  // namespace kvsim::viz
