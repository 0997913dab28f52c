// The GEMMs of a model's forward pass on one rank, as the step-time model prices them
// (core/cost_model.h), for `kvsim gpu-validate` to time and `kvsim calibrate` to fit the dense
// coefficients on: per linear layer (QKV, O, gate/up, down, LM head, and for MoE models the
// router) one M × N × K GEMM after TP sharding at each of a set of token counts M, and the
// routed experts as one grouped GEMM of E_active experts × M_e tokens each, E_active and M_e
// from the expected spread of top-k routing the cost model uses (ModelGemmShapes).
//
// The dense shapes are CostModel::linears() itself, so the two cannot disagree. The expert
// shapes are not exposed by the cost model; MoeGemmDims re-derives them from the same
// ModelSpec with the cost model's formulas, and a test holds the two together (it prices a
// batch with both and compares the dense time to the nanosecond). A dimension the cost model
// derives from parameter counts (a fractional MLP or expert width) is rounded to a multiple of
// 16, as a checkpoint's would be; the fit prices each sample at its rounded shape, so the
// rounding changes what is timed, never the agreement between timing and model.
//
// Also the fitting of the dense coefficients on timed GEMMs (FitGemmSamples, calibrate.h's
// bounded least squares) and the JSON of the samples (GemmSamplesToJson / ParseGemmSamples),
// which `kvsim gpu-validate --json` writes and `kvsim calibrate --gpu-validate` reads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/cost_model.h"
#include "core/dtype.h"
#include "core/model_spec.h"
#include "core/page_planner.h"
#include "core/status.h"
#include "sim/calibrate/calibrate.h"

namespace kvsim {

struct GemmShape {
  std::string name;      // qkv, o, gate_up, down, lm_head, router, experts.gate_up, experts.down
  int64_t tokens = 0;    // the step's tokens the shape stands for (the experts' T)
  int64_t m = 0;         // rows: tokens (per expert for a grouped GEMM)
  int64_t n = 0;         // outputs
  int64_t k = 0;         // inputs (the reduction)
  int64_t groups = 1;    // grouped: this many experts, each m × n × k with its own weights
  bool grouped = false;  // routed experts: weights read at moe_mbu (even when groups == 1)
  DType dtype = DType::kBFloat16;  // weights and inputs: kBFloat16 or kFp8E4M3

  int64_t WeightBytes() const { return groups * n * k * ElementBytes(dtype); }
  double Flops() const {
    return 2.0 * static_cast<double>(groups) * static_cast<double>(m) * static_cast<double>(n) *
           static_cast<double>(k);
  }
  // "qkv bf16 M=512 N=6144 K=4096" ("experts.down fp8 6x M=3 ..." when grouped).
  std::string Label() const;
  bool operator==(const GemmShape&) const = default;
};

// 1, 8, 32, 128, 512, 2048, 8192: decode batches to long prefill chunks.
std::vector<int64_t> DefaultGemmTokens();

// The routed experts of a MoE model as the cost model sees them (nullopt: a dense model, or
// one without compute numbers). Dimensions unrounded.
struct MoeGemmDims {
  double experts = 0;        // E
  double top_k = 0;          // k
  double local_experts = 0;  // E / ep on this rank
  double gate_up_n = 0;      // one expert's gate/up N on this rank (K = hidden)
  double down_k = 0;         // one expert's down K on this rank (N = hidden)
  double hidden = 0;
  double layers = 0;
};
std::optional<MoeGemmDims> MoeGemmDimsOf(const ModelSpec& model, const KvCachePlan& plan);

// Expected spread of `tokens` tokens routed top-k over E experts (uniform routing), on a rank
// holding `local` experts: touched = local · (1 − (1 − k/E)^T) experts, each with
// T·k·local/E / touched tokens (core/cost_model.cc, GroupedGemmSeconds). Rounded for timing:
// groups = max(1, round(touched)), m = max(1, round(tokens per touched expert)).
void ExpertSpread(const MoeGemmDims& moe, int64_t tokens, int64_t* groups, int64_t* m);

// Every GEMM of one step at each token count, in bf16, and again in fp8 when the model's
// weights are fp8. Shapes repeated across layers appear once. Errors: a model without the
// compute numbers the dense part needs (hidden_size, parameter counts).
Result<std::vector<GemmShape>> ModelGemmShapes(const ModelSpec& model, const KvCachePlan& plan,
                                               const std::vector<int64_t>& tokens);

// One timed GEMM.
struct GemmSample {
  GemmShape shape;
  double seconds = 0;  // measured median
};

// The modelled time of one GEMM on `hw`: fixed_s + the cost model's roofline (GemmSeconds at
// mbu, or GroupedGemmSeconds at moe_mbu for routed experts), at the fp8 peak for fp8 shapes.
double GemmModelSeconds(const HardwareSpec& hw, const GemmShape& s, double fixed_s);

// Fits mbu, mfu, moe_mbu (each when the samples determine it) and a fixed cost per GEMM
// kernel (launch ramp and tail; the cost model charges it through layer_overhead_us) on the
// samples, by relative bounded least squares with each GEMM in the regime that bounds it,
// iterated to a fixed point (the operator-profile fit's method). Leave-one-out leaves out one
// GEMM kind (name and dtype) at a time: its other token counts would give it away.
struct GemmFit {
  double mbu = 0, mfu = 0, moe_mbu = 0;
  // Which of the three the samples determine: moe_mbu needs routed-expert samples, mfu a GEMM
  // the fit finds compute bound, mbu one it finds memory bound. The others keep `start`'s.
  bool has_mbu = false, has_mfu = false, has_moe = false;
  double fixed_us = 0;  // per GEMM kernel
  // The cost model has no per-GEMM fixed cost: a layer's GEMM kernels pay it inside
  // layer_overhead_us. gemms_per_layer = the sample kinds other than lm_head (QKV, O, gate/up,
  // down; router and the two expert GEMMs for MoE); layer_overhead_us = fixed_us times that,
  // a floor, since a layer's norms, rotary embedding and residual adds are not GEMMs.
  int gemms_per_layer = 0;
  double layer_overhead_us = 0;
  std::vector<SampleError> errors;
};
Result<GemmFit> FitGemmSamples(const HardwareSpec& start, const std::vector<GemmSample>& samples);

// The samples as the `gemm.rows` list of gpu-validate's JSON, and back. ParseGemmSamples reads
// `gemm.rows` of a whole gpu-validate report (no `gemm` key: no samples, not an error) and,
// into *model_dtype when given, `gemm.model_dtype` (the dtype the cost model prices the
// model's GEMMs in; bf16 when absent); errors name the file and the key
// ("v.json: gemm.rows[3].n: ...").
nlohmann::json GemmSamplesToJson(const std::vector<GemmSample>& samples);
Result<std::vector<GemmSample>> ParseGemmSamples(const std::string& json_text,
                                                 const std::string& path,
                                                 DType* model_dtype = nullptr);

}  // namespace kvsim
