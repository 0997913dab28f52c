// The overload note (sim/metrics_output.h, newcomer audit (a)#24): a run whose queue grew
// through it says so, one that kept up does not. Records are built by hand: the rule is the
// last quarter's mean wait against the first quarter's, so every expected verdict follows
// from the waits written here.
#include <catch2/catch_test_macros.hpp>

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

}  // namespace
}  // namespace kvsim
