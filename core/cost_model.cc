#include "core/cost_model.h"

#include <algorithm>
#include <cmath>

namespace kvsim {
namespace {

constexpr double kActivationBytes = 2.0;  // bf16/fp16 activations (fp8 models too)
constexpr double kTileN = 128.0;

double PartSeconds(double flops, double flops_per_s, double bytes, double bytes_per_s) {
  const double c = flops_per_s > 0 ? flops / flops_per_s : 0.0;
  const double m = bytes_per_s > 0 ? bytes / bytes_per_s : 0.0;
  return std::max(c, m);
}

int64_t Nanos(double seconds) { return static_cast<int64_t>(std::llround(seconds * 1e9)); }

// The M edge of the tile a GEMM library picks for M rows: the power of two covering M,
// between 16 and 128.
double TileM(double m) {
  double t = 16;
  while (t < m && t < 128) t *= 2;
  return t;
}

// The waves `tiles` output tiles take over the SMs. Fractional: Hopper-era GEMM libraries
// (cuBLAS/CUTLASS stream-K and split-K heuristics) spread a partial last wave over every SM,
// so it costs its share rather than a whole wave. (Whole waves overstated the mid-size GEMMs
// of a prefill chunk: Vidur's H100 operator profiles fit at a worst error of 12.3 % with whole
// waves and 7.2 % with fractional ones; `kvsim calibrate --ops`.)
double Waves(const HardwareSpec& hw, double tiles) {
  return tiles / static_cast<double>(std::max<int64_t>(1, hw.num_sms));
}

// Seconds of one full tile of tm × 128 × K on one SM.
double TileSeconds(const HardwareSpec& hw, double tm, double k, double peak_flops) {
  const double per_sm = peak_flops * hw.mfu / static_cast<double>(std::max<int64_t>(1, hw.num_sms));
  return per_sm > 0 ? 2.0 * tm * kTileN * k / per_sm : 0.0;
}

}  // namespace

double AllReduceSeconds(const HardwareSpec& hw, double bytes, int64_t tp) {
  if (tp <= 1 || bytes <= 0) return 0;
  const double link = hw.interconnect_gbps * 1e9;
  const double peers = static_cast<double>(tp - 1);
  const double ring = 2.0 * peers / static_cast<double>(tp);
  if (hw.tp_link == "nvlink" && bytes <= static_cast<double>(hw.custom_allreduce_max_bytes)) {
    const bool one_shot = tp == 2 || (tp <= 4 && bytes < 512.0 * 1024) ||
                          (tp <= 8 && bytes < 256.0 * 1024);
    if (one_shot) return hw.allreduce_latency_us * 1e-6 + peers * bytes / link;
    return 2.0 * hw.allreduce_latency_us * 1e-6 + ring * bytes / link;
  }
  return hw.nccl_latency_us * 1e-6 + ring * bytes / link;
}

double GemmSeconds(const HardwareSpec& hw, double m, double n, double k, double weight_bytes,
                   double peak_flops, double bw_fraction) {
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  const double bytes = n * k * weight_bytes + m * (n + k) * kActivationBytes;
  const double memory = bytes / (hw.hbm_bandwidth_gbps * 1e9 * bw_fraction);
  const double tm = TileM(m);
  const double tiles = std::ceil(m / tm) * std::ceil(n / kTileN);
  const double waves = Waves(hw, tiles);
  const double compute = waves * TileSeconds(hw, tm, k, peak_flops);
  return std::max(memory, compute);
}

double GroupedGemmSeconds(const HardwareSpec& hw, double tokens, double experts, double top_k,
                          double local_experts, double n, double k, double weight_bytes,
                          double peak_flops) {
  if (tokens <= 0 || experts <= 0 || n <= 0 || k <= 0) return 0;
  const double p = std::min(1.0, top_k / experts);  // chance a token picks a given expert
  const double touched = local_experts * (1.0 - std::pow(1.0 - p, tokens));
  if (touched <= 0) return 0;
  const double rows = tokens * top_k * local_experts / experts;  // token-expert pairs here
  const double m = rows / touched;                                // per touched expert
  const double bytes = touched * n * k * weight_bytes + rows * (n + k) * kActivationBytes;
  const double memory = bytes / (hw.hbm_bandwidth_gbps * 1e9 * hw.moe_mbu);
  const double tm = TileM(m);
  const double tiles = touched * std::ceil(m / tm) * std::ceil(n / kTileN);
  const double waves = Waves(hw, tiles);
  const double compute = waves * TileSeconds(hw, tm, k, peak_flops);
  return std::max(memory, compute);
}

CostModel::CostModel(const ModelSpec& model, const KvCachePlan& plan, const HardwareSpec& hw)
    : hw_(hw) {
  tp_ = std::max<int64_t>(1, plan.config.tp);
  dp_ = std::max<int64_t>(1, plan.config.dp);
  ep_ = std::max<int64_t>(1, plan.config.ep);
  const ModelCompute& mc = model.compute;
  sampler_us_ = mc.sampling_sorts ? hw.sampler_sort_us : 0.0;
  const int64_t q_heads_total = mc.num_attention_heads;
  hidden_ = static_cast<double>(mc.hidden_size);
  double attn_proj_params = 0;  // whole-model Q/K/V/O weights of the target's attention layers
  double qkv_n_sum = 0, o_k_sum = 0;
  int64_t proj_layers = 0;
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
    c.block = std::max<int64_t>(1, s.block_size);
    c.layers = 1;
    c.kv_bytes_per_token = static_cast<double>(s.bytes_per_token());
    // Query heads per rank; without a preset number, assume one query head per KV head.
    const double q_heads =
        q_heads_total > 0 ? std::max<double>(1.0, static_cast<double>(q_heads_total) / tp_)
                          : static_cast<double>(s.num_kv_heads);
    c.flops_per_unit = 4.0 * q_heads * static_cast<double>(s.head_size);
    c.group = std::max(1.0, q_heads / static_cast<double>(std::max<int64_t>(1, s.num_kv_heads)));
    auto same = std::find_if(classes_.begin(), classes_.end(), [&](const AttnClass& o) {
      return o.window == c.window && o.kv_bytes_per_token == c.kv_bytes_per_token &&
             o.flops_per_unit == c.flops_per_unit && o.block == c.block && o.group == c.group;
    });
    if (same != classes_.end()) {
      same->layers += 1;
    } else {
      classes_.push_back(c);
    }
    if (!pl.is_draft && s.kind != LayerKind::kMla && hidden_ > 0 && s.head_size > 0) {
      const double d = static_cast<double>(s.head_size);
      const double kv = static_cast<double>(s.num_kv_heads);  // per rank
      qkv_n_sum += (q_heads + 2.0 * kv) * d;
      o_k_sum += q_heads * d;
      attn_proj_params += hidden_ * (q_heads + 2.0 * kv) * d * tp_ + q_heads * d * hidden_ * tp_;
      ++proj_layers;
    }
  }
  active_params_ = static_cast<double>(mc.num_active_params);
  const double total_params =
      static_cast<double>(std::max(mc.num_params, mc.num_active_params));
  weight_bytes_per_param_ = static_cast<double>(ElementBytes(model.dtype));
  if (weight_bytes_per_param_ <= 0) weight_bytes_per_param_ = 2;
  hidden_bytes_ = hidden_ * kActivationBytes;
  peak_flops_ = (IsFp8(model.dtype) ? hw_.dense_tflops_fp8 : hw_.dense_tflops_bf16) * 1e12;
  if (active_params_ <= 0 || num_layers_ == 0) return;

  const double layers = static_cast<double>(num_layers_);
  if (hidden_ <= 0) {
    // Only a parameter count: one square GEMM per layer holding the layer's share.
    const double side = std::sqrt(active_params_ / layers / tp_);
    linears_.push_back({"layer", layers, side, side, false});
    return;
  }
  // Routed experts: explicit E and k, else E ≈ total/active routed top-1 (the old touched-
  // fraction rule, now with per-expert work).
  const double vocab = static_cast<double>(mc.vocab_size);
  double routed_active = 0;
  if (total_params > active_params_) {
    experts_ = static_cast<double>(mc.num_experts);
    top_k_ = static_cast<double>(mc.num_experts_per_token);
    if (experts_ <= 0 || top_k_ <= 0 || top_k_ >= experts_) {
      top_k_ = 1;
      experts_ = std::max(2.0, std::round(total_params / active_params_));
    }
    const double routed_total = (total_params - active_params_) * experts_ / (experts_ - top_k_);
    routed_active = routed_total * top_k_ / experts_;
    moe_layers_ = layers;
    const double per_expert = routed_total / (experts_ * layers);  // params of one expert
    // gate/up (2/3 of an expert's weights) and down (1/3), each over the hidden size.
    const double width = per_expert / (3.0 * hidden_);
    const double shard = ep_ > 1 ? 1.0 : static_cast<double>(tp_);
    expert_gate_up_n_ = 2.0 * width / shard;
    expert_down_k_ = width / shard;
    linears_.push_back({"router", layers, experts_, hidden_, false, true});
  }
  // Dense MLP (with shared experts) from what the parameters leave, unless given.
  const double embed_and_head = 2.0 * vocab * hidden_;
  double mlp_width = static_cast<double>(mc.intermediate_size);
  if (mlp_width <= 0) {
    const double rest = active_params_ - routed_active - embed_and_head - attn_proj_params;
    mlp_width = std::max(0.0, rest / layers / (3.0 * hidden_));
  }
  if (proj_layers > 0) {
    linears_.push_back({"qkv", static_cast<double>(proj_layers),
                        qkv_n_sum / static_cast<double>(proj_layers), hidden_, false,
                        mc.attention_16bit});
    linears_.push_back({"o", static_cast<double>(proj_layers), hidden_,
                        o_k_sum / static_cast<double>(proj_layers), false,
                        mc.attention_16bit});
  }
  if (mlp_width > 0) {
    linears_.push_back({"gate_up", layers, 2.0 * mlp_width / tp_, hidden_, false});
    linears_.push_back({"down", layers, hidden_, mlp_width / tp_, false});
  }
  if (vocab > 0) linears_.push_back({"lm_head", 1, vocab / tp_, hidden_, true, true});
}

StepCost CostModel::Finish() const {
  StepCost out;
  if (seqs_ == 0) return out;
  const double dp = static_cast<double>(dp_);
  const double tokens = static_cast<double>(tokens_) / dp;  // per DP rank
  // The routed experts' tokens: every DP rank's (expert parallelism spans them).
  const double tokens_all = static_cast<double>(tokens_ + peer_tokens_);
  const double seqs = static_cast<double>(seqs_) / dp;
  const double attn_flops = peak_flops_ * hw_.attention_mfu;
  const double attn_bw = hw_.hbm_bandwidth_gbps * 1e9 * hw_.attention_mbu;

  // Dense part: one GEMM per linear layer, the routed experts as a grouped GEMM.
  double dense_s = 0;
  const double bf16_flops = hw_.dense_tflops_bf16 * 1e12;
  for (const Linear& l : linears_) {
    const double m = l.per_sequence ? seqs : tokens;
    const bool wide = l.sixteen_bit && weight_bytes_per_param_ < kActivationBytes;
    dense_s += l.count * GemmSeconds(hw_, std::max(1.0, std::ceil(m)), l.n, l.k,
                                     wide ? kActivationBytes : weight_bytes_per_param_,
                                     wide ? bf16_flops : peak_flops_, hw_.mbu);
  }
  double comm_s = 0;
  if (experts_ > 0) {
    const double local = experts_ / static_cast<double>(ep_);
    const double gate_up = GroupedGemmSeconds(hw_, tokens_all, experts_, top_k_, local,
                                              expert_gate_up_n_, hidden_,
                                              weight_bytes_per_param_, peak_flops_);
    const double down = GroupedGemmSeconds(hw_, tokens_all, experts_, top_k_, local, hidden_,
                                           expert_down_k_, weight_bytes_per_param_, peak_flops_);
    dense_s += moe_layers_ * (gate_up + down);
    if (ep_ > 1) {
      // Dispatch and combine: this rank's tokens' top-k copies, the remote share of them.
      const double bytes = tokens * top_k_ * hidden_bytes_ * (ep_ - 1.0) / ep_;
      const double per = hw_.allreduce_latency_us * 1e-6 + bytes / (hw_.interconnect_gbps * 1e9);
      comm_s += 2.0 * moe_layers_ * per;
    }
  }

  // Attention: prefill by FLOPs (length-dependent efficiency) or KV read, decode by KV read.
  double attn_s = 0;
  for (const AttnClass& c : classes_) {
    const double pf_flops = c.layers * c.flops_per_unit * c.prefill_flop_units / dp;
    const double pf_bytes = c.layers * c.kv_bytes_per_token * c.prefill_read_tokens / dp;
    attn_s += PartSeconds(pf_flops, attn_flops, pf_bytes, attn_bw);
    const double dec_bytes = c.layers * c.kv_bytes_per_token * c.decode_read_tokens / dp;
    attn_s += dec_bytes / attn_bw * (1.0 + hw_.attention_kv_head_penalty / c.group);
  }
  attn_s += hw_.attention_call_us * 1e-6 * static_cast<double>(num_attention_layers_);

  // Recurrent layers: each sequence's state is read and written once per step.
  double rec_s = 0;
  if (num_mamba_layers_ > 0) {
    const double bytes = 2.0 * mamba_state_bytes_ * static_cast<double>(mamba_seqs_) / dp;
    const double flops = hw_.mamba_flops_per_token_state_byte * mamba_state_bytes_ * tokens;
    rec_s = PartSeconds(flops, attn_flops, bytes, hw_.hbm_bandwidth_gbps * 1e9 * hw_.mbu);
  }

  double fixed_s = (hw_.step_gpu_us + sampler_us_) * 1e-6 +
                   hw_.layer_overhead_us * 1e-6 * static_cast<double>(num_layers_) + comm_s;
  if (tp_ > 1 && hidden_bytes_ > 0) {
    // Two all-reduces per layer (after attention/mixer and after the MLP) of the step's
    // hidden states.
    fixed_s += 2.0 * static_cast<double>(num_layers_) *
               AllReduceSeconds(hw_, std::ceil(tokens) * hidden_bytes_, tp_);
  }
  const double cpu_s = (hw_.step_overhead_us + hw_.seq_overhead_us * seqs) * 1e-6 +
                       hw_.step_token_ns * 1e-9 * tokens;
  out.dense_ns = Nanos(dense_s);
  out.attention_ns = Nanos(attn_s);
  out.recurrent_ns = Nanos(rec_s);
  out.fixed_ns = Nanos(fixed_s);
  out.cpu_ns = Nanos(cpu_s);
  out.gpu_ns = out.dense_ns + out.attention_ns + out.recurrent_ns + out.fixed_ns;
  out.total_ns = std::max<int64_t>(1, out.cpu_ns + out.gpu_ns);
  return out;
}

int64_t CostModel::BatchNanos(const std::vector<std::pair<int64_t, int64_t>>& batch) {
  Begin();
  for (const auto& [q, ctx] : batch) Add(q, ctx);
  return StepNanos();
}

int64_t CostModel::IntakeNanos(int64_t prompt_tokens) const {
  return Nanos(hw_.intake_us * 1e-6 +
               hw_.intake_token_ns * 1e-9 * static_cast<double>(std::max<int64_t>(0, prompt_tokens)));
}

int64_t CostModel::OutputNanos(int64_t tokens_emitted) const {
  return Nanos(hw_.output_token_us * 1e-6 * static_cast<double>(std::max<int64_t>(0, tokens_emitted)));
}

}  // namespace kvsim
