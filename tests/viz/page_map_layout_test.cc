// Where the Page map panel puts its two sides (audit finding #21): side by side when each
// half is wide enough for a side's widest line, else side B stacked below side A, so a
// 1024-px window does not cut side B off at the right edge.
#include <catch2/catch_test_macros.hpp>

#include "viz/panels/page_map_panel.h"

namespace kvsim::viz {
namespace {

TEST_CASE("page map sides: beside each other when both fit, else stacked") {
  const float gap = 16;
  // One side: the whole region, never stacked.
  SideBoxes one = LayoutSides(800, 500, false, 600, gap);
  CHECK_FALSE(one.stacked);
  CHECK(one.w == 800);
  CHECK(one.h == 500);
  // 1600x900 window: ~1430 px wide, halves of ~707 px hold a 600-px side.
  SideBoxes wide = LayoutSides(1430, 700, true, 600, gap);
  CHECK_FALSE(wide.stacked);
  CHECK(wide.w == (1430 - gap) / 2);
  CHECK(wide.h == 700);
  // 1024x640 window: ~840 px wide, halves of 412 px do not.
  SideBoxes narrow = LayoutSides(840, 440, true, 600, gap);
  CHECK(narrow.stacked);
  CHECK(narrow.w == 840);
  CHECK(narrow.h == (440 - gap) / 2);
  // The boundary: exactly wide enough stays side by side.
  CHECK_FALSE(LayoutSides(2 * 600 + gap, 400, true, 600, gap).stacked);
  CHECK(LayoutSides(2 * 600 + gap - 1, 400, true, 600, gap).stacked);
}

}  // namespace
}  // namespace kvsim::viz
