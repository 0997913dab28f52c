// The overload note (sim/metrics_output.h, newcomer audit (a)#24): a run whose queue grew
// through it says so, one that kept up does not. Records are built by hand: the rule is the
// last quarter's mean wait against the first quarter's, so every expected verdict follows
// from the waits written here.
#include <catch2/catch_test_macros.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "sim/metrics_output.h"

namespace kvsim {
namespace {

// n requests, one per second; request i waits wait_s(i) seconds before its first step.
template <class F>
std::vector<RequestRecord> Records(int n, F wait_s) {
  std::vector<RequestRecord> out;
  for (int i = 0; i < n; ++i) {
    RequestRecord r;
    r.id = RequestId{i};
    r.arrival = static_cast<Tick>(i) * kTicksPerSecond;
    r.first_scheduled = r.arrival + static_cast<Tick>(wait_s(i) * 1e9);
    out.push_back(r);
  }
  return out;
}

TEST_CASE("overload note: a queue that grows through the run is named") {
  // Waits 0.1 s, 0.2 s, ... (i + 1)/10: first quarter (i = 0..9) mean 0.55 s, last quarter
  // (i = 30..39) mean 3.55 s: above 1 s and above 4 × 0.55 = 2.2 s.
  const auto recs = Records(40, [](int i) { return (i + 1) / 10.0; });
  const std::string note = DescribeOverload(recs);
  CHECK(note.find("3.5 s") != std::string::npos);  // 3.55 printed with one decimal
  CHECK(note.find("0.55 s") != std::string::npos);
  CHECK(note.find("queue grew") != std::string::npos);
}

TEST_CASE("overload note: steady waits, short waits and small runs say nothing") {
  // The same 2 s wait throughout: the last quarter is not 4× the first.
  CHECK(DescribeOverload(Records(100, [](int) { return 2.0; })).empty());
  // Growing 10×, but the last quarter waits 0.5 s: below the 1 s floor.
  CHECK(DescribeOverload(Records(40, [](int i) { return i < 10 ? 0.05 : 0.5; })).empty());
  // 39 requests are too few to tell.
  CHECK(DescribeOverload(Records(39, [](int i) { return i * 1.0; })).empty());
  // Rejected and never-scheduled requests are left out: 40 records, 20 of them rejected.
  auto recs = Records(40, [](int i) { return (i + 1) / 10.0; });
  for (int i = 0; i < 40; i += 2) recs[static_cast<size_t>(i)].rejected = true;
  CHECK(DescribeOverload(recs).empty());
}

TEST_CASE("queue growth: the three CSV numbers come from the quarters' mean waits") {
  // 40 requests, one per second; the first ten wait 0.1 s, the last ten 2.0 s, the rest 0.5 s.
  const auto recs = Records(40, [](int i) { return i < 10 ? 0.1 : i >= 30 ? 2.0 : 0.5; });
  const QueueGrowth g = MeasureQueueGrowth(recs);
  CHECK(g.served == 40);
  CHECK(std::abs(g.first_quarter_wait_s - 0.1) < 1e-9);
  CHECK(std::abs(g.last_quarter_wait_s - 2.0) < 1e-9);
  CHECK(g.overloaded);  // 2.0 s > 1 s and > 4 × 0.1 s
  // The same waits given out of arrival order give the same numbers.
  std::vector<std::pair<Tick, Tick>> waits;
  for (auto it = recs.rbegin(); it != recs.rend(); ++it) waits.emplace_back(it->arrival, it->first_scheduled);
  const QueueGrowth h = MeasureQueueGrowth(waits);
  CHECK(h.first_quarter_wait_s == g.first_quarter_wait_s);
  CHECK(h.last_quarter_wait_s == g.last_quarter_wait_s);
  // Last quarter 2.0 s but the first already 0.6 s: 2.0 < 4 × 0.6, a long wait, not growth.
  const QueueGrowth flat =
      MeasureQueueGrowth(Records(40, [](int i) { return i < 10 ? 0.6 : i >= 30 ? 2.0 : 1.0; }));
  CHECK_FALSE(flat.overloaded);
  // Rejected and never-scheduled requests are not served.
  auto some = Records(8, [](int) { return 0.1; });
  some[0].rejected = true;
  some[1].first_scheduled = -1;
  CHECK(MeasureQueueGrowth(some).served == 6);
}

}  // namespace
}  // namespace kvsim
