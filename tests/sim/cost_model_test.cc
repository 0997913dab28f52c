// The roofline step-time model: monotone in work, memory-bound decode, compute-bound prefill.
#include "core/cost_model.h"

#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <cstdio>
#include <fstream>

#include "sim/scenario/scenario_loader.h"

namespace kvsim {
namespace {

struct Fixture {
  ModelSpec model;
  KvCachePlan plan;
};

Fixture Llama8b() {
  auto m = LoadModelPreset("llama-3.1-8b");
  REQUIRE(m.ok());
  PlannerConfig c;
  c.kv_memory_bytes = 20LL << 30;
  auto plan = PlanKvCache(m.value(), nullptr, c);
  REQUIRE(plan.ok());
  return {m.value(), plan.value()};
}

TEST_CASE("cost model: an empty step costs nothing; any step costs at least its overhead") {
  Fixture f = Llama8b();
  HardwareSpec hw;
  CostModel cm(f.model, f.plan, hw);
  cm.Begin();
  CHECK(cm.StepNanos() == 0);
  const int64_t one = cm.BatchNanos({{1, 0}});
  CHECK(one >= static_cast<int64_t>((hw.step_overhead_us + 32 * hw.layer_overhead_us) * 1000));
}

TEST_CASE("cost model: decode is bound by reading the weights") {
  Fixture f = Llama8b();
  HardwareSpec hw;
  hw.step_overhead_us = hw.layer_overhead_us = hw.seq_overhead_us = 0;
  CostModel cm(f.model, f.plan, hw);
  cm.BatchNanos({{1, 0}});
  const StepCost c = cm.Finish();
  // 8.03e9 params × 2 B / (3350 GB/s × 0.8) ≈ 5.99 ms.
  const double want = 2.0 * static_cast<double>(f.model.compute.num_active_params) /
                      (hw.hbm_bandwidth_gbps * 1e9 * hw.mbu) * 1e9;
  CHECK(c.dense_ns > want * 0.999);
  CHECK(c.dense_ns < want * 1.001);
}

TEST_CASE("cost model: monotone in tokens and in context") {
  Fixture f = Llama8b();
  CostModel cm(f.model, f.plan, HardwareSpec{});
  int64_t prev = 0;
  for (int64_t q : {1, 16, 256, 2048, 8192}) {
    const int64_t t = cm.BatchNanos({{q, 0}});
    CHECK(t >= prev);
    prev = t;
  }
  prev = 0;
  for (int64_t ctx : {0, 1000, 10000, 100000}) {
    std::vector<std::pair<int64_t, int64_t>> batch(64, {1, ctx});
    const int64_t t = cm.BatchNanos(batch);
    CHECK(t > prev);
    prev = t;
  }
}

TEST_CASE("cost model: a large prefill is compute bound (time grows ~linearly)") {
  Fixture f = Llama8b();
  HardwareSpec hw;
  hw.step_overhead_us = hw.layer_overhead_us = hw.seq_overhead_us = 0;
  CostModel cm(f.model, f.plan, hw);
  cm.BatchNanos({{8192, 0}});
  const StepCost c = cm.Finish();
  const double flops = 2.0 * static_cast<double>(f.model.compute.num_active_params) * 8192;
  const double want = flops / (hw.dense_tflops_bf16 * 1e12 * hw.mfu) * 1e9;
  CHECK(c.dense_ns > want * 0.999);
  CHECK(c.dense_ns < want * 1.001);
  CHECK(c.attention_ns > 0);
}

TEST_CASE("cost model: faster hardware is faster") {
  Fixture f = Llama8b();
  HardwareSpec h100, b200;
  b200.dense_tflops_bf16 = 2250;
  b200.hbm_bandwidth_gbps = 8000;
  CostModel a(f.model, f.plan, h100), b(f.model, f.plan, b200);
  std::vector<std::pair<int64_t, int64_t>> batch = {{512, 0}, {1, 3000}, {1, 9000}};
  CHECK(b.BatchNanos(batch) < a.BatchNanos(batch));
}

}  // namespace
}  // namespace kvsim

namespace kvsim {
namespace {

Result<Scenario> WithHardware(const std::string& hw_yaml) {
  auto tree = ParseYaml("model: {preset: llama-3.1-8b}\nhardware: " + hw_yaml + "\n", "hw.yaml");
  REQUIRE(tree.ok());
  return ParseScenario(tree.value(), "hw.yaml");
}

TEST_CASE("hardware: preset by name or file stem, inline keys win, unknown preset lists all") {
  auto h200 = WithHardware("{preset: H200}");
  REQUIRE(h200.ok());
  CHECK(h200->sim.hardware.hbm_bandwidth_gbps == 4800);
  CHECK(h200->sim.hardware.name == "H200");
  auto b200 = WithHardware("{preset: b200, mbu: 0.9}");
  REQUIRE(b200.ok());
  CHECK(b200->sim.hardware.dense_tflops_bf16 == 2250);
  CHECK(b200->sim.hardware.mbu == 0.9);
  auto a100 = WithHardware("{preset: A100-80G}");
  REQUIRE(a100.ok());
  CHECK(a100->sim.hardware.dense_tflops_fp8 == 312);
  auto bad = WithHardware("{preset: H300}");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("H100-SXM") != std::string::npos);
  auto typo = WithHardware("{hbm_bandwith_gbps: 1}");
  REQUIRE_FALSE(typo.ok());
  CHECK(typo.status().message().find("did you mean") != std::string::npos);
}

TEST_CASE("hardware.file: a gpu-validate calibration maps onto the cost model's keys") {
  const std::string path = "/tmp/kvsim_calibration_test.yaml";
  {
    std::ofstream f(path);
    f << "hardware:\n  name: \"NVIDIA H100 80GB HBM3\"\n  source: \"calibrated\"\n"
         "  hbm_peak_bytes_per_s: 3.0e+12\n  copy_bytes_per_s: 2.7e+12\n"
         "  move_fixed_s: 9.0e-06\n  move_bytes_per_s: 2.4e+12\n"
         "  attn_fixed_s: 1.5e-05\n  attn_bytes_per_s: 2.1e+12\n"
         "  attn_item_bytes_per_s: 1.4e+10\n";
  }
  auto sc = WithHardware("{preset: H100-SXM, file: " + path + ", step_overhead_us: 100}");
  INFO(sc.status().message());
  REQUIRE(sc.ok());
  const HardwareSpec& h = sc->sim.hardware;
  CHECK(h.name == "NVIDIA H100 80GB HBM3");
  CHECK(h.hbm_bandwidth_gbps == Catch::Approx(3000));
  CHECK(h.mbu == Catch::Approx(0.9));
  CHECK(h.attention_mbu == Catch::Approx(0.7));
  CHECK(h.attention_call_us == Catch::Approx(15));
  CHECK(h.step_overhead_us == 100);   // inline wins over the file
  CHECK(h.dense_tflops_bf16 == 989);  // untouched keys keep the preset's values
  CHECK(sc->sim.hardware_source.find("file") != std::string::npos);
  std::remove(path.c_str());
}

TEST_CASE("cost model: attention_call_us adds a fixed cost per attention layer") {
  Fixture f = Llama8b();
  HardwareSpec a, b;
  b.attention_call_us = 10;
  CostModel ca(f.model, f.plan, a), cb(f.model, f.plan, b);
  const int64_t d = cb.BatchNanos({{1, 100}}) - ca.BatchNanos({{1, 100}});
  CHECK(d == 32 * 10 * 1000);
}

}  // namespace
}  // namespace kvsim
