// Colour legends: every colour a page map draws has a legend entry, and legend colours are
// distinct (the screenshot test looks for them pixel by pixel).
#include "viz/colors.h"

#include <catch2/catch_test_macros.hpp>
#include <set>

#include "viz/plan_model.h"

namespace kvsim::viz {
namespace {

std::vector<PageMap> AllGroupMaps(const KvCachePlan& p, int tensor) {
  std::vector<PageMap> out;
  for (size_t g = 0; g < p.groups.size(); ++g) {
    auto m = PageMap::Build(p, {tensor, static_cast<int>(g), 1});
    if (m.ok()) out.push_back(std::move(m.value()));
  }
  return out;
}

std::set<Rgba> LegendColours(const std::vector<LegendEntry>& l) {
  std::set<Rgba> s;
  for (const auto& e : l) {
    if (e.colour) s.insert(e.colour);
  }
  return s;
}

TEST_CASE("structure legend of the default plan names K, V, conv, SSM and padding") {
  auto m = PlanModel::Load("", {});
  REQUIRE(m.ok());
  const auto maps = AllGroupMaps(m->plan(), 0);
  REQUIRE(maps.size() == 4);
  std::vector<const PageMap*> ptrs;
  for (const auto& x : maps) ptrs.push_back(&x);
  const auto legend = PageLegend(ColourBy::kStructure, ptrs);
  std::vector<std::string> labels;
  for (const auto& e : legend) labels.push_back(e.label);
  CHECK(labels == std::vector<std::string>{"K", "V", "conv state", "SSM state", "padding"});
  CHECK(LegendColours(legend).size() == legend.size());  // all distinct
  CHECK(legend.back().hatched);
}

TEST_CASE("every cell colour drawn is a legend colour, in every mode") {
  auto m = PlanModel::Load("", {"model.preset=llama-3.1-8b", "parallel.tp=1"});
  REQUIRE(m.ok());
  auto map = PageMap::Build(m->plan(), {0, -1, 1});
  REQUIRE(map.ok());
  const Raster r = MakeRaster(map->begin(), map->size(), map->token_row_bytes(), 128, 64);
  const auto cells = ClassifyCells(map.value(), r);
  for (ColourBy mode : {ColourBy::kStructure, ColourBy::kHead, ColourBy::kLayer}) {
    const auto legend = LegendColours(PageLegend(mode, {&map.value()}));
    for (const auto& c : cells) {
      INFO("mode " << static_cast<int>(mode));
      CHECK(legend.count(CellColour(c, mode, map.value())) == 1);
    }
  }
  // Heads: 8 distinct colours for 8 KV heads.
  const auto heads = PageLegend(ColourBy::kHead, {&map.value()});
  CHECK(LegendColours(heads).size() == 8);
}

TEST_CASE("padding legend appears only when a page has padding") {
  auto m = PlanModel::Load("", {"model.preset=mimo-style", "parallel.tp=4"});
  REQUIRE(m.ok());
  const KvCachePlan& p = m->plan();
  auto target = PageMap::Build(p, {0, 0, 1});
  auto draft = PageMap::Build(p, {0, static_cast<int>(p.groups.size()) - 1, 1});
  REQUIRE(target.ok());
  REQUIRE(draft.ok());
  auto has_padding = [](const std::vector<LegendEntry>& l) {
    for (const auto& e : l) {
      if (e.label == "padding") return true;
    }
    return false;
  };
  CHECK_FALSE(has_padding(PageLegend(ColourBy::kStructure, {&target.value()})));
  CHECK(has_padding(PageLegend(ColourBy::kStructure, {&draft.value()})));
}

TEST_CASE("categorical colours differ for neighbours; the ramp runs dark to light") {
  for (int i = 0; i < 16; ++i) CHECK(CategoricalColour(i) != CategoricalColour(i + 1));
  const Rgba a = RampColour(0), b = RampColour(1);
  CHECK(RedOf(a) + GreenOf(a) + BlueOf(a) < RedOf(b) + GreenOf(b) + BlueOf(b));
}

}  // namespace
}  // namespace kvsim::viz
