// The roofline step-time model: monotone in work, memory-bound decode, compute-bound prefill.
#include "core/cost_model.h"
#include "core/memory_budget.h"

#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <cstdio>
#include <limits>
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

TEST_CASE("cost model: decode is bound by reading the linear layers' weights") {
  Fixture f = Llama8b();
  HardwareSpec hw;
  hw.step_overhead_us = hw.layer_overhead_us = hw.seq_overhead_us = 0;
  CostModel cm(f.model, f.plan, hw);
  cm.BatchNanos({{1, 0}});
  const StepCost c = cm.Finish();
  // Llama-3.1-8B per layer: QKV 4096 × (4096 + 2·1024) + O 4096 × 4096 + MLP 3 × 4096 × 14336
  // = 218,103,808 weights; × 32 layers + LM head 128256 × 4096 = 7,504,658,432 weights
  // (the embedding is gathered, not streamed) × 2 B / (3350 GB/s × 0.85) = 5.2710 ms.
  const double want_ns = 7504658432.0 * 2 / (3350e9 * 0.85) * 1e9;
  hw.mbu = 0.85;
  CHECK(c.dense_ns > want_ns * 0.999);
  CHECK(c.dense_ns < want_ns * 1.002);  // + activations, < 0.2 %
}

// The dense (linear-layer) time of one decode token of `model`, overheads off, mbu 0.85.
double OneTokenDenseNs(const Fixture& f) {
  HardwareSpec hw;
  hw.step_overhead_us = hw.layer_overhead_us = hw.seq_overhead_us = 0;
  hw.mbu = 0.85;
  CostModel cm(f.model, f.plan, hw);
  cm.BatchNanos({{1, 0}});
  return cm.Finish().dense_ns;
}

TEST_CASE("cost model: an fp8 model streams its LM head in 16 bits") {
  Fixture f = Llama8b();
  f.model.dtype = DType::kFp8;
  const double dense_ns = OneTokenDenseNs(f);
  // The 32 layers' 6,979,321,856 weights at 1 byte and the LM head's 128256 × 4096 =
  // 525,336,576 at 2 bytes (left out of fp8 quantization): 8,029,995,008 bytes /
  // (3350 GB/s × 0.85) = 2.8199 ms. All at 1 byte it would be 2.6354 ms.
  const double want_ns = 8029995008.0 / (3350e9 * 0.85) * 1e9;
  CHECK(dense_ns > want_ns * 0.999);
  CHECK(dense_ns < want_ns * 1.002);  // + activations, < 0.2 %
}

TEST_CASE("cost model: attention_16bit streams an fp8 model's QKV and O in 16 bits") {
  Fixture f = Llama8b();
  f.model.dtype = DType::kFp8;
  f.model.compute.attention_16bit = true;
  const double dense_ns = OneTokenDenseNs(f);
  // As above, plus one more byte for each attention weight: 32 layers × (4096 × 6144 +
  // 4096 × 4096) = 1,342,177,280 weights. 8,029,995,008 + 1,342,177,280 = 9,372,172,288 bytes
  // / (3350 GB/s × 0.85) = 3.2913 ms.
  const double want_ns = 9372172288.0 / (3350e9 * 0.85) * 1e9;
  CHECK(dense_ns > want_ns * 0.999);
  CHECK(dense_ns < want_ns * 1.002);  // + activations, < 0.2 %
  // A 16-bit model has nothing narrower to widen: the key changes nothing.
  Fixture b = Llama8b();
  const double plain_ns = OneTokenDenseNs(b);
  b.model.compute.attention_16bit = true;
  CHECK(OneTokenDenseNs(b) == plain_ns);
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

TEST_CASE("cost model: a large prefill is compute bound, within one wave per GEMM of ideal") {
  Fixture f = Llama8b();
  HardwareSpec hw;
  hw.step_overhead_us = hw.layer_overhead_us = hw.seq_overhead_us = 0;
  CostModel cm(f.model, f.plan, hw);
  cm.BatchNanos({{8192, 0}});
  const StepCost c = cm.Finish();
  // 2 × 6,979,321,856 layer weights × 8192 tokens + the LM head for one sequence, at
  // 989 TFLOP/s × mfu; tile quantization adds at most one wave per GEMM (< 5 % here).
  const double flops = 2.0 * 6979321856.0 * 8192;
  const double want = flops / (hw.dense_tflops_bf16 * 1e12 * hw.mfu) * 1e9;
  CHECK(c.dense_ns > want);
  CHECK(c.dense_ns < want * 1.05);
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

TEST_CASE("hardware presets: every fitted serving key inside its plausible physical range") {
  // The serving keys are fitted end to end (scripts/validation_table.py --write-presets); each
  // must still mean what its name says. Ranges from what the terms are, not from any fit:
  // vLLM's engine spends hundreds of microseconds to a few milliseconds of CPU per step and
  // tens per running request; an HTTP request with tokenization takes one to tens of
  // milliseconds, a token a few microseconds; the GPU's own per-step kernels up to a few
  // milliseconds; one layer's small kernels at most tens of microseconds; one custom
  // all-reduce pass a few microseconds. GPU efficiencies are shares of a datasheet peak.
  struct Range {
    const char* key;
    double HardwareSpec::*field;
    double lo, hi;
  };
  const Range ranges[] = {
      {"step_overhead_us", &HardwareSpec::step_overhead_us, 100, 5000},
      {"seq_overhead_us", &HardwareSpec::seq_overhead_us, 0, 100},
      {"intake_us", &HardwareSpec::intake_us, 500, 20000},
      {"intake_token_ns", &HardwareSpec::intake_token_ns, 0, 10000},
      {"output_token_us", &HardwareSpec::output_token_us, 0, 200},
      {"step_gpu_us", &HardwareSpec::step_gpu_us, 0, 3000},
      {"sampler_sort_us", &HardwareSpec::sampler_sort_us, 0, 3000},
      {"layer_overhead_us", &HardwareSpec::layer_overhead_us, 0, 30},
      {"allreduce_latency_us", &HardwareSpec::allreduce_latency_us, 2, 30},
      {"nccl_latency_us", &HardwareSpec::nccl_latency_us, 5, 100},
      {"mfu", &HardwareSpec::mfu, 0.3, 1.0},
      {"mbu", &HardwareSpec::mbu, 0.5, 1.0},
      {"moe_mbu", &HardwareSpec::moe_mbu, 0.5, 1.0},
      {"attention_mbu", &HardwareSpec::attention_mbu, 0.3, 1.0},
  };
  for (const char* preset :
       {"H100-SXM", "A100-80G", "H200", "B200", "L40S", "RTX-4090", "RTX-PRO-6000"}) {
    auto sc = WithHardware(std::string("{preset: ") + preset + "}");
    REQUIRE(sc.ok());
    for (const Range& r : ranges) {
      const double v = sc->sim.hardware.*(r.field);
      INFO(preset << " " << r.key << " = " << v);
      CHECK(v >= r.lo);
      CHECK(v <= r.hi);
    }
  }
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
  // Copy speed is not GEMM streaming speed: mbu keeps the preset's value.
  auto plain = WithHardware("{preset: H100-SXM}");
  REQUIRE(plain.ok());
  CHECK(h.mbu == plain->sim.hardware.mbu);
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

namespace kvsim {
namespace {

HardwareSpec PlainH100() {
  HardwareSpec hw;
  hw.mbu = 0.8;
  hw.mfu = 0.5;
  hw.num_sms = 132;
  return hw;
}

TEST_CASE("GEMM: small M reads the weights (memory regime)") {
  // 1 × 4096 × 4096 bf16: (4096·4096·2 + 1·8192·2) B = 33,570,816 B at 3350e9 × 0.8 B/s
  // = 12.5264 us; compute is one wave of 16 × 128 tiles: 2·16·128·4096 / (989e12·0.5/132)
  // = 4.48 us, so memory wins.
  const double t = GemmSeconds(PlainH100(), 1, 4096, 4096, 2, 989e12, 0.8);
  CHECK(t == Catch::Approx(33570816.0 / 2.68e12).epsilon(1e-9));
}

TEST_CASE("GEMM: large M is compute bound; tiles quantize M and N, a partial wave costs its share") {
  // 4096 × 4096 × 4096: 32 × 32 = 1024 tiles of 128 × 128 over 132 SMs = 7.7576 waves, each
  // 2·128·128·4096 = 134,217,728 FLOPs at 989e12 × 0.5 / 132 FLOP/s per SM = 35.828 us:
  // 277.94 us (memory would be 37.6 us). Whole waves (8) would give 286.62 us.
  const HardwareSpec hw = PlainH100();
  const double wave = 134217728.0 / (989e12 * 0.5 / 132);
  CHECK(GemmSeconds(hw, 4096, 4096, 4096, 2, 989e12, 0.8) ==
        Catch::Approx(1024.0 / 132.0 * wave));
  // 33 columns of tiles: 1056 tiles = exactly 8 waves; 34 columns: 1088 tiles = 8.2424 waves.
  CHECK(GemmSeconds(hw, 4096, 33 * 128, 4096, 2, 989e12, 0.8) == Catch::Approx(8 * wave));
  CHECK(GemmSeconds(hw, 4096, 34 * 128, 4096, 2, 989e12, 0.8) ==
        Catch::Approx(1088.0 / 132.0 * wave));
  // M is still padded to whole 128-row tiles: 4000 rows cost what 4096 do (32 row tiles),
  // 4097 rows take a 33rd row of tiles: 33 · 32 = 1056 tiles = 8 waves.
  CHECK(GemmSeconds(hw, 4000, 4096, 4096, 2, 989e12, 0.8) ==
        Catch::Approx(1024.0 / 132.0 * wave));
  CHECK(GemmSeconds(hw, 4097, 4096, 4096, 2, 989e12, 0.8) == Catch::Approx(8 * wave));
}

TEST_CASE("grouped expert GEMM: touched experts follow the token spread") {
  HardwareSpec hw = PlainH100();
  hw.moe_mbu = 0.5;
  const double bw = 3350e9 * 0.5;
  // One token, top-1 of 16: exactly one expert, M = 1: 1024 × 1024 fp8 weights + (1024 +
  // 1024) × 2 B of activations.
  const double one = GroupedGemmSeconds(hw, 1, 16, 1, 16, 1024, 1024, 1, 1979e12);
  CHECK(one == Catch::Approx((1048576.0 + 4096.0) / bw));
  // 16 tokens: 16 · (1 − (15/16)^16) = 16 · (1 − 0.356074) = 10.30282 experts touched, the
  // 16 token rows' activations 16 · 2048 · 2 B.
  const double sixteen = GroupedGemmSeconds(hw, 16, 16, 1, 16, 1024, 1024, 1, 1979e12);
  CHECK(sixteen == Catch::Approx((10.30282 * 1048576.0 + 65536.0) / bw).epsilon(1e-5));
  // Expert parallelism over 4 ranks: a quarter of the experts and of the rows.
  const double ep4 = GroupedGemmSeconds(hw, 16, 16, 1, 4, 1024, 1024, 1, 1979e12);
  CHECK(ep4 == Catch::Approx(sixteen / 4).epsilon(1e-5));
}

TEST_CASE("cost model: intake and output processing") {
  Fixture f = Llama8b();
  HardwareSpec hw;
  hw.intake_us = 3000;
  hw.intake_token_ns = 2000;
  hw.output_token_us = 20;
  CostModel cm(f.model, f.plan, hw);
  CHECK(cm.IntakeNanos(500) == 4000000);  // 3 ms + 500 × 2 us
  CHECK(cm.OutputNanos(8) == 160000);     // 8 tokens × 20 us
  CHECK(cm.OutputNanos(0) == 0);
}

TEST_CASE("cost model: the step's CPU part is separate from its GPU part") {
  Fixture f = Llama8b();
  HardwareSpec hw;
  hw.step_overhead_us = 1500;
  hw.seq_overhead_us = 20;
  hw.step_token_ns = 100;
  CostModel cm(f.model, f.plan, hw);
  cm.BatchNanos({{10, 0}, {10, 50}, {10, 90}, {10, 7}});
  const StepCost c = cm.Finish();
  CHECK(c.cpu_ns == 1584000);  // 1500 + 4 × 20 + 40 tokens × 0.1 us
  CHECK(c.gpu_ns == c.dense_ns + c.attention_ns + c.recurrent_ns + c.fixed_ns);
  CHECK(c.total_ns == c.cpu_ns + c.gpu_ns);
}

TEST_CASE("cost model: decode attention reads whole KV blocks; MHA pays more per byte") {
  HardwareSpec hw;
  hw.attention_mbu = 0.75;
  hw.attention_kv_head_penalty = 0.5;
  hw.attention_call_us = 0;
  const double bw = 3350e9 * 0.75;
  // Llama-3.1-8B (GQA, 4 query heads per KV head), one decode over 1000 tokens: 1001 tokens
  // read as 63 blocks of 16 = 1008 tokens × 32 layers × 2 × 8 × 128 × 2 B = 132,120,576 B,
  // × (1 + 0.5/4).
  Fixture f = Llama8b();
  CostModel gqa(f.model, f.plan, hw);
  gqa.BatchNanos({{1, 1000}});
  CHECK(gqa.Finish().attention_ns == Catch::Approx(132120576.0 / bw * 1.125 * 1e9).margin(1));
  // Llama-2-7B (MHA: 32 KV heads): 1008 × 32 × 2 × 32 × 128 × 2 B = 528,482,304 B, × 1.5.
  auto m = LoadModelPreset("llama-2-7b");
  REQUIRE(m.ok());
  PlannerConfig pc;
  pc.kv_memory_bytes = 20LL << 30;
  auto plan = PlanKvCache(m.value(), nullptr, pc);
  REQUIRE(plan.ok());
  CostModel mha(m.value(), plan.value(), hw);
  mha.BatchNanos({{1, 1000}});
  CHECK(mha.Finish().attention_ns == Catch::Approx(528482304.0 / bw * 1.5 * 1e9).margin(1));
}

TEST_CASE("cost model: prefill attention efficiency grows with the chunk length") {
  Fixture f = Llama8b();
  HardwareSpec hw;
  hw.attention_mfu = 0.5;
  hw.attention_prefill_half_tokens = 256;
  CostModel cm(f.model, f.plan, hw);
  cm.BatchNanos({{512, 0}});
  // 512 · (0 + 513/2) · (1 + 256/512) = 196,992 units × 4 · 32 heads · 128 × 32 layers
  // = 1.03280e11 FLOPs at 989e12 × 0.5 = 208.84 us (the KV read, 67 MB, is 27 us).
  CHECK(cm.Finish().attention_ns ==
        Catch::Approx(196992.0 * 16384 * 32 / (989e12 * 0.5) * 1e9).margin(1));
}

TEST_CASE("all-reduce: vLLM's custom one-shot and two-shot over NVLink, NCCL beyond it or on PCIe") {
  // Hand-worked from the rule in core/cost_model.h: latency 5 us per custom pass, NCCL 20 us,
  // 450 GB/s per direction.
  HardwareSpec hw;
  hw.interconnect_gbps = 450;
  hw.allreduce_latency_us = 5;
  hw.nccl_latency_us = 20;
  hw.tp_link = "nvlink";
  const double mib = 1 << 20, kib = 1 << 10;
  CHECK(AllReduceSeconds(hw, mib, 1) == 0);
  // TP 2 is always one-shot: 5 us + 1 peer × 1 MiB / 450 GB/s = 5 + 2.3302 us.
  CHECK(AllReduceSeconds(hw, mib, 2) == Catch::Approx(7.3302e-6).epsilon(1e-4));
  // TP 4 under 512 KiB: one-shot, 3 peers' 256 KiB: 5 + 1.7476 us.
  CHECK(AllReduceSeconds(hw, 256 * kib, 4) == Catch::Approx(6.7476e-6).epsilon(1e-4));
  // TP 8 at 256 KiB (not under it): two-shot, 2 × 5 us + 2 × 7/8 × 256 KiB / 450 GB/s.
  CHECK(AllReduceSeconds(hw, 256 * kib, 8) == Catch::Approx(11.0194e-6).epsilon(1e-4));
  // Above the custom kernel's 8 MiB buffer: NCCL's ring, 20 us + 1.75 × 16 MiB / 450 GB/s.
  CHECK(AllReduceSeconds(hw, 16 * mib, 8) == Catch::Approx(85.2420e-6).epsilon(1e-4));
  // Over PCIe (25 GB/s) NCCL always: 20 us + 1 × 1 MiB / 25 GB/s.
  hw.tp_link = "pcie";
  hw.interconnect_gbps = 25;
  CHECK(AllReduceSeconds(hw, mib, 2) == Catch::Approx(61.943e-6).epsilon(1e-4));
}

TEST_CASE("cost model: sampler_sort_us is paid once per step by a model that sorts to sample") {
  // A model whose generation_config sets top_k or top_p (sampling_sorts, the default) pays
  // the sampler's sort once per step, at any batch; one that only scales and draws does not.
  Fixture sorts = Llama8b();
  Fixture draws = Llama8b();
  draws.model.compute.sampling_sorts = false;
  HardwareSpec hw;
  hw.sampler_sort_us = 0;
  CostModel base(sorts.model, sorts.plan, hw);
  hw.sampler_sort_us = 1100;
  CostModel with_sort(sorts.model, sorts.plan, hw);
  CostModel without_sort(draws.model, draws.plan, hw);
  for (int seqs : {1, 64}) {
    std::vector<std::pair<int64_t, int64_t>> batch(static_cast<size_t>(seqs), {1, 700});
    base.BatchNanos(batch);
    with_sort.BatchNanos(batch);
    without_sort.BatchNanos(batch);
    const StepCost a = base.Finish(), b = with_sort.Finish(), c = without_sort.Finish();
    CHECK(b.fixed_ns - a.fixed_ns == 1100000);
    CHECK(b.gpu_ns - a.gpu_ns == 1100000);
    CHECK(b.cpu_ns == a.cpu_ns);
    CHECK(c.gpu_ns == a.gpu_ns);
  }
}

TEST_CASE("cost model: step_gpu_us is GPU time once per step") {
  Fixture f = Llama8b();
  HardwareSpec hw;
  hw.step_gpu_us = 0;
  CostModel without(f.model, f.plan, hw);
  hw.step_gpu_us = 700;
  CostModel with(f.model, f.plan, hw);
  for (int seqs : {1, 40}) {
    std::vector<std::pair<int64_t, int64_t>> batch(static_cast<size_t>(seqs), {1, 500});
    without.BatchNanos(batch);
    with.BatchNanos(batch);
    const StepCost a = without.Finish(), b = with.Finish();
    CHECK(b.fixed_ns - a.fixed_ns == 700000);
    CHECK(b.gpu_ns - a.gpu_ns == 700000);
    CHECK(b.cpu_ns == a.cpu_ns);
  }
}

TEST_CASE("memory budget: vLLM's KV memory from gpu_memory_utilization, by hand") {
  // Llama-3.1-8B bf16 on an H100 (81559 MiB), TP 1, 2048 tokens / 128 sequences a step.
  auto m = LoadModelPreset("llama-3.1-8b");
  REQUIRE(m.ok());
  MemoryBudgetInputs in;
  in.total_bytes = 81559LL << 20;
  in.gpu_memory_utilization = 0.9;
  in.max_num_batched_tokens = 2048;
  in.max_num_seqs = 128;
  in.non_torch_bytes = 1LL << 30;
  const MemoryBudget b = VllmKvMemoryBudget(m.value(), in);
  CHECK(b.requested == 76968728985);   // floor(0.9 × 81559 MiB)
  CHECK(b.weights == 16060000000);     // 8.03e9 parameters × 2 bytes
  // Forward: 2048 tokens × (3 × 14336 MLP + (32 + 2 × 8) × 128 QKV + 4 × 4096) × 2 bytes
  // = 256 MiB, above the sampler's 128 × 128256 × 4 bytes × 2.
  CHECK(b.activations == 268435456);
  // The rotary cos/sin cache: 131072 positions (config.json) × 128 dims × 2 bytes = 32 MiB.
  CHECK(b.rope_cache == 131072LL * 128 * 2);
  CHECK(b.kv == 76968728985 - 16060000000 - 33554432 - 268435456 - (1LL << 30));
  // TP 2 halves the weights and the per-rank MLP and QKV outputs.
  in.tp = 2;
  const MemoryBudget half = VllmKvMemoryBudget(m.value(), in);
  CHECK(half.weights == 8030000000);
  CHECK(half.activations == 2048LL * (3 * 7168 + 3072 + 16384) * 2);
  // An fp8 checkpoint: 1 byte a weight, but the embedding and LM head stay 16-bit.
  ModelSpec fp8 = m.value();
  fp8.dtype = DType::kFp8;
  in.tp = 1;
  CHECK(VllmKvMemoryBudget(fp8, in).weights == 8030000000 + 2LL * 128256 * 4096);
  // ... and so do the parameters its ignore list names, split over TP with the rest.
  fp8.compute.num_params_16bit = 1000000000;
  in.tp = 2;
  CHECK(VllmKvMemoryBudget(fp8, in).weights ==
        (8030000000 + 2LL * 128256 * 4096 + 1000000000) / 2);
  in.tp = 1;
  // The rotary cache follows config.json's positions, not the served context, and is whole on
  // every rank: Llama-4-Scout's 10485760 positions × 128 dims × 2 bytes = 2.5 GiB.
  ModelSpec scout = m.value();
  scout.compute.max_position_embeddings = 10485760;
  in.tp = 2;
  CHECK(VllmKvMemoryBudget(scout, in).rope_cache == 2684354560);
  scout.compute.rotary_dim = 64;  // a partial rotary factor halves it
  CHECK(VllmKvMemoryBudget(scout, in).rope_cache == 1342177280);
  in.tp = 1;
  ModelSpec nope = m.value();  // no rotary attention layer, nothing cached
  LayerSpec mla;
  mla.kind = LayerKind::kMla;
  mla.num_kv_heads = 1;
  mla.head_size = 576;
  nope.layers.assign(4, mla);
  CHECK(VllmKvMemoryBudget(nope, in).rope_cache == 0);
  // Numbers at int64's edge (a preset may say anything) saturate instead of overflowing.
  ModelSpec huge = m.value();
  huge.compute.num_params = huge.compute.num_active_params = int64_t{1} << 62;
  in.total_bytes = std::numeric_limits<int64_t>::max();
  in.gpu_memory_utilization = 1.0;
  const MemoryBudget edge = VllmKvMemoryBudget(huge, in);
  CHECK(edge.requested > 0);
  CHECK(edge.kv < edge.requested);
}

}  // namespace
}  // namespace kvsim
