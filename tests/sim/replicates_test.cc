// Replicates (sim/run/replicates.h): the Student-t interval against tabulated quantiles and a
// hand-worked sample, the combination of a point's seeds into one row, and `sweep.seeds`
// end to end: the CSV's mean of each metric equals the mean of the same point run once per
// seed by a `seed` axis, whatever -j.
#include "sim/run/replicates.h"

#include <algorithm>
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/run/simulation.h"
#include "sim/sweep/sweep_runner.h"
#include "sim/sweep/sweep_spec.h"

namespace kvsim {
namespace {

namespace fs = std::filesystem;
using Catch::Approx;

TEST_CASE("replicates: t quantiles match the tables") {
  // Two-sided 95 % critical values of Student's t (any statistics table).
  CHECK(StudentT975(1) == Approx(12.706).margin(5e-4));
  CHECK(StudentT975(2) == Approx(4.303).margin(5e-4));
  CHECK(StudentT975(4) == Approx(2.776).margin(5e-4));
  CHECK(StudentT975(9) == Approx(2.262).margin(5e-4));
  CHECK(StudentT975(29) == Approx(2.045).margin(5e-4));
  CHECK(StudentT975(100000) == Approx(1.960).margin(5e-4));
}

TEST_CASE("replicates: mean and 95 % half-width of a hand-worked sample") {
  // {1, 2, 3, 4, 5}: mean 3, s² = (4 + 1 + 0 + 1 + 4) / 4 = 2.5, s = 1.58114;
  // half-width = 2.77645 × 1.58114 / √5 = 1.96324.
  const std::vector<double> xs = {1, 2, 3, 4, 5};
  const MeanInterval mi = MeanInterval95(xs);
  CHECK(mi.mean == 3.0);
  CHECK(mi.half_width == Approx(1.96324).epsilon(1e-5));
  // One value: no interval. Equal values: exactly no spread.
  CHECK(MeanInterval95(std::vector<double>{7.5}).half_width == 0);
  const std::vector<double> same = {0.1 + 0.2, 0.1 + 0.2, 0.1 + 0.2};
  CHECK(MeanInterval95(same).mean == 0.1 + 0.2);
  CHECK(MeanInterval95(same).half_width == 0);
}

PointResult Rep(int64_t blocks, double ttft, int flag, const std::string& overload = "") {
  PointResult r;
  r.index = 3;
  r.labels = {{"cache.block_size", "16"}};
  r.kind = &EngineKind();
  r.metrics.Add("num_blocks", "blocks", blocks);
  r.metrics.Add("ttft_mean_ms", "ms", ttft);
  r.metrics.Add("overloaded", "flag", flag);
  r.summary_json = "{}";
  r.overload = overload;
  return r;
}

TEST_CASE("replicates: a point's seeds become one row of means and intervals") {
  std::vector<PointResult> reps = {Rep(100, 10.0, 0), Rep(100, 20.0, 1, "grew"),
                                   Rep(100, 30.0, 0)};
  const std::vector<int64_t> seeds = {4, 5, 6};
  const PointResult r = CombineReplicates(std::move(reps), seeds);
  REQUIRE(r.status.ok());
  CHECK(r.index == 3);
  CHECK(r.metrics.Number("seeds") == 3);
  // Every seed agrees on an integer: it stays an integer with no interval.
  REQUIRE(r.metrics.Find("num_blocks") != nullptr);
  CHECK(r.metrics.Find("num_blocks")->integer());
  CHECK(r.metrics.Number("num_blocks.ci95") == 0);
  // {10, 20, 30}: mean 20, s = 10, half-width = 4.30265 × 10 / √3 = 24.8414.
  CHECK(r.metrics.Number("ttft_mean_ms") == Approx(20.0));
  CHECK(r.metrics.Number("ttft_mean_ms.ci95") == Approx(24.8414).epsilon(1e-5));
  // A flag becomes the share of seeds that set it, and the note names them.
  CHECK(r.metrics.Number("overloaded") == Approx(1.0 / 3));
  CHECK(r.overload == "in 1 of 3 seeds (5): grew");
  // Columns are the metric then its interval, in order.
  REQUIRE(r.metrics.items().size() == 7);
  CHECK(r.metrics.items()[3].name == "ttft_mean_ms");
  CHECK(r.metrics.items()[4].name == "ttft_mean_ms.ci95");
}

TEST_CASE("replicates: a point fails when one of its seeds fails, naming the seed") {
  std::vector<PointResult> reps = {Rep(100, 10.0, 0), Rep(100, 20.0, 0)};
  reps[1].status = Status::Error("bad_value", "no blocks");
  const std::vector<int64_t> seeds = {1, 2};
  const PointResult r = CombineReplicates(std::move(reps), seeds);
  CHECK_FALSE(r.status.ok());
  CHECK(r.status.message() == "seed 2: no blocks");
  CHECK(r.metrics.empty());
}

ConfigNode Tree(const std::string& yaml) {
  auto t = ParseYaml(yaml, "replicates.yaml");
  REQUIRE(t.ok());
  return t.value();
}

std::string Slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const char* kBase = R"(
name: reps
seed: 3
model: {preset: llama-3.1-8b}
cache: {block_size: 16, num_gpu_blocks: 2000}
workload:
  kind: shared_prefix
  num_requests: 40
  rate_per_s: 20
  system_prompt: {tokens: 200}
  prompt_tokens: {dist: lognormal, mean: 50}
  output_tokens: {dist: lognormal, mean: 20}
)";

// The CSV's column `name` of each row.
std::vector<std::string> Column(const std::string& csv, const std::string& name) {
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);
  auto split = [](const std::string& l) {
    std::vector<std::string> f(1);
    for (char c : l) {
      if (c == ',') f.emplace_back(); else f.back() += c;
    }
    return f;
  };
  const auto header = split(line);
  const size_t col = static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  std::vector<std::string> out;
  while (std::getline(in, line)) out.push_back(split(line).at(col));
  return out;
}

TEST_CASE("replicates: sweep.seeds reports the mean of the seeds run one by one") {
  const fs::path dir = fs::temp_directory_path() / "kvsim_replicates_test";
  fs::remove_all(dir);
  std::ostringstream log;
  // The same point once per seed, as an ordinary `seed` axis: 3, 4, 5.
  SweepOptions one;
  one.out_dir = (dir / "axis").string();
  REQUIRE(RunSweep(Tree(std::string(kBase) + "sweep: {seed: [3, 4, 5]}\n"), "t", one, log).ok());
  const auto ttft = Column(Slurp(one.out_dir + "/sweep.csv"), "ttft_mean_ms");
  REQUIRE(ttft.size() == 3);
  const std::vector<double> xs = {std::stod(ttft[0]), std::stod(ttft[1]), std::stod(ttft[2])};
  // They differ (else the test proves nothing).
  CHECK(xs[0] != xs[1]);
  const MeanInterval want = MeanInterval95(xs);
  // The replicates: seeds 3 … 5 from `seed: 3`, on one thread and on two.
  std::string csv[2];
  for (int j = 1; j <= 2; ++j) {
    SweepOptions o;
    o.jobs = j;
    o.out_dir = (dir / ("reps" + std::to_string(j))).string();
    REQUIRE(RunSweep(Tree(std::string(kBase) + "sweep: {seeds: 3}\n"), "t", o, log).ok());
    csv[j - 1] = Slurp(o.out_dir + "/sweep.csv");
  }
  CHECK(csv[0] == csv[1]);
  CHECK(Column(csv[0], "seeds") == std::vector<std::string>{"3"});
  // The CSV keeps 6 significant digits.
  CHECK(std::stod(Column(csv[0], "ttft_mean_ms")[0]) == Approx(want.mean).epsilon(1e-5));
  // `xs` were read back from a CSV too: each is off by up to 5e-6 of its size, which moves a
  // 3-seed half-width t·s/√3 (t = 4.303) by up to t/√2 of that.
  const double rounding = 5e-6 * std::max({std::abs(xs[0]), std::abs(xs[1]), std::abs(xs[2])});
  CHECK(std::stod(Column(csv[0], "ttft_mean_ms.ci95")[0]) ==
        Approx(want.half_width).epsilon(1e-5).margin(4.303 / std::sqrt(2.0) * rounding));
  fs::remove_all(dir);
}

TEST_CASE("replicates: bad seeds and a seed axis beside seeds are errors naming the line") {
  auto seeds = SweepSeeds(Tree(std::string(kBase) + "sweep:\n  seeds: 0\n"));
  REQUIRE_FALSE(seeds.ok());
  CHECK(seeds.status().message().find("replicates.yaml:14: sweep.seeds: 0 is out of range") !=
        std::string::npos);
  CHECK_FALSE(SweepSeeds(Tree(std::string(kBase) + "sweep: {seeds: two}\n")).ok());
  CHECK_FALSE(SweepSeeds(Tree(std::string(kBase) + "sweep: {seeds: 1001}\n")).ok());
  auto both = SweepSeeds(Tree(std::string(kBase) + "sweep: {seeds: 2, seed: [1, 2]}\n"));
  REQUIRE_FALSE(both.ok());
  CHECK(both.status().message().find("seed is an axis") != std::string::npos);
  // seeds is not an axis: one point, no labels.
  auto pts = ExpandSweep(Tree(std::string(kBase) + "sweep: {seeds: 4}\n"));
  REQUIRE(pts.ok());
  CHECK(pts->size() == 1);
  CHECK(pts->front().labels.empty());
}

}  // namespace
}  // namespace kvsim
