// The roofline step-time model: monotone in work, memory-bound decode, compute-bound prefill.
#include "core/cost_model.h"

#include <catch2/catch_test_macros.hpp>

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
