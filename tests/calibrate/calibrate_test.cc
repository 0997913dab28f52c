// kvsim calibrate's fitting: bounded least squares against hand-solved systems, and each fit
// (operator profiles, serving runs, gpu-validate attention) recovering the coefficients that
// made its synthetic measurements, within 1 %.
#include "sim/calibrate/calibrate.h"

#include <algorithm>
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "sim/scenario/scenario_loader.h"

namespace kvsim {
namespace {

const double kInf = std::numeric_limits<double>::infinity();

TEST_CASE("bounded least squares: exact system, and bounds that bind") {
  // [[1,0],[0,2],[1,1]] x = [1,4,3]: normal equations [[2,1],[1,5]] x = [4,11] → x = (1, 2).
  Eigen::MatrixXd a(3, 2);
  a << 1, 0, 0, 2, 1, 1;
  Eigen::VectorXd b(3);
  b << 1, 4, 3;
  const Eigen::VectorXd x = BoundedLeastSquares(a, b, Eigen::Vector2d(-kInf, -kInf),
                                                Eigen::Vector2d(kInf, kInf));
  CHECK(x(0) == Catch::Approx(1));
  CHECK(x(1) == Catch::Approx(2));
  // I x = (−1, 2) within [0, 1]²: the nearest box point is (0, 1).
  const Eigen::VectorXd y = BoundedLeastSquares(Eigen::MatrixXd::Identity(2, 2),
                                                Eigen::Vector2d(-1, 2), Eigen::Vector2d(0, 0),
                                                Eigen::Vector2d(1, 1));
  CHECK(y(0) == Catch::Approx(0).margin(1e-12));
  CHECK(y(1) == Catch::Approx(1));
  // NNLS: x1 + x2 = 1 and x1 − x2 = 3 want x = (2, −1); with x ≥ 0, x2 = 0 and x1 = 2
  // (minimises (x1 − 1)² + (x1 − 3)²).
  Eigen::MatrixXd c(2, 2);
  c << 1, 1, 1, -1;
  const Eigen::VectorXd z =
      BoundedLeastSquares(c, Eigen::Vector2d(1, 3), Eigen::Vector2d(0, 0), Eigen::Vector2d(kInf, kInf));
  CHECK(z(0) == Catch::Approx(2));
  CHECK(z(1) == Catch::Approx(0).margin(1e-12));
}

// A Llama-2-7B-like layer at TP 1 and a 70B-like layer at TP 4 (GEMM shapes by hand).
std::vector<CostModel::Linear> Layer(double hidden, double qkv_n, double o_k, double mlp) {
  return {{"qkv", 1, qkv_n, hidden, false},
          {"o", 1, hidden, o_k, false},
          {"gate_up", 1, 2 * mlp, hidden, false},
          {"down", 1, hidden, mlp, false}};
}

TEST_CASE("operator fit recovers mbu, mfu and the per-layer overhead within 1 %") {
  HardwareSpec truth;
  truth.mbu = 0.82;
  truth.mfu = 0.63;
  truth.layer_overhead_us = 27;
  const double peak = truth.dense_tflops_bf16 * 1e12;
  std::vector<OperatorSample> samples;
  const std::vector<std::pair<std::string, std::vector<CostModel::Linear>>> models = {
      {"7b", Layer(4096, 12288, 4096, 11008)},
      {"70b-tp4", Layer(8192, 2560, 2048, 7168)},
      {"34b-tp2", Layer(8192, 5120, 4096, 11008)}};
  for (const auto& [name, linears] : models) {
    for (double n : {1.0, 8.0, 32.0, 128.0, 512.0, 1024.0, 2048.0, 4096.0}) {
      OperatorSample s;
      s.label = fmt::format("h100 {} tp1 N={}", name, n);
      s.gpu = "h100";
      s.linears = linears;
      s.tokens = n;
      s.measured_s = OperatorSeconds(truth, s, peak);
      samples.push_back(s);
    }
  }
  HardwareSpec start;
  start.mbu = 0.6;
  start.mfu = 0.4;
  start.layer_overhead_us = 1;
  auto fit = FitOperatorProfiles(start, samples, peak);
  REQUIRE(fit.ok());
  CHECK(fit->mbu == Catch::Approx(0.82).epsilon(0.01));
  CHECK(fit->mfu == Catch::Approx(0.63).epsilon(0.01));
  CHECK(fit->layer_overhead_us == Catch::Approx(27).epsilon(0.01));
  for (const auto& e : fit->errors) CHECK(std::abs(e.leave_one_out) < 0.01);
}

TEST_CASE("serving fit recovers CPU, intake and per-sequence terms within 1 %") {
  // A stand-in for the simulator with the physics of a lightly loaded server: TTFT = intake
  // + 1.5 steps, TPOT = one step with n sequences, E2E = TTFT + 99 TPOTs.
  const std::vector<double> concurrency = {4, 12, 30};
  auto simulate = [&](const HardwareSpec& hw) -> Result<std::vector<double>> {
    std::vector<double> out;
    for (double n : concurrency) {
      const double step_ms = (hw.step_overhead_us + hw.seq_overhead_us * n) * 1e-3 + 5.0;
      const double ttft = hw.intake_us * 1e-3 + 1.5 * step_ms;
      out.push_back(ttft);
      out.push_back(step_ms);
      out.push_back(ttft + 99 * step_ms);
    }
    return out;
  };
  HardwareSpec truth;
  truth.step_overhead_us = 900;
  truth.seq_overhead_us = 35;
  truth.intake_us = 4200;
  std::vector<ServingMeasurement> meas;
  const auto values = simulate(truth).value();
  for (size_t i = 0; i < concurrency.size(); ++i) {
    const std::string run = fmt::format("run{}", i);
    meas.push_back({run, "ttft_mean_ms", values[3 * i]});
    meas.push_back({run, "tpot_mean_ms", values[3 * i + 1]});
    meas.push_back({run, "e2e_mean_ms", values[3 * i + 2]});
  }
  HardwareSpec start;
  start.step_overhead_us = 2000;
  start.seq_overhead_us = 5;
  start.intake_us = 100;
  const std::vector<FitParameter> params = {
      {"step_overhead_us", 0, 10000}, {"seq_overhead_us", 0, 500}, {"intake_us", 0, 50000}};
  auto fit = FitServingRuns(start, params, meas, simulate, 20);
  REQUIRE(fit.ok());
  CHECK(fit->hw.step_overhead_us == Catch::Approx(900).epsilon(0.01));
  CHECK(fit->hw.seq_overhead_us == Catch::Approx(35).epsilon(0.01));
  CHECK(fit->hw.intake_us == Catch::Approx(4200).epsilon(0.01));
  for (const auto& e : fit->errors) CHECK(std::abs(e.in_sample) < 0.001);
}

// When the data pull a coefficient below its bound, the fit stops on the bound exactly: a
// rounding error outside it (−4e-15 for a lower bound of 0) would be a hardware file that kvsim
// refuses ("must be at least 0"). The stand-in's per-sequence cost is negative (steps get
// shorter with more sequences), so the fit wants seq_overhead_us below its lower bound 0.5;
// the fit works in units of the range (3.7), and 0.5 / 3.7 · 3.7 rounds to 0.49999999999999994.
TEST_CASE("serving fit: a coefficient pulled past its bound stays exactly on it") {
  const std::vector<double> concurrency = {4, 12, 30};
  auto simulate = [&](const HardwareSpec& hw) -> Result<std::vector<double>> {
    std::vector<double> out;
    for (double n : concurrency)
      out.push_back((hw.step_overhead_us + hw.seq_overhead_us * n) * 1e-3);
    return out;
  };
  std::vector<ServingMeasurement> meas;
  for (size_t i = 0; i < concurrency.size(); ++i)
    meas.push_back({fmt::format("run{}", i), "tpot_mean_ms", (1000 - 7.3 * concurrency[i]) * 1e-3});
  HardwareSpec start;
  start.step_overhead_us = 700;
  start.seq_overhead_us = 3.7;
  const std::vector<FitParameter> params = {{"step_overhead_us", 0, 10000},
                                            {"seq_overhead_us", 0.5, 4.2}};
  auto fit = FitServingRuns(start, params, meas, simulate, 20);
  REQUIRE(fit.ok());
  CHECK(fit->hw.seq_overhead_us == 0.5);
  for (const auto& [key, v] : fit->values)
    if (key == "seq_overhead_us") CHECK(v == 0.5);
}

// The prior, worked by hand: one run whose TPOT is step_overhead_us / 1000 ms, measured 1 ms,
// so its relative error is x / 1000 − 1; the fit starts at x0 = 500 with range 2000, and a
// prior weight of 4 adds 4 · ((x − 500) / 2000)² = (x − 500)² / 10⁶. The objective
// ((x − 1000)² + (x − 500)²) / 10⁶ is least at x = 750, halfway; without the prior at 1000.
TEST_CASE("serving fit: the prior weight pulls towards the start as the objective says") {
  auto simulate = [](const HardwareSpec& hw) -> Result<std::vector<double>> {
    return std::vector<double>{hw.step_overhead_us * 1e-3};
  };
  const std::vector<ServingMeasurement> meas = {{"run0", "tpot_mean_ms", 1.0}};
  HardwareSpec start;
  start.step_overhead_us = 500;
  const std::vector<FitParameter> params = {{"step_overhead_us", 0, 2000}};
  auto with_prior = FitServingRuns(start, params, meas, simulate, 20, 4.0);
  REQUIRE(with_prior.ok());
  CHECK(with_prior->hw.step_overhead_us == Catch::Approx(750).epsilon(1e-4));
  CHECK(with_prior->errors.at(0).in_sample == Catch::Approx(-0.25).epsilon(1e-3));
  auto without = FitServingRuns(start, params, meas, simulate, 20, 0.0);
  REQUIRE(without.ok());
  CHECK(without->hw.step_overhead_us == Catch::Approx(1000).epsilon(1e-4));
}

TEST_CASE("gpu-validate fit: decode attention's fixed cost and bandwidth share") {
  // t = 10 us + bytes / (3.35e12 × 0.8).
  std::string rows;
  for (double bytes : {1e8, 2e8, 4e8, 8e8}) {
    rows += fmt::format("{}{{\"kernel\": \"decode_attention\", \"variant\": \"b{}\", \"bytes\": {}, "
                        "\"median_s\": {}}}",
                        rows.empty() ? "" : ",", bytes, bytes, 10e-6 + bytes / (3.35e12 * 0.8));
  }
  rows += ",{\"kernel\": \"append\", \"bytes\": 5, \"median_s\": 1}";  // not attention: ignored
  const std::string json = "{\"timing\": {\"rows\": [" + rows + "]}}";
  auto fit = FitGpuValidate(json, "v.json", 3.35e12);
  INFO(fit.status().message());
  REQUIRE(fit.ok());
  CHECK(fit->attention_mbu == Catch::Approx(0.8).epsilon(0.01));
  CHECK(fit->attention_call_us == Catch::Approx(10).epsilon(0.01));
  CHECK(fit->errors.size() == 4);
  auto bad = FitGpuValidate("{\"cases\": []}", "v.json", 3.35e12);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("v.json") != std::string::npos);
}

TEST_CASE("operator profiles: bad entries are errors naming the file and the entry") {
  auto resolve = [](const std::string&, int64_t)
      -> Result<std::pair<std::vector<CostModel::Linear>, double>> {
    return std::make_pair(Layer(4096, 12288, 4096, 11008), 2.0);
  };
  auto ok = ParseOperatorProfiles(
      R"({"entries": [{"gpu": "h100", "model": "m", "tp": 1, "num_tokens": 8, "per_layer_ms": 0.2}]})",
      "ops.json", resolve);
  REQUIRE(ok.ok());
  CHECK(ok->size() == 1);
  CHECK(ok->front().measured_s == Catch::Approx(0.2e-3));
  auto bad = ParseOperatorProfiles(
      R"({"entries": [{"gpu": "h100", "model": "m", "tp": 1, "num_tokens": 8}]})", "ops.json",
      resolve);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("ops.json: entries[0]") != std::string::npos);
  CHECK_FALSE(ParseOperatorProfiles("not json", "ops.json", resolve).ok());
}

TEST_CASE("hardware keys by name; the hardware file lists the fitted keys") {
  HardwareSpec hw;
  CHECK(SetHardwareKey(hw, "intake_us", 1234));
  double v = 0;
  CHECK(GetHardwareKey(hw, "intake_us", &v));
  CHECK(v == 1234);
  CHECK_FALSE(SetHardwareKey(hw, "no_such_key", 1));
  const std::string yaml = HardwareFileYaml("", "fitted on: x", {{"mbu", 0.8125}, {"intake_us", 4000}});
  CHECK(yaml.find("mbu: 0.8125\n") != std::string::npos);
  CHECK(yaml.find("intake_us: 4000\n") != std::string::npos);
  CHECK(yaml.find("# fitted on: x") != std::string::npos);
}

TEST_CASE("serving fit: every bound is a value a scenario accepts") {
  // A fit ends on a bound when the data pull past it; the file it writes must still load.
  for (const FitParameter& p : ServingFitParameters()) {
    for (const double v : {p.lower, p.upper}) {
      INFO(p.key << " = " << v);
      const std::string set = fmt::format("hardware.{}={}", p.key, v);
      CHECK(LoadScenario(LoadOptions{"", {"sweep={}", set}}).ok());
    }
  }
  // The shares of a peak among them are bounded by 1.
  for (const char* key : {"mbu", "mfu", "moe_mbu", "attention_mbu", "attention_mfu"}) {
    INFO(key);
    auto it = std::find_if(ServingFitParameters().begin(), ServingFitParameters().end(),
                           [&](const FitParameter& p) { return p.key == key; });
    REQUIRE(it != ServingFitParameters().end());
    CHECK(it->lower > 0);
    CHECK(it->upper <= 1.0);
  }
}

}  // namespace
}  // namespace kvsim
