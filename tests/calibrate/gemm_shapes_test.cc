// The GEMM list gpu-validate times (sim/calibrate/gemm_shapes.h): hand-computed shapes for a
// dense model at TP 1 and 2 and for an fp8 MoE preset, agreement with the cost model's dense
// time, the JSON of timed samples both ways, and the dense fit recovering the mbu, mfu,
// moe_mbu and per-GEMM fixed cost that made synthetic samples, within 1 %.
#include "sim/calibrate/gemm_shapes.h"

#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "sim/scenario/scenario_loader.h"

namespace kvsim {
namespace {

struct Planned {
  ModelSpec model;
  KvCachePlan plan;
};

Planned Plan(const std::string& preset, int64_t tp, int64_t ep = 1) {
  auto m = LoadModelPreset(preset);
  REQUIRE(m.ok());
  PlannerConfig pc;
  pc.tp = tp;
  pc.ep = ep;
  pc.kv_memory_bytes = int64_t{1} << 30;
  auto plan = PlanKvCache(m.value(), nullptr, pc);
  INFO(plan.status().message());
  REQUIRE(plan.ok());
  return {m.value(), plan.value()};
}

// name → (n, k) of the shapes at `tokens` in `dtype`.
std::map<std::string, std::pair<int64_t, int64_t>> At(const std::vector<GemmShape>& shapes,
                                                      int64_t tokens, DType dtype) {
  std::map<std::string, std::pair<int64_t, int64_t>> out;
  for (const auto& s : shapes) {
    if (s.tokens == tokens && s.dtype == dtype) out[s.name] = {s.n, s.k};
  }
  return out;
}

TEST_CASE("GEMM shapes of Llama-3.1-8B at TP 1 and TP 2, by hand") {
  // hidden 4096, 32 query / 8 KV heads of 128, MLP 14336, vocabulary 128256, bf16.
  for (int64_t tp : {1, 2}) {
    const Planned p = Plan("llama-3.1-8b", tp);
    auto shapes = ModelGemmShapes(p.model, p.plan, DefaultGemmTokens());
    REQUIRE(shapes.ok());
    CHECK(shapes->size() == 5 * 7);  // five linear layers × seven token counts, bf16 only
    const auto s = At(shapes.value(), 512, DType::kBFloat16);
    using NK = std::pair<int64_t, int64_t>;
    if (tp == 1) {
      CHECK(s.at("qkv") == NK{(32 + 2 * 8) * 128, 4096});  // 6144
      CHECK(s.at("o") == NK{4096, 32 * 128});
      CHECK(s.at("gate_up") == NK{2 * 14336, 4096});
      CHECK(s.at("down") == NK{4096, 14336});
      CHECK(s.at("lm_head") == NK{128256, 4096});
    } else {
      CHECK(s.at("qkv") == NK{(16 + 2 * 4) * 128, 4096});  // 3072
      CHECK(s.at("o") == NK{4096, 16 * 128});
      CHECK(s.at("gate_up") == NK{14336, 4096});
      CHECK(s.at("down") == NK{4096, 7168});
      CHECK(s.at("lm_head") == NK{64128, 4096});
    }
    for (const auto& g : shapes.value()) {
      CHECK(g.m == g.tokens);
      CHECK(g.groups == 1);
      CHECK_FALSE(g.grouped);
    }
  }
}

TEST_CASE("GEMM shapes of Llama-4-Scout (fp8 MoE, 16 experts top-1), by hand") {
  // hidden 5120, 40 query / 8 KV heads of 128, 48 layers, vocabulary 202048, 108.6 B params of
  // which 17.2 B active. Routed experts: (108.6 − 17.2) B × 16/15 = 97.493 B, one expert
  // 97.493 B / (16 × 48) = 126.94 M params = 3 × 5120 × 8264.6 → gate/up N 16529.2 → 16528,
  // down K 8264.6 → 8272 (multiples of 16). Dense MLP (the shared expert) from what is left:
  // 17.2 B − 6.093 B routed − 2.069 B embeddings/head − 3.020 B attention = 6.018 B over 48
  // layers = 3 × 5120 × 8162.2 → gate/up N 16324.3 → 16320, down K 8162.2 → 8160.
  const Planned p = Plan("llama-4-scout-17b-16e-fp8", 1);
  auto shapes = ModelGemmShapes(p.model, p.plan, DefaultGemmTokens());
  REQUIRE(shapes.ok());
  // bf16: 7 token counts × (6 linears + 2 grouped); fp8: the same less the router, the LM
  // head and the attention's QKV and O, which the checkpoint keeps in bf16 (its ignore list
  // names self_attn: the preset's attention_16bit).
  CHECK(shapes->size() == 7 * 8 + 7 * 4);
  using NK = std::pair<int64_t, int64_t>;
  for (DType dt : {DType::kBFloat16, DType::kFp8E4M3}) {
    const auto s = At(shapes.value(), 8, dt);
    if (dt == DType::kBFloat16) {
      CHECK(s.at("router") == NK{16, 5120});
      CHECK(s.at("lm_head") == NK{202048, 5120});
      CHECK(s.at("qkv") == NK{(40 + 2 * 8) * 128, 5120});
      CHECK(s.at("o") == NK{5120, 40 * 128});
    } else {
      CHECK(s.count("router") == 0);
      CHECK(s.count("lm_head") == 0);
      CHECK(s.count("qkv") == 0);
      CHECK(s.count("o") == 0);
    }
    CHECK(s.at("gate_up") == NK{16320, 5120});
    CHECK(s.at("down") == NK{5120, 8160});
    CHECK(s.at("experts.gate_up") == NK{16528, 5120});
    CHECK(s.at("experts.down") == NK{5120, 8272});
  }
  // Expected spread of T tokens over 16 experts, top-1: touched = 16 (1 − (15/16)^T), each with
  // T / touched tokens. T = 8: 6.45 → 6 experts × 1.24 → 1 token; T = 32: 13.97 → 14 × 2.29 →
  // 2; T = 128: 16.0 × 8; T = 8192: 16 × 512.
  const std::map<int64_t, std::pair<int64_t, int64_t>> spread = {
      {1, {1, 1}}, {8, {6, 1}}, {32, {14, 2}}, {128, {16, 8}}, {8192, {16, 512}}};
  for (const auto& g : shapes.value()) {
    if (!g.grouped) {
      CHECK(g.m == g.tokens);
      continue;
    }
    auto it = spread.find(g.tokens);
    if (it == spread.end()) continue;
    INFO(g.Label());
    CHECK(g.groups == it->second.first);
    CHECK(g.m == it->second.second);
  }
}

TEST_CASE("The expert shapes price a batch exactly as the cost model does") {
  // The dense time of a decode batch of T sequences from the cost model, against the same
  // time summed from linears() and MoeGemmDimsOf's unrounded expert shapes.
  for (const auto& [preset, tp, ep] :
       {std::tuple<std::string, int64_t, int64_t>{"llama-4-scout-17b-16e-fp8", 1, 1},
        {"llama-4-scout-17b-16e-fp8", 2, 1},
        {"gpt-oss-120b", 2, 1},
        {"gpt-oss-120b", 2, 2}}) {
    INFO(preset << " tp " << tp << " ep " << ep);
    const Planned p = Plan(preset, tp, ep);
    const HardwareSpec hw;
    CostModel cm(p.model, p.plan, hw);
    const auto moe = MoeGemmDimsOf(p.model, p.plan);
    REQUIRE(moe.has_value());
    const double wb = ElementBytes(p.model.dtype);
    const double peak = (IsFp8(p.model.dtype) ? hw.dense_tflops_fp8 : hw.dense_tflops_bf16) * 1e12;
    for (int64_t t : {1, 8, 77, 512, 4096}) {
      std::vector<std::pair<int64_t, int64_t>> batch(static_cast<size_t>(t), {1, 100});
      cm.Begin();
      for (const auto& [q, ctx] : batch) cm.Add(q, ctx);
      const int64_t dense_ns = cm.Finish().dense_ns;
      double s = 0;
      for (const auto& l : cm.linears()) {
        // The LM head and the router of a quantized checkpoint stay bf16.
        const bool wide = l.sixteen_bit && wb < 2;
        s += l.count * GemmSeconds(hw, static_cast<double>(t), l.n, l.k, wide ? 2.0 : wb,
                                   wide ? hw.dense_tflops_bf16 * 1e12 : peak, hw.mbu);
      }
      const double td = static_cast<double>(t);
      s += moe->layers * (GroupedGemmSeconds(hw, td, moe->experts, moe->top_k, moe->local_experts,
                                             moe->gate_up_n, moe->hidden, wb, peak) +
                          GroupedGemmSeconds(hw, td, moe->experts, moe->top_k, moe->local_experts,
                                             moe->hidden, moe->down_k, wb, peak));
      CHECK(std::llround(s * 1e9) == dense_ns);
    }
  }
  const Planned dense = Plan("llama-3.1-8b", 1);
  CHECK_FALSE(MoeGemmDimsOf(dense.model, dense.plan).has_value());
}

// The roofline written out independently of core/cost_model.cc: tiles of tm × 128 with tm the
// power of two ≥ M in [16, 128], fractional waves over 132 SMs; bf16 activations; H100-SXM
// datasheet.
double Truth(const GemmShape& g, double mbu, double mfu, double moe_mbu, double fixed_s) {
  const double m = static_cast<double>(g.m), n = static_cast<double>(g.n),
               k = static_cast<double>(g.k), groups = static_cast<double>(g.groups);
  const bool fp8 = g.dtype == DType::kFp8E4M3;
  const double weight_bytes = fp8 ? 1 : 2;
  const double peak = (fp8 ? 1979.0 : 989.0) * 1e12;
  const double eff = g.grouped ? moe_mbu : mbu;
  const double memory = (groups * n * k * weight_bytes + groups * m * (n + k) * 2) / (3350e9 * eff);
  double tm = 16;
  while (tm < m && tm < 128) tm *= 2;
  const double tiles = groups * std::ceil(m / tm) * std::ceil(n / 128);
  const double waves = tiles / 132;
  const double compute = waves * 2 * tm * 128 * k / (peak * mfu / 132);
  return fixed_s + std::max(memory, compute);
}

TEST_CASE("The GEMM fit recovers mbu, mfu, moe_mbu and the per-GEMM fixed cost within 1 %") {
  std::vector<GemmSample> samples;
  for (const auto& [preset, tp] :
       {std::pair<std::string, int64_t>{"llama-4-scout-17b-16e-fp8", 1}, {"llama-3.1-8b", 2}}) {
    const Planned p = Plan(preset, tp);
    auto shapes = ModelGemmShapes(p.model, p.plan, DefaultGemmTokens());
    REQUIRE(shapes.ok());
    for (const auto& g : shapes.value()) samples.push_back({g, Truth(g, 0.82, 0.63, 0.55, 3.5e-6)});
  }
  HardwareSpec start;  // 0.85, 0.70, 0.60
  auto fit = FitGemmSamples(start, samples);
  INFO(fit.status().message());
  REQUIRE(fit.ok());
  CHECK(fit->has_moe);
  CHECK(fit->has_mbu);
  CHECK(fit->has_mfu);
  CHECK(fit->mbu == Catch::Approx(0.82).epsilon(0.01));
  CHECK(fit->mfu == Catch::Approx(0.63).epsilon(0.01));
  CHECK(fit->moe_mbu == Catch::Approx(0.55).epsilon(0.01));
  CHECK(fit->fixed_us == Catch::Approx(3.5).epsilon(0.01));
  // router, qkv, o, gate_up, down and the two expert GEMMs: 7 kernels per layer.
  CHECK(fit->gemms_per_layer == 7);
  CHECK(fit->layer_overhead_us == Catch::Approx(7 * 3.5).epsilon(0.01));
  REQUIRE(fit->errors.size() == samples.size());
  for (const auto& e : fit->errors) {
    INFO(e.label);
    CHECK(std::abs(e.in_sample) < 0.01);
    CHECK(std::abs(e.leave_one_out) < 0.01);
  }

  // A dense model alone: moe_mbu is not fitted and stays where it started.
  std::vector<GemmSample> dense;
  for (const auto& s : samples) {
    if (!s.shape.grouped && s.shape.name != "router") dense.push_back(s);
  }
  auto d = FitGemmSamples(start, dense);
  REQUIRE(d.ok());
  CHECK_FALSE(d->has_moe);
  CHECK(d->moe_mbu == Catch::Approx(0.60));
  CHECK(d->mbu == Catch::Approx(0.82).epsilon(0.01));
  CHECK(d->has_mbu);
  CHECK(d->has_mfu);
  CHECK(FitGemmSamples(start, {}).status().code() == "too_few_samples");

  // Decode token counts only: every GEMM is memory bound, so mfu is not determined and keeps
  // its starting value instead of sitting at its bound.
  std::vector<GemmSample> decode;
  for (const auto& s : dense) {
    if (s.shape.tokens <= 8) decode.push_back(s);
  }
  auto m = FitGemmSamples(start, decode);
  REQUIRE(m.ok());
  CHECK(m->has_mbu);
  CHECK_FALSE(m->has_mfu);
  CHECK(m->mfu == Catch::Approx(0.70));
  CHECK(m->mbu == Catch::Approx(0.82).epsilon(0.01));
}

TEST_CASE("GEMM samples: JSON round trip; bad rows name the file and the key") {
  const Planned p = Plan("llama-4-scout-17b-16e-fp8", 2);
  auto shapes = ModelGemmShapes(p.model, p.plan, {1, 300});
  REQUIRE(shapes.ok());
  std::vector<GemmSample> samples;
  double t = 1.25e-6;
  for (const auto& g : shapes.value()) samples.push_back({g, t *= 1.37});
  const nlohmann::json rows = GemmSamplesToJson(samples);
  REQUIRE(rows.size() == samples.size());
  CHECK(rows[0]["weight_bytes"].get<int64_t>() == samples[0].shape.WeightBytes());
  const nlohmann::json report = {{"device", {{"name", "x"}}}, {"gemm", {{"rows", rows}}}};
  auto back = ParseGemmSamples(report.dump(2), "v.json");
  INFO(back.status().message());
  REQUIRE(back.ok());
  REQUIRE(back->size() == samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    CHECK(back.value()[i].shape == samples[i].shape);
    CHECK(back.value()[i].seconds == samples[i].seconds);
  }
  // No gemm section (an older report): no samples, no error.
  auto none = ParseGemmSamples(R"({"timing": {"rows": []}})", "v.json");
  REQUIRE(none.ok());
  CHECK(none->empty());

  auto expect_error = [](const nlohmann::json& j, const std::string& where) {
    auto r = ParseGemmSamples(j.dump(), "v.json");
    REQUIRE_FALSE(r.ok());
    INFO(r.status().message());
    CHECK(r.status().message().find(where) != std::string::npos);
  };
  nlohmann::json bad = report;
  bad["gemm"]["rows"][1].erase("n");
  expect_error(bad, "v.json: gemm.rows[1].n");
  bad = report;
  bad["gemm"]["rows"][0]["median_s"] = 0;
  expect_error(bad, "v.json: gemm.rows[0].median_s");
  bad = report;
  bad["gemm"]["rows"][2]["dtype"] = "int4";
  expect_error(bad, "v.json: gemm.rows[2].dtype");
  bad = report;
  bad["gemm"] = 3;
  expect_error(bad, "v.json: gemm.rows");
  CHECK(ParseGemmSamples("{", "v.json").status().code() == "bad_json");
}

}  // namespace
}  // namespace kvsim
