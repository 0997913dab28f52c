// Chart legends: the newcomer audit's (a)#20 — the block pool's occupancy legend, fixed at the
// top right, hid the "cached blocks / pool" line where it climbed into that corner.
#include "viz/line_chart.h"

#include <catch2/catch_test_macros.hpp>
#include <vector>

namespace kvsim::viz {
namespace {

bool Covers(ImVec2 at, ImVec2 size, ImVec2 p) {
  return p.x >= at.x && p.x <= at.x + size.x && p.y >= at.y && p.y <= at.y + size.y;
}

TEST_CASE("line chart: the legend goes to the corner with the fewest points", "[viz]") {
  const ImVec2 a(0, 0), b(400, 200), box(150, 50);
  // No points: the usual top right.
  const ImVec2 empty = PlaceLegend({}, a, b, box);
  CHECK(empty.x == 250);
  CHECK(empty.y == 0);
  // A line rising to the top right (the occupancy chart's cached share): the legend moves
  // off it and covers none of its points.
  std::vector<ImVec2> rising;
  for (int i = 0; i <= 40; ++i) rising.emplace_back(10.0f * i, 200.0f - 5.0f * i);
  const ImVec2 at = PlaceLegend(rising, a, b, box);
  int covered = 0;
  for (const ImVec2& p : rising) covered += Covers(at, box, p);
  CHECK(covered == 0);
  CHECK_FALSE((at.x == 250 && at.y == 0));
}

}  // namespace
}  // namespace kvsim::viz
