// Simulated beside measured, per load stage (sim/report/reference_report.h): the stage metrics
// of hand-made request records, worked out on paper.
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>

#include <string>
#include <vector>

#include "sim/report/reference_report.h"

namespace kvsim {
namespace {

RequestRecord Rec(double arrival_s, double ttft_ms, double e2e_ms, int64_t outputs) {
  RequestRecord r;
  r.arrival = static_cast<Tick>(arrival_s * 1e9);
  r.first_token = r.arrival + static_cast<Tick>(ttft_ms * 1e6);
  r.finish = r.arrival + static_cast<Tick>(e2e_ms * 1e6);
  r.output_tokens = outputs;
  return r;
}

double Get(const MetricValues& m, const std::string& name) {
  for (const auto& [k, v] : m)
    if (k == name) return v;
  FAIL("no metric " << name);
  return 0;
}

TEST_CASE("stage metrics: requests are split by arrival time, TPOT as the measured runs define it") {
  // Stages of 10 s and 5 s. Stage 1: arrivals at 1 s and 9.5 s; stage 2: 10 s (its first
  // instant) and 14 s; an arrival at 15 s belongs to no stage; a rejected and an unfinished
  // request are left out.
  std::vector<RequestRecord> recs{Rec(1, 20, 1020, 11), Rec(9.5, 40, 2040, 21),
                                  Rec(10, 30, 530, 6),  Rec(14, 50, 1550, 16),
                                  Rec(15, 1, 2, 2)};
  RequestRecord rejected = Rec(2, 5, 6, 2);
  rejected.rejected = true;
  RequestRecord unfinished = Rec(3, 5, 6, 2);
  unfinished.finish = -1;
  recs.push_back(rejected);
  recs.push_back(unfinished);
  const std::vector<MetricValues> s = StageMetrics(recs, {10.0, 5.0});
  REQUIRE(s.size() == 2);
  // Stage 1: TTFT mean (20 + 40) / 2 = 30; E2E mean (1020 + 2040) / 2 = 1530; mean outputs
  // 16, so TPOT = (1530 − 30) / 15 = 100.
  CHECK(Get(s[0], "ttft_mean_ms") == Catch::Approx(30));
  CHECK(Get(s[0], "e2e_mean_ms") == Catch::Approx(1530));
  CHECK(Get(s[0], "tpot_mean_ms") == Catch::Approx(100));
  // Stage 2: TTFT 40, E2E 1040, outputs 11: TPOT (1040 − 40) / 10 = 100.
  CHECK(Get(s[1], "ttft_mean_ms") == Catch::Approx(40));
  CHECK(Get(s[1], "e2e_mean_ms") == Catch::Approx(1040));
  CHECK(Get(s[1], "tpot_mean_ms") == Catch::Approx(100));
  // Against measured: error = (simulated − measured) / measured; unknown names are skipped.
  const std::vector<MetricComparison> rows =
      CompareMetrics(s[1], {{"ttft_mean_ms", 50.0}, {"bogus", 1.0}, {"tpot_mean_ms", 80.0}});
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].metric == "ttft_mean_ms");
  CHECK(rows[0].error == Catch::Approx(-0.2));
  CHECK(rows[1].metric == "tpot_mean_ms");
  CHECK(rows[1].error == Catch::Approx(0.25));
}

}  // namespace
}  // namespace kvsim
