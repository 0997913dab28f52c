#include "core/cost_model.h"

#include <algorithm>
#include <cmath>

namespace kvsim {
namespace {

double PartSeconds(double flops, double flops_per_s, double bytes, double bytes_per_s) {
  const double c = flops_per_s > 0 ? flops / flops_per_s : 0.0;
  const double m = bytes_per_s > 0 ? bytes / bytes_per_s : 0.0;
  return std::max(c, m);
}

int64_t Nanos(double seconds) { return static_cast<int64_t>(std::llround(seconds * 1e9)); }

}  // namespace

CostModel::CostModel(const ModelSpec& model, const KvCachePlan& plan, const HardwareSpec& hw)
    : hw_(hw) {
  tp_ = std::max<int64_t>(1, plan.config.tp);
  const int64_t q_heads_total = model.compute.num_attention_heads;
  for (const PlannedLayer& pl : plan.layers) {
    const KvCacheSpec& s = pl.spec;
    if (!pl.is_draft) ++num_layers_;
    if (s.kind == LayerKind::kMamba) {
      ++num_mamba_layers_;
      mamba_state_bytes_ += static_cast<double>(s.mamba_state_bytes());
      continue;
    }
    ++num_attention_layers_;
    AttnClass c;
    c.window = s.kind == LayerKind::kSlidingWindow ? s.sliding_window
               : s.kind == LayerKind::kChunkedLocal ? s.attention_chunk_size
                                                    : 0;
    c.layers = 1;
    c.kv_bytes_per_token = static_cast<double>(s.bytes_per_token());
    // Query heads per rank; without a preset number, assume one query head per KV head.
    const double q_heads =
        q_heads_total > 0 ? std::max<double>(1.0, static_cast<double>(q_heads_total) / tp_)
                          : static_cast<double>(s.num_kv_heads);
    c.flops_per_unit = 4.0 * q_heads * static_cast<double>(s.head_size);
    auto same = std::find_if(classes_.begin(), classes_.end(), [&](const AttnClass& o) {
      return o.window == c.window && o.kv_bytes_per_token == c.kv_bytes_per_token &&
             o.flops_per_unit == c.flops_per_unit;
    });
    if (same != classes_.end()) {
      same->layers += 1;
    } else {
      classes_.push_back(c);
    }
  }
  active_params_ = static_cast<double>(model.compute.num_active_params);
  total_params_ = static_cast<double>(
      std::max(model.compute.num_params, model.compute.num_active_params));
  weight_bytes_per_param_ = static_cast<double>(ElementBytes(model.dtype));
  if (weight_bytes_per_param_ <= 0) weight_bytes_per_param_ = 2;
  hidden_bytes_ = static_cast<double>(model.compute.hidden_size) * weight_bytes_per_param_;
  peak_flops_ = (IsFp8(model.dtype) ? hw_.dense_tflops_fp8 : hw_.dense_tflops_bf16) * 1e12;
}

StepCost CostModel::Finish() const {
  StepCost out;
  if (seqs_ == 0) return out;
  const double tokens = static_cast<double>(tokens_);
  const double bw = hw_.hbm_bandwidth_gbps * 1e9 * hw_.mbu;
  const double gemm_flops = peak_flops_ * hw_.mfu;
  const double attn_flops = peak_flops_ * hw_.attention_mfu;
  const double attn_bw = hw_.hbm_bandwidth_gbps * 1e9 * hw_.attention_mbu;

  // Dense part: GEMMs over the (active) weights of this rank.
  double dense_s = 0;
  if (active_params_ > 0) {
    const double flops = 2.0 * active_params_ * tokens / tp_;
    double touched = total_params_;
    if (total_params_ > active_params_) {
      const double f = active_params_ / total_params_;
      touched = total_params_ * (1.0 - std::pow(1.0 - f, tokens));
      touched = std::max(touched, active_params_);
    }
    const double bytes = touched * weight_bytes_per_param_ / tp_;
    dense_s = PartSeconds(flops, gemm_flops, bytes, bw);
  }

  // Attention: FLOPs from q × context, bytes from reading the context's KV (and writing q).
  double attn_s = 0;
  for (const AttnClass& c : classes_) {
    const double flops = c.layers * c.flops_per_unit * c.flop_units;
    const double bytes = c.layers * c.kv_bytes_per_token * c.read_tokens;
    attn_s += PartSeconds(flops, attn_flops, bytes, attn_bw);
  }
  attn_s += hw_.attention_call_us * 1e-6 * static_cast<double>(num_attention_layers_);

  // Recurrent layers: each sequence's state is read and written once per step.
  double rec_s = 0;
  if (num_mamba_layers_ > 0) {
    const double bytes = 2.0 * mamba_state_bytes_ * static_cast<double>(mamba_seqs_);
    const double flops = hw_.mamba_flops_per_token_state_byte * mamba_state_bytes_ * tokens;
    rec_s = PartSeconds(flops, attn_flops, bytes, bw);
  }

  double fixed_us = hw_.step_overhead_us + hw_.layer_overhead_us * num_layers_ +
                    hw_.seq_overhead_us * static_cast<double>(seqs_);
  double fixed_s = fixed_us * 1e-6;
  if (tp_ > 1 && hidden_bytes_ > 0) {
    // Two ring all-reduces per layer (after attention/mixer and after the MLP).
    const double ring = 2.0 * (tp_ - 1) / tp_;
    const double per = hw_.allreduce_latency_us * 1e-6 +
                       ring * tokens * hidden_bytes_ / (hw_.interconnect_gbps * 1e9);
    fixed_s += 2.0 * num_layers_ * per;
  }
  out.dense_ns = Nanos(dense_s);
  out.attention_ns = Nanos(attn_s);
  out.recurrent_ns = Nanos(rec_s);
  out.fixed_ns = Nanos(fixed_s);
  out.total_ns = std::max<int64_t>(1, out.dense_ns + out.attention_ns + out.recurrent_ns +
                                          out.fixed_ns);
  return out;
}

int64_t CostModel::BatchNanos(const std::vector<std::pair<int64_t, int64_t>>& batch) {
  Begin();
  for (const auto& [q, ctx] : batch) Add(q, ctx);
  return StepNanos();
}

}  // namespace kvsim
