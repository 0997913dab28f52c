// Sweep CSV reading and the series a chart draws from it.
#include "viz/sweep_table.h"

#include <catch2/catch_test_macros.hpp>
#include <cmath>

namespace kvsim::viz {
namespace {

constexpr const char* kCsv =
    "cache.block_size,cache.attn_pack_size,seed,hit_rate,note\n"
    "16,1,1,0.90,a\n"
    "16,1,2,0.80,\"b, quoted\"\n"
    "64,1,1,0.70,c\n"
    "16,4,1,0.95,d\n"
    "\"64\",4,1,0.85,\"say \"\"hi\"\"\"\r\n";

TEST_CASE("keys are key paths, metrics are the other numeric columns") {
  auto t = ParseSweepCsv(kCsv, "t.csv");
  REQUIRE(t.ok());
  CHECK(t->rows.size() == 5);
  CHECK(t->KeyColumns() == std::vector<int>{0, 1});
  CHECK(t->MetricColumns() == std::vector<int>{2, 3});
  CHECK_FALSE(t->numeric[4]);
  CHECK(t->rows[1][4] == "b, quoted");
  CHECK(t->rows[4][4] == "say \"hi\"");
}

TEST_CASE("one line per series value, x sorted, duplicate points averaged") {
  auto t = ParseSweepCsv(kCsv, "t.csv");
  REQUIRE(t.ok());
  const ChartData d = BuildChart(t.value(), 0, 1, t->Find("hit_rate"));
  REQUIRE(d.series.size() == 2);
  CHECK(d.series[0].label == "cache.attn_pack_size = 1");
  REQUIRE(d.series[0].points.size() == 2);
  CHECK(d.series[0].points[0].x == 16);
  CHECK(std::abs(d.series[0].points[0].y - 0.85) < 1e-12);  // mean of seeds 1 and 2
  CHECK(d.series[0].points[0].rows == 2);
  CHECK(d.series[0].points[1].x == 64);
  CHECK(std::abs(d.series[1].points[1].y - 0.85) < 1e-12);
  // No series key: one line over all rows.
  const ChartData one = BuildChart(t.value(), 0, -1, 3);
  REQUIRE(one.series.size() == 1);
  CHECK(one.series[0].points.size() == 2);
  // A text column as x: categories in order of appearance.
  const ChartData cat = BuildChart(t.value(), 4, -1, 3);
  CHECK(cat.x_labels.size() == 5);
  CHECK(cat.x_labels.front() == "a");
}

TEST_CASE("replicates draw their interval; an overloaded point is flagged") {
  constexpr const char* kReps =
      "point,cache.attn_pack_size,status,seeds,ttft_mean_ms,ttft_mean_ms.ci95,overloaded\n"
      "0,1,ok,10,364.6,170.5,0.3\n"
      "1,4,ok,10,71.3,20.0,0\n";
  auto t = ParseSweepCsv(kReps, "r.csv");
  REQUIRE(t.ok());
  // The interval column is a number about ttft_mean_ms, not a swept key.
  CHECK(t->KeyColumns() == std::vector<int>{1});
  const ChartData d = BuildChart(t.value(), 1, -1, t->Find("ttft_mean_ms"));
  REQUIRE(d.series.size() == 1);
  REQUIRE(d.series[0].points.size() == 2);
  CHECK(d.series[0].points[0].ci == 170.5);
  CHECK(d.series[0].points[0].overloaded);  // 3 of 10 seeds
  CHECK(d.series[0].points[1].ci == 20.0);
  CHECK_FALSE(d.series[0].points[1].overloaded);
  // Rows averaged into one point have no interval of their own.
  constexpr const char* kTwo =
      "point,cache.block_size,seed,x,x.ci95\n0,16,1,1.0,0.5\n1,16,2,3.0,0.5\n";
  auto two = ParseSweepCsv(kTwo, "two.csv");
  REQUIRE(two.ok());
  const ChartData avg = BuildChart(two.value(), 1, -1, two->Find("x"));
  REQUIRE(avg.series.at(0).points.size() == 1);
  CHECK(avg.series[0].points[0].y == 2.0);
  CHECK(avg.series[0].points[0].ci == 0);
}

TEST_CASE("byte-size keys order lines and categories by size, not as text") {
  auto t = ParseSweepCsv(
      "point,cache.block_size,cache.kv_memory_bytes,prefix_hit_rate\n"
      "0,16,16GiB,0.04\n1,16,110GiB,0.05\n2,16,1TiB,0.27\n"
      "3,64,16GiB,0.04\n4,64,110GiB,0.05\n5,64,1TiB,0.27\n",
      "mc.csv");
  REQUIRE(t.ok());
  CHECK(t->KeyColumns() == std::vector<int>{1, 2});
  const ChartData d = BuildChart(t.value(), 1, 2, 3);
  REQUIRE(d.series.size() == 3);
  CHECK(d.series[0].label == "cache.kv_memory_bytes = 16GiB");
  CHECK(d.series[1].label == "cache.kv_memory_bytes = 110GiB");
  CHECK(d.series[2].label == "cache.kv_memory_bytes = 1TiB");
  const ChartData c = BuildChart(t.value(), 2, 1, 3);
  CHECK(c.x_labels == std::vector<std::string>{"16GiB", "110GiB", "1TiB"});
  REQUIRE(c.series.size() == 2);
  CHECK(c.series[0].points[2].y == 0.27);
}

TEST_CASE("bad CSV is an error that names the line") {
  auto bad = ParseSweepCsv("a.b,c\n1,2\n3\n", "s.csv");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("s.csv:3") != std::string::npos);
  CHECK_FALSE(ParseSweepCsv("", "e.csv").ok());
  CHECK_FALSE(ParseSweepCsv("a,\"b\n1,2\n", "q.csv").ok());
  CHECK_FALSE(LoadSweepCsv("/nonexistent/sweep.csv").ok());
}

TEST_CASE("nice ticks are round and cover the range") {
  const auto unit = NiceTicks(0, 1, 5);
  REQUIRE(unit.size() == 6);
  for (size_t i = 0; i < unit.size(); ++i) CHECK(std::abs(unit[i] - 0.2 * i) < 1e-12);
  const auto t = NiceTicks(16, 4096, 8);
  REQUIRE(!t.empty());
  CHECK(t.front() >= 16);
  CHECK(t.back() <= 4096);
  CHECK(t.size() <= 9);
  CHECK(FormatTick(1500000) == "1.5M");
  CHECK(FormatTick(0.25) == "0.25");
}

}  // namespace
}  // namespace kvsim::viz
