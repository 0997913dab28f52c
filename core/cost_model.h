// The step-time model: how long one engine step takes on one GPU (one TP rank), from the
// batch the scheduler formed. It is a roofline over three parts of the forward pass, each
// bounded by either compute or memory traffic, plus fixed costs:
//
//   dense part   2 · active_params · tokens FLOPs, weight bytes read once per step (MoE:
//                the expected fraction of experts a batch of `tokens` touches, assuming
//                uniform routing: 1 − (1 − active/total)^tokens);
//   attention    per attention layer 4 · q_heads · D · Σ q·(ctx + (q+1)/2) FLOPs and
//                Σ (ctx + q) · (KV bytes per token) read (at attention_mbu), with ctx capped
//                by the sliding window, plus attention_call_us per layer; the draft model's
//                layers count the same way;
//   recurrent    per Mamba/GDN layer: the state read and written once per sequence, and
//                `mamba_flops_per_token_state_byte` FLOPs per token per state byte;
//   fixed        step_overhead_us + layers · layer_overhead_us + seqs · seq_overhead_us,
//                and with TP > 1 two all-reduces per layer (latency + bytes / link).
//
// time = Σ_parts max(FLOPs / (peak · mfu), bytes / (bandwidth · mbu)) + fixed.
//
// Every coefficient lives in HardwareSpec so that a GPU calibration (`kvsim gpu-validate
// --calibrate`) can replace the datasheet presets in scenarios/hardware/. The model is a pure
// function: the same batch always costs the same integer number of nanoseconds.
//
// Usage: the engine calls Begin(), then Add(q, ctx) for each scheduled request, then
// StepNanos(). Accumulation is O(1) per request so that a step over 1000 sequences stays cheap.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/page_planner.h"

namespace kvsim {

// One GPU's datasheet numbers and the model's efficiency coefficients. All rates per GPU.
struct HardwareSpec {
  std::string name = "H100-SXM";
  double dense_tflops_bf16 = 989.0;  // dense (no sparsity) BF16/FP16 tensor-core TFLOP/s
  double dense_tflops_fp8 = 1979.0;  // dense FP8 TFLOP/s (used when the model dtype is fp8)
  double hbm_bandwidth_gbps = 3350.0;  // HBM GB/s (1e9 bytes)
  int64_t hbm_capacity_bytes = 80LL << 30;
  double interconnect_gbps = 450.0;  // per-direction NVLink GB/s for TP all-reduces
  double mfu = 0.55;                 // achievable fraction of peak FLOP/s in GEMMs
  double mbu = 0.80;                 // achievable fraction of HBM bandwidth
  double attention_mfu = 0.40;       // achievable fraction of peak FLOP/s in attention
  double attention_mbu = 0.75;       // achievable fraction of HBM bandwidth reading KV
  double attention_call_us = 0.0;    // fixed cost per attention layer per step (a calibrated
                                     // decode-attention launch; 0 = inside layer_overhead_us)
  double step_overhead_us = 250.0;   // per engine step: scheduling, launch, sampling
  double layer_overhead_us = 4.0;    // per layer per step (kernel launches, norms)
  double seq_overhead_us = 2.0;      // per scheduled sequence per step (metadata, sampling)
  double allreduce_latency_us = 8.0; // per all-reduce with TP > 1
  double mamba_flops_per_token_state_byte = 2.0;  // recurrent FLOPs per token per state byte

  bool operator==(const HardwareSpec&) const = default;
};

// The parts of one step's estimate (ns), for reports and tests.
struct StepCost {
  int64_t dense_ns = 0;
  int64_t attention_ns = 0;
  int64_t recurrent_ns = 0;
  int64_t fixed_ns = 0;
  int64_t total_ns = 0;
};

class CostModel {
 public:
  // `plan` supplies the per-rank KV spec of every layer (target and draft); `model` the
  // parameter counts. A model without compute numbers costs only its KV traffic and fixed
  // costs (the dense part is then zero), which the report says.
  CostModel(const ModelSpec& model, const KvCachePlan& plan, const HardwareSpec& hw);

  // Starts a new step.
  void Begin() {
    tokens_ = 0;
    seqs_ = 0;
    mamba_seqs_ = 0;
    for (auto& c : classes_) c.flop_units = c.read_tokens = 0;
  }
  // One scheduled request: `q` new tokens over `ctx` already-computed tokens.
  void Add(int64_t q, int64_t ctx) {
    tokens_ += q;
    ++seqs_;
    if (num_mamba_layers_ > 0) ++mamba_seqs_;
    for (auto& c : classes_) {
      const int64_t eff = c.window > 0 && ctx > c.window ? c.window : ctx;
      c.flop_units += static_cast<double>(q) * (static_cast<double>(eff) + (q + 1) / 2.0);
      c.read_tokens += static_cast<double>(eff + q);
    }
  }
  // The step's duration in ns, with its parts.
  StepCost Finish() const;
  int64_t StepNanos() const { return Finish().total_ns; }

  // Convenience for tests: a whole batch of (q, ctx) pairs.
  int64_t BatchNanos(const std::vector<std::pair<int64_t, int64_t>>& batch);

  const HardwareSpec& hardware() const { return hw_; }
  bool has_compute_numbers() const { return active_params_ > 0; }
  int64_t num_layers() const { return num_layers_; }

 private:
  // Attention layers with the same window and per-token cost are accumulated together.
  struct AttnClass {
    int64_t window = 0;            // 0 = full attention; SWA W; chunked-local C (approx.)
    double layers = 0;             // how many layers
    double kv_bytes_per_token = 0; // per layer per rank (unpadded)
    double flops_per_unit = 0;     // 4 · q_heads_per_rank · D per layer
    double flop_units = 0;         // Σ q·(ctx + (q+1)/2) this step
    double read_tokens = 0;        // Σ (ctx + q) this step
  };

  HardwareSpec hw_;
  std::vector<AttnClass> classes_;
  int64_t tp_ = 1;
  int64_t num_layers_ = 0;
  int64_t num_mamba_layers_ = 0;
  int64_t num_attention_layers_ = 0;
  double mamba_state_bytes_ = 0;  // Σ over Mamba layers, per rank per sequence
  double active_params_ = 0;
  double total_params_ = 0;
  double weight_bytes_per_param_ = 2;
  double hidden_bytes_ = 0;  // hidden_size · activation bytes (all-reduce payload per token)
  double peak_flops_ = 0;    // FLOP/s for GEMMs at the model dtype
  int64_t tokens_ = 0;
  int64_t seqs_ = 0;
  int64_t mamba_seqs_ = 0;
};

}  // namespace kvsim
