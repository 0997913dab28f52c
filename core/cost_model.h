// The step-time model: how long one engine step takes on one GPU (one TP rank), from the
// batch the scheduler formed, and the time a request spends outside the engine step (intake
// before it reaches the scheduler, output processing before a token reaches the user).
// Every coefficient has a physical meaning and lives in HardwareSpec, so that a calibration
// (`kvsim calibrate`, `kvsim gpu-validate --calibrate`) can replace the presets in
// scenarios/hardware/. The model is a pure function: the same batch always costs the same
// integer number of nanoseconds.
//
// GPU part of a step (the forward pass), per rank:
//   dense GEMMs   one GEMM per linear layer, M × N × K after TP sharding: QKV (N = (q + 2 kv
//                 heads per rank) · D, K = hidden), O (N = hidden, K = q heads per rank · D),
//                 MLP gate/up (N = 2 I / tp, K = hidden) and down (N = hidden, K = I / tp),
//                 the LM head (M = scheduled sequences, N = vocab / tp). M = the step's tokens.
//                 Time = max(memory, compute):
//                   memory  = (N·K·weight bytes + M·(N + K)·2) / (HBM · mbu)
//                   compute = waves · 2·tm·tn·K / (peak · mfu / num_sms), with tiles of
//                             tm = clamp(pow2 ≥ M, 16, 128) × tn = 128 and
//                             waves = ⌈M/tm⌉·⌈N/tn⌉ / num_sms (tile quantization of M and N;
//                             a partial last wave costs its share, as stream-K balances it).
//                 I is model.compute.intermediate_size, else what the parameter count leaves
//                 after embeddings, LM head and attention projections. fp8 models use the
//                 fp8 peak and 1-byte weights, except the LM head and the router, which
//                 quantized checkpoints keep in 16 bits (bf16 peak, 2-byte weights).
//   MoE           router GEMM (N = experts), shared experts inside the dense MLP, and the routed
//                 experts as one grouped GEMM: of E experts, a batch of T tokens with top-k
//                 routing touches U = E · (1 − (1 − k/E)^T) of them (uniform routing), each with
//                 M = T·k / U tokens; weights of U experts are read at moe_mbu, compute as
//                 above summed over the U experts' tiles. With parallel.ep > 1 each rank holds
//                 E/ep whole experts (no TP inside experts) and two all-to-alls per MoE layer
//                 move the tokens (latency + bytes / link). With parallel.dp > 1 each rank is
//                 its own engine (sim/engine.h) and prices its own tokens; the experts also
//                 see the tokens of the ranks stepping with it (AddPeerTokens). (A plan with
//                 dp > 1 priced by one CostModel takes T/dp per rank, every T at the experts.)
//   attention     prefill (q > 16): causal FLOPs 4 · q heads · D · q · (ctx + (q+1)/2) at
//                 attention_mfu · q / (q + attention_prefill_half_tokens) (short chunks run
//                 the kernel at lower efficiency), bounded below by the KV read; decode
//                 (q ≤ 16): KV bytes read, rounded up to whole blocks, at attention_mbu, times
//                 (1 + attention_kv_head_penalty / G) with G query heads per KV head (MHA pays
//                 the full per-KV-head cost, GQA shares it); attention_call_us per layer.
//   recurrent     per Mamba/GDN layer the state read and written once per sequence, and
//                 mamba_flops_per_token_state_byte FLOPs per token per state byte.
//   fixed         step_gpu_us (the step's own kernels outside the layers: input preparation,
//                 logits gather, sampling), sampler_sort_us when the model samples through
//                 top-k/top-p (model.compute.sampling_sorts: vLLM sorts each row's logits),
//                 layers · layer_overhead_us, and with TP > 1 two
//                 all-reduces per layer of tokens · hidden bytes each, priced by
//                 AllReduceSeconds below (vLLM's custom all-reduce over NVLink, else NCCL).
// CPU part of a step (scheduling, input preparation, sampling bookkeeping):
//   step_overhead_us + seqs · seq_overhead_us + tokens · step_token_ns.
//
// Sync vs async scheduling (the rule the scheduler driver applies):
//   sync   step k takes cpu_k + gpu_k; the next step's CPU work starts when step k ends.
//   async  step k+1's CPU work overlaps step k's GPU work: step k+1 starts its GPU part at
//          max(end of step k's GPU part, start of step k's GPU part + cpu_{k+1}), so a step
//          costs max(cpu_{k+1}, gpu_k) in steady state; StepCost gives both parts.
//
// Request-level terms (applied by the engine where they happen):
//   intake   IntakeNanos(prompt tokens) = intake_us + intake_token_ns · prompt tokens:
//            HTTP handling and tokenization delay the request's entry into the scheduler
//            (TTFT and E2E are still measured from the client's send time).
//   output   OutputNanos(n) = output_token_us · n, n = tokens emitted by the step: the output
//            processor detokenizes and streams the step's tokens before they reach the user,
//            so each token (first and last included) reaches the user that much after the step.
//
// Usage: the engine calls Begin(), then Add(q, ctx) for each scheduled request, then
// Finish() / StepNanos(). Accumulation is O(1) per request.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/page_planner.h"

namespace kvsim {

// One GPU's datasheet numbers and the model's coefficients. All rates per GPU.
struct HardwareSpec {
  std::string name = "H100-SXM";
  double dense_tflops_bf16 = 989.0;  // dense (no sparsity) BF16/FP16 tensor-core TFLOP/s
  double dense_tflops_fp8 = 1979.0;  // dense FP8 TFLOP/s (used when the model dtype is fp8)
  double hbm_bandwidth_gbps = 3350.0;  // HBM GB/s (1e9 bytes)
  int64_t hbm_capacity_bytes = 81559LL << 20;  // total as the driver reports it (H100: 81559 MiB)
  // Memory outside torch's allocator that grows after vLLM starts (cuBLAS and attention
  // workspaces, NCCL buffers): part of the KV budget derived from gpu_memory_utilization.
  int64_t non_torch_memory_bytes = 1LL << 30;
  double interconnect_gbps = 450.0;  // per-direction NVLink GB/s for TP all-reduces
  int64_t num_sms = 132;             // streaming multiprocessors (GEMM waves)
  double mfu = 0.70;                 // fraction of peak FLOP/s in a full GEMM wave
  double mbu = 0.85;                 // fraction of HBM bandwidth streaming dense weights
  double moe_mbu = 0.60;             // fraction of HBM bandwidth in the grouped expert GEMM
  double attention_mfu = 0.50;       // fraction of peak FLOP/s in long prefill attention
  double attention_mbu = 0.75;       // fraction of HBM bandwidth reading KV in decode
  double attention_prefill_half_tokens = 256;  // chunk length at half attention_mfu
  double attention_kv_head_penalty = 0.5;      // decode cost per KV head, shared by its G heads
  double attention_call_us = 0.0;    // fixed cost per attention layer per step
  double step_overhead_us = 1500.0;  // CPU per engine step: scheduling, input prep, sampling
  double seq_overhead_us = 20.0;     // CPU per scheduled sequence per step
  double step_token_ns = 0.0;        // CPU per scheduled token per step
  double layer_overhead_us = 4.0;    // GPU per layer per step (launches, norms, residuals)
  double step_gpu_us = 0.0;          // GPU per step outside the layers: input prep, sampling
  // GPU per step on top of step_gpu_us when the model samples through top-k/top-p
  // (model.compute.sampling_sorts): the sort of the logits and its masking kernels.
  double sampler_sort_us = 0.0;
  // How TP ranks reach each other: "nvlink" (every GPU pair over NVLink/NVSwitch, so vLLM's
  // custom all-reduce runs for messages up to custom_allreduce_max_bytes) or "pcie" (NCCL
  // rings over PCIe, or through host memory without peer-to-peer).
  std::string tp_link = "nvlink";
  double allreduce_latency_us = 8.0; // one custom all-reduce pass (peer flags + kernel); also
                                     // per all-to-all with EP
  double nccl_latency_us = 20.0;     // one NCCL ring all-reduce, small message
  int64_t custom_allreduce_max_bytes = 8LL << 20;  // vLLM's custom all-reduce buffer
  double intake_us = 3000.0;         // per request: HTTP handling before the scheduler
  double intake_token_ns = 2000.0;   // per prompt token: tokenization
  double output_token_us = 20.0;     // per token a step emits: detokenize and stream
  double mamba_flops_per_token_state_byte = 2.0;  // recurrent FLOPs per token per state byte

  bool operator==(const HardwareSpec&) const = default;
};

// The parts of one step's estimate (ns). gpu_ns = dense + attention + recurrent + fixed;
// total_ns = cpu_ns + gpu_ns (the synchronous step; see the async rule above).
struct StepCost {
  int64_t dense_ns = 0;
  int64_t attention_ns = 0;
  int64_t recurrent_ns = 0;
  int64_t fixed_ns = 0;  // per-layer overhead and TP/EP communication
  int64_t cpu_ns = 0;
  int64_t gpu_ns = 0;
  int64_t total_ns = 0;
};

// One all-reduce of `bytes` (per rank) over `tp` ranks, as vLLM runs it (its custom
// all-reduce kernels, csrc/custom_all_reduce.cuh, else NCCL):
//   NVLink, bytes ≤ custom_allreduce_max_bytes: one-shot when tp = 2, or tp ≤ 4 and bytes <
//     512 KiB, or tp ≤ 8 and bytes < 256 KiB (each rank reads every peer's whole buffer):
//       allreduce_latency + (tp − 1) · bytes / link;
//     otherwise two-shot (reduce-scatter then all-gather through the peers' buffers):
//       2 · allreduce_latency + 2 (tp − 1)/tp · bytes / link.
//   otherwise NCCL's ring: nccl_latency + 2 (tp − 1)/tp · bytes / link.
// link = interconnect_gbps (per direction). 0 when tp ≤ 1.
double AllReduceSeconds(const HardwareSpec& hw, double bytes, int64_t tp);

// The time of one GEMM of M × N × K (M tokens, N outputs, K inputs) on `hw` at `peak_flops`
// with `weight_bytes` per weight element, weights read at `bw_fraction` of HBM bandwidth.
double GemmSeconds(const HardwareSpec& hw, double m, double n, double k, double weight_bytes,
                   double peak_flops, double bw_fraction);

// The routed experts of one MoE layer as a grouped GEMM: `tokens` tokens routed top-k over
// `experts` experts of which this rank holds `local_experts`, one expert's GEMM N × K.
double GroupedGemmSeconds(const HardwareSpec& hw, double tokens, double experts, double top_k,
                          double local_experts, double n, double k, double weight_bytes,
                          double peak_flops);

class CostModel {
 public:
  // `plan` supplies the per-rank KV spec of every layer (target and draft) and the
  // parallelism (tp, dp, ep); `model` the shapes and parameter counts. A model without
  // compute numbers costs only its KV traffic and fixed costs (the dense part is zero).
  CostModel(const ModelSpec& model, const KvCachePlan& plan, const HardwareSpec& hw);

  // Starts a new step.
  void Begin() {
    tokens_ = 0;
    peer_tokens_ = 0;
    seqs_ = 0;
    mamba_seqs_ = 0;
    for (auto& c : classes_) c.prefill_flop_units = c.prefill_read_tokens = c.decode_read_tokens = 0;
  }
  // One scheduled request: `q` new tokens over `ctx` already-computed tokens.
  void Add(int64_t q, int64_t ctx) {
    tokens_ += q;
    ++seqs_;
    if (num_mamba_layers_ > 0) ++mamba_seqs_;
    const double qd = static_cast<double>(q);
    for (auto& c : classes_) {
      const int64_t eff = c.window > 0 && ctx > c.window ? c.window : ctx;
      const int64_t read = eff + q;
      if (q > kDecodeMaxQuery) {
        c.prefill_flop_units += qd * (static_cast<double>(eff) + (qd + 1) / 2.0) *
                                (1.0 + hw_.attention_prefill_half_tokens / qd);
        c.prefill_read_tokens += static_cast<double>(read);
      } else {
        c.decode_read_tokens += static_cast<double>((read + c.block - 1) / c.block * c.block);
      }
    }
  }
  // Data parallelism as ranks in lock-step (an MoE model, one CostModel per rank with
  // parallel.dp taken as 1): the tokens the other ranks run in this same step. Expert
  // parallelism spans the DP ranks, so their tokens reach this rank's routed experts;
  // attention and the dense layers see this rank's tokens only.
  void AddPeerTokens(int64_t tokens) { peer_tokens_ += tokens; }
  // The step's duration in ns, with its parts.
  StepCost Finish() const;
  int64_t StepNanos() const { return Finish().total_ns; }

  // Convenience for tests: a whole batch of (q, ctx) pairs.
  int64_t BatchNanos(const std::vector<std::pair<int64_t, int64_t>>& batch);

  // Request-level terms (see the header comment).
  int64_t IntakeNanos(int64_t prompt_tokens) const;
  int64_t OutputNanos(int64_t tokens_emitted) const;

  const HardwareSpec& hardware() const { return hw_; }
  bool has_compute_numbers() const { return active_params_ > 0; }
  int64_t num_layers() const { return num_layers_; }

  // Requests with at most this many new tokens are priced as decode (KV read bound).
  static constexpr int64_t kDecodeMaxQuery = 16;

  // One linear layer kind of the dense part: `count` GEMMs of N × K per step.
  struct Linear {
    std::string name;  // qkv, o, gate_up, down, lm_head, router
    double count = 0;
    double n = 0;
    double k = 0;
    bool per_sequence = false;  // M = sequences (LM head) instead of tokens
    // Kept in 16 bits when the other weights are narrower: quantized checkpoints (compressed-
    // tensors, ModelOpt, AWQ/GPTQ) leave the LM head and the MoE router out of quantization,
    // and some their attention projections too (`compute.attention_16bit`).
    bool sixteen_bit = false;
  };
  const std::vector<Linear>& linears() const { return linears_; }

 private:
  // Attention layers with the same window and per-token cost are accumulated together.
  struct AttnClass {
    int64_t window = 0;             // 0 = full attention; SWA W; chunked-local C (approx.)
    int64_t block = 16;             // KV block size (decode reads whole blocks)
    double layers = 0;              // how many layers
    double kv_bytes_per_token = 0;  // per layer per rank (unpadded)
    double flops_per_unit = 0;      // 4 · q_heads_per_rank · D per layer
    double group = 1;               // query heads per KV head
    double prefill_flop_units = 0;  // Σ q·(ctx + (q+1)/2)·(1 + half/q) this step
    double prefill_read_tokens = 0; // Σ (ctx + q) over prefill chunks
    double decode_read_tokens = 0;  // Σ ⌈ctx + q⌉_block over decodes
  };

  HardwareSpec hw_;
  std::vector<AttnClass> classes_;
  std::vector<Linear> linears_;
  int64_t tp_ = 1;
  int64_t dp_ = 1;
  int64_t peer_tokens_ = 0;  // AddPeerTokens
  int64_t ep_ = 1;
  int64_t num_layers_ = 0;
  double sampler_us_ = 0;  // sampler_sort_us when the model samples through top-k/top-p
  int64_t num_mamba_layers_ = 0;
  int64_t num_attention_layers_ = 0;
  double mamba_state_bytes_ = 0;  // Σ over Mamba layers, per rank per sequence
  double active_params_ = 0;
  double weight_bytes_per_param_ = 2;
  double hidden_ = 0;
  double hidden_bytes_ = 0;  // hidden_size · activation bytes (all-reduce payload per token)
  double peak_flops_ = 0;    // FLOP/s for GEMMs at the model dtype
  // Routed experts (0 experts = a dense model).
  double experts_ = 0;
  double top_k_ = 0;
  double expert_gate_up_n_ = 0, expert_down_k_ = 0;  // one expert's shapes on this rank
  double moe_layers_ = 0;
  int64_t tokens_ = 0;
  int64_t seqs_ = 0;
  int64_t mamba_seqs_ = 0;
};

}  // namespace kvsim
