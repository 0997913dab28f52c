#include "sim/calibrate/gemm_shapes.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kvsim {
namespace {

// A dimension the cost model computed: kept when whole, else (a width derived from parameter
// counts) rounded to a multiple of 16, at least 16.
int64_t Dim(double v) {
  const double r = std::round(v);
  if (std::abs(v - r) < 1e-6 && r >= 1) return static_cast<int64_t>(r);
  return std::max<int64_t>(16, static_cast<int64_t>(std::llround(v / 16.0)) * 16);
}

double PeakFlops(const HardwareSpec& hw, DType d) {
  return (IsFp8(d) ? hw.dense_tflops_fp8 : hw.dense_tflops_bf16) * 1e12;
}

// One GEMM's time split into its memory part at 100 % of HBM and its compute part at
// mfu = 1: the cost model takes the max of the two, so pushing the other side's efficiency
// out of the way reads each part alone. A grouped GEMM is GroupedGemmSeconds with every expert
// touched (top_k = experts = local = groups, tokens = m): groups × m rows, as timed.
std::pair<double, double> Parts(const HardwareSpec& hw, const GemmShape& s) {
  const double m = static_cast<double>(s.m), n = static_cast<double>(s.n),
               k = static_cast<double>(s.k), g = static_cast<double>(s.groups);
  const double wb = ElementBytes(s.dtype), peak = PeakFlops(hw, s.dtype);
  HardwareSpec mem = hw, comp = hw;
  mem.mfu = 1e12;
  mem.moe_mbu = 1.0;
  comp.mfu = 1.0;
  comp.moe_mbu = 1e12;
  if (s.grouped) {
    return {GroupedGemmSeconds(mem, m, g, g, g, n, k, wb, peak),
            GroupedGemmSeconds(comp, m, g, g, g, n, k, wb, peak)};
  }
  return {GemmSeconds(mem, m, n, k, wb, peak, 1.0), GemmSeconds(comp, m, n, k, wb, peak, 1e12)};
}

// Features at x = (1/mbu, 1/mfu, 1/moe_mbu, fixed_s): the memory part in the dense or the
// expert column when memory bounds the GEMM at x, else the compute part; 1 for the fixed cost.
Eigen::RowVectorXd Features(const HardwareSpec& hw, const GemmShape& s, const Eigen::VectorXd& x) {
  Eigen::RowVectorXd f = Eigen::RowVectorXd::Zero(4);
  f(3) = 1;
  const auto [mem, comp] = Parts(hw, s);
  const int mem_col = s.grouped ? 2 : 0;
  if (mem * x(mem_col) >= comp * x(1)) {
    f(mem_col) = mem;
  } else {
    f(1) = comp;
  }
  return f;
}

std::string KindOf(const GemmShape& s) { return s.name + " " + std::string(DTypeName(s.dtype)); }

}  // namespace

std::string GemmShape::Label() const {
  const std::string g = groups > 1 || grouped ? fmt::format("{}x ", groups) : "";
  return fmt::format("{} {} {}M={} N={} K={}", name, DTypeName(dtype), g, m, n, k);
}

std::vector<int64_t> DefaultGemmTokens() { return {1, 8, 32, 128, 512, 2048, 8192}; }

std::optional<MoeGemmDims> MoeGemmDimsOf(const ModelSpec& model, const KvCachePlan& plan) {
  // The routed-expert part of CostModel's constructor, step for step (see the header).
  const ModelCompute& mc = model.compute;
  const double active = static_cast<double>(mc.num_active_params);
  const double total = static_cast<double>(std::max(mc.num_params, mc.num_active_params));
  double layers = 0;
  for (const PlannedLayer& pl : plan.layers) layers += pl.is_draft ? 0 : 1;
  if (active <= 0 || layers == 0 || mc.hidden_size <= 0 || !(total > active)) return std::nullopt;
  MoeGemmDims d;
  d.hidden = static_cast<double>(mc.hidden_size);
  d.layers = layers;
  d.experts = static_cast<double>(mc.num_experts);
  d.top_k = static_cast<double>(mc.num_experts_per_token);
  if (d.experts <= 0 || d.top_k <= 0 || d.top_k >= d.experts) {
    d.top_k = 1;
    d.experts = std::max(2.0, std::round(total / active));
  }
  const double routed_total = (total - active) * d.experts / (d.experts - d.top_k);
  const double per_expert = routed_total / (d.experts * layers);
  const double width = per_expert / (3.0 * d.hidden);
  const int64_t tp = std::max<int64_t>(1, plan.config.tp);
  const int64_t ep = std::max<int64_t>(1, plan.config.ep);
  const double shard = ep > 1 ? 1.0 : static_cast<double>(tp);
  d.gate_up_n = 2.0 * width / shard;
  d.down_k = width / shard;
  d.local_experts = d.experts / static_cast<double>(ep);
  return d;
}

void ExpertSpread(const MoeGemmDims& moe, int64_t tokens, int64_t* groups, int64_t* m) {
  const double t = static_cast<double>(std::max<int64_t>(1, tokens));
  const double p = std::min(1.0, moe.top_k / moe.experts);
  const double touched = moe.local_experts * (1.0 - std::pow(1.0 - p, t));
  const double rows = t * moe.top_k * moe.local_experts / moe.experts;
  *groups = std::max<int64_t>(1, std::llround(touched));
  *m = touched > 0 ? std::max<int64_t>(1, std::llround(rows / touched)) : 1;
}

Result<std::vector<GemmShape>> ModelGemmShapes(const ModelSpec& model, const KvCachePlan& plan,
                                               const std::vector<int64_t>& tokens) {
  // The cost model's coefficients play no part in the shapes.
  const CostModel cm(model, plan, HardwareSpec{});
  if (!cm.has_compute_numbers() || cm.linears().empty()) {
    return Status::Error("no_compute_numbers",
                         model.name +
                             ": the model has no compute numbers (compute.hidden_size, "
                             "num_params, num_active_params), so no GEMMs to time");
  }
  const std::optional<MoeGemmDims> moe = MoeGemmDimsOf(model, plan);
  std::vector<DType> dtypes = {DType::kBFloat16};
  if (IsFp8(model.dtype)) dtypes.push_back(DType::kFp8E4M3);
  std::vector<GemmShape> out;
  std::set<std::string> seen;
  auto add = [&](GemmShape s) {
    if (seen.insert(s.Label()).second) out.push_back(std::move(s));
  };
  for (DType dt : dtypes) {
    for (int64_t t : tokens) {
      if (t < 1) return Status::Error("bad_tokens", fmt::format("token count {} < 1", t));
      for (const CostModel::Linear& l : cm.linears()) {
        // What a quantized checkpoint keeps in 16 bits (the LM head, the router, and the
        // attention with attention_16bit) is measured in bf16 only (core/cost_model.h).
        if (l.sixteen_bit && dt != DType::kBFloat16) continue;
        GemmShape s;
        s.name = l.name;
        s.tokens = t;
        s.m = t;
        s.n = Dim(l.n);
        s.k = Dim(l.k);
        s.dtype = dt;
        add(s);
      }
      if (moe) {
        int64_t groups = 1, m = 1;
        ExpertSpread(*moe, t, &groups, &m);
        for (const char* name : {"experts.gate_up", "experts.down"}) {
          GemmShape s;
          s.name = name;
          s.tokens = t;
          s.m = m;
          s.groups = groups;
          s.grouped = true;
          s.dtype = dt;
          const bool gate_up = s.name == "experts.gate_up";
          s.n = gate_up ? Dim(moe->gate_up_n) : Dim(moe->hidden);
          s.k = gate_up ? Dim(moe->hidden) : Dim(moe->down_k);
          add(s);
        }
      }
    }
  }
  return out;
}

double GemmModelSeconds(const HardwareSpec& hw, const GemmShape& s, double fixed_s) {
  const double m = static_cast<double>(s.m), n = static_cast<double>(s.n),
               k = static_cast<double>(s.k), g = static_cast<double>(s.groups);
  const double wb = ElementBytes(s.dtype), peak = PeakFlops(hw, s.dtype);
  return fixed_s + (s.grouped ? GroupedGemmSeconds(hw, m, g, g, g, n, k, wb, peak)
                              : GemmSeconds(hw, m, n, k, wb, peak, hw.mbu));
}

Result<GemmFit> FitGemmSamples(const HardwareSpec& start, const std::vector<GemmSample>& samples) {
  std::vector<size_t> all;
  std::vector<double> measured;
  bool has_moe = false, has_dense = false;
  for (size_t i = 0; i < samples.size(); ++i) {
    if (!(samples[i].seconds > 0)) {
      return Status::Error("bad_sample", samples[i].shape.Label() + ": time must be > 0");
    }
    all.push_back(i);
    measured.push_back(samples[i].seconds);
    (samples[i].shape.grouped ? has_moe : has_dense) = true;
  }
  if (samples.size() < 4 || !has_dense) {
    return Status::Error("too_few_samples",
                         "a GEMM fit needs at least 4 samples, some of them dense GEMMs");
  }
  const double inf = std::numeric_limits<double>::infinity();
  // Efficiencies ≤ 1 (inverse ≥ 1), fixed cost ≥ 0. Without expert samples the moe column is
  // all zero and its coefficient stays where it started.
  Eigen::VectorXd lo(4), hi(4), x0(4);
  lo << 1.0, 1.0, 1.0, 0.0;
  hi << inf, inf, inf, inf;
  x0 << 1.0 / start.mbu, 1.0 / start.mfu, 1.0 / start.moe_mbu, 0.0;
  if (!has_moe) lo(2) = hi(2) = x0(2);
  const RegimeFeatures features = [&](size_t i, const Eigen::VectorXd& x) {
    return Features(start, samples[i].shape, x);
  };
  auto to_hw = [&](const Eigen::VectorXd& x) {
    HardwareSpec hw = start;
    hw.mbu = 1.0 / x(0);
    hw.mfu = 1.0 / x(1);
    hw.moe_mbu = 1.0 / x(2);
    return hw;
  };
  Eigen::VectorXd x = FitRegimes(all, measured, features, x0, lo, hi);
  // A coefficient no sample is bound by at the fit (mfu when every GEMM is memory bound, as with
  // decode token counts only) is not measured: it keeps its starting value and is not reported
  // as fitted, rather than sitting at its bound.
  bool pinned = false;
  for (int col = 0; col < 3; ++col) {
    bool used = false;
    for (size_t i = 0; i < samples.size() && !used; ++i) used = features(i, x)(col) != 0;
    if (!used && lo(col) != hi(col)) {
      lo(col) = hi(col) = x0(col);
      pinned = true;
    }
  }
  if (pinned) x = FitRegimes(all, measured, features, x0, lo, hi);
  GemmFit fit;
  const HardwareSpec fitted = to_hw(x);
  fit.mbu = fitted.mbu;
  fit.mfu = fitted.mfu;
  fit.moe_mbu = fitted.moe_mbu;
  fit.has_mbu = lo(0) != hi(0);
  fit.has_mfu = lo(1) != hi(1);
  fit.has_moe = lo(2) != hi(2);
  fit.fixed_us = x(3) * 1e6;
  std::set<std::string> per_layer;
  for (const auto& s : samples) {
    if (s.shape.name != "lm_head") per_layer.insert(s.shape.name);
  }
  fit.gemms_per_layer = static_cast<int>(per_layer.size());
  fit.layer_overhead_us = fit.fixed_us * fit.gemms_per_layer;
  std::set<std::string> kinds;
  for (const auto& s : samples) kinds.insert(KindOf(s.shape));
  std::map<std::string, Eigen::VectorXd> loo;
  for (const std::string& kind : kinds) {
    std::vector<size_t> rest;
    bool rest_dense = false, rest_moe = false;
    for (size_t r = 0; r < samples.size(); ++r) {
      if (KindOf(samples[r].shape) == kind) continue;
      rest.push_back(r);
      (samples[r].shape.grouped ? rest_moe : rest_dense) = true;
    }
    // Nothing left to fit a coefficient the left-out kind needs: keep the full fit's.
    if (rest.size() < 4 || !rest_dense || (has_moe && !rest_moe)) {
      loo[kind] = x;
    } else {
      loo[kind] = FitRegimes(rest, measured, features, x, lo, hi);
    }
  }
  for (size_t i = 0; i < samples.size(); ++i) {
    const GemmSample& s = samples[i];
    const Eigen::VectorXd& xl = loo[KindOf(s.shape)];
    fit.errors.push_back({s.shape.Label(), GemmModelSeconds(fitted, s.shape, x(3)) / s.seconds - 1,
                          GemmModelSeconds(to_hw(xl), s.shape, xl(3)) / s.seconds - 1});
  }
  return fit;
}

nlohmann::json GemmSamplesToJson(const std::vector<GemmSample>& samples) {
  nlohmann::json rows = nlohmann::json::array();
  for (const GemmSample& s : samples) {
    const GemmShape& g = s.shape;
    rows.push_back({{"name", g.name},
                    {"dtype", std::string(DTypeName(g.dtype))},
                    {"tokens", g.tokens},
                    {"m", g.m},
                    {"n", g.n},
                    {"k", g.k},
                    {"groups", g.groups},
                    {"grouped", g.grouped},
                    {"weight_bytes", g.WeightBytes()},
                    {"flops", g.Flops()},
                    {"median_s", s.seconds}});
  }
  return rows;
}

Result<std::vector<GemmSample>> ParseGemmSamples(const std::string& json_text,
                                                 const std::string& path, DType* model_dtype) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const std::exception& e) {
    return Status::Error("bad_json", path + ": not JSON: " + e.what());
  }
  std::vector<GemmSample> out;
  if (!j.is_object() || !j.contains("gemm")) return out;
  const auto& gemm = j["gemm"];
  if (!gemm.is_object() || !gemm.contains("rows") || !gemm["rows"].is_array()) {
    return Status::Error("bad_gpu_validate", path + ": gemm.rows: expected a list of GEMM rows");
  }
  if (model_dtype) {
    *model_dtype = DType::kBFloat16;
    if (gemm.contains("model_dtype")) {
      const auto dt = gemm["model_dtype"].is_string()
                          ? ParseDType(gemm["model_dtype"].get<std::string>())
                          : std::nullopt;
      if (!dt || (*dt != DType::kBFloat16 && !IsFp8(*dt))) {
        return Status::Error("bad_gpu_validate",
                             path + ": gemm.model_dtype: expected bf16 or an fp8 name");
      }
      *model_dtype = IsFp8(*dt) ? DType::kFp8E4M3 : DType::kBFloat16;
    }
  }
  const auto& rows = gemm["rows"];
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const std::string where = fmt::format("{}: gemm.rows[{}]", path, i);
    if (!r.is_object()) return Status::Error("bad_gpu_validate", where + ": expected an object");
    GemmSample s;
    auto count = [&](const char* key, int64_t* v, int64_t min) -> Status {
      if (!r.contains(key) || !r[key].is_number_integer() || r[key].get<int64_t>() < min) {
        return Status::Error("bad_gpu_validate",
                             fmt::format("{}.{}: expected an integer ≥ {}", where, key, min));
      }
      *v = r[key].get<int64_t>();
      return Status::Ok();
    };
    struct Count {
      const char* key;
      int64_t* value;
    };
    for (const Count& c :
         {Count{"tokens", &s.shape.tokens}, Count{"m", &s.shape.m}, Count{"n", &s.shape.n},
          Count{"k", &s.shape.k}, Count{"groups", &s.shape.groups}}) {
      if (Status st = count(c.key, c.value, 1); !st.ok()) return st;
    }
    if (!r.contains("name") || !r["name"].is_string() || r["name"].get<std::string>().empty()) {
      return Status::Error("bad_gpu_validate", where + ".name: expected a GEMM name");
    }
    s.shape.name = r["name"].get<std::string>();
    const auto dt = r.contains("dtype") && r["dtype"].is_string()
                        ? ParseDType(r["dtype"].get<std::string>())
                        : std::nullopt;
    if (!dt || (*dt != DType::kBFloat16 && !IsFp8(*dt))) {
      return Status::Error("bad_gpu_validate", where + ".dtype: expected bf16 or an fp8 name");
    }
    s.shape.dtype = IsFp8(*dt) ? DType::kFp8E4M3 : DType::kBFloat16;
    if (!r.contains("grouped") || !r["grouped"].is_boolean()) {
      return Status::Error("bad_gpu_validate", where + ".grouped: expected true or false");
    }
    s.shape.grouped = r["grouped"].get<bool>();
    if (!r.contains("median_s") || !r["median_s"].is_number() ||
        !(r["median_s"].get<double>() > 0) || !std::isfinite(r["median_s"].get<double>())) {
      return Status::Error("bad_gpu_validate", where + ".median_s: expected seconds > 0");
    }
    s.seconds = r["median_s"].get<double>();
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace kvsim
