#include "core/memory_budget.h"

#include <algorithm>
#include <cmath>

#include "core/dtype.h"

namespace kvsim {
namespace {

constexpr double kActivationBytes = 2.0;  // 16-bit activations
constexpr double kLogitBytes = 4.0;       // fp32 logits

// Bytes as an integer, saturated well inside int64 (inputs are user numbers: a preset may say
// anything up to int64's range, and the products here must not overflow the cast).
int64_t Saturated(double bytes) {
  constexpr double kLimit = 4e18;
  return static_cast<int64_t>(std::llround(std::clamp(bytes, -kLimit, kLimit)));
}

// positions × rotated dims × 2 bytes (0 for a model without rotary attention layers).
double RopeCacheBytes(const ModelSpec& model) {
  const ModelCompute& mc = model.compute;
  const int64_t positions =
      mc.max_position_embeddings > 0 ? mc.max_position_embeddings : model.max_model_len;
  int64_t dims = mc.rotary_dim;
  for (const LayerSpec& l : model.layers) {
    if (dims > 0) break;
    // MLA rotates a separate 64-wide slice, not its latent head: it needs rotary_dim given.
    if (l.kind == LayerKind::kFullAttention || l.kind == LayerKind::kSlidingWindow ||
        l.kind == LayerKind::kChunkedLocal)
      dims = l.head_size;
  }
  return static_cast<double>(std::max<int64_t>(0, positions)) *
         static_cast<double>(std::max<int64_t>(0, dims)) * kActivationBytes;
}

}  // namespace

MemoryBudget VllmKvMemoryBudget(const ModelSpec& model, const MemoryBudgetInputs& in) {
  MemoryBudget b;
  const double tp = static_cast<double>(std::max<int64_t>(1, in.tp));
  const double ep = static_cast<double>(std::max<int64_t>(1, in.ep));
  b.requested =
      Saturated(std::floor(in.gpu_memory_utilization * static_cast<double>(in.total_bytes)));
  b.non_torch = in.non_torch_bytes;

  const ModelCompute& mc = model.compute;
  const double total = static_cast<double>(std::max(mc.num_params, mc.num_active_params));
  const double active = static_cast<double>(mc.num_active_params);
  const double hidden = static_cast<double>(mc.hidden_size);
  const double vocab = static_cast<double>(mc.vocab_size);
  double wbytes = static_cast<double>(ElementBytes(model.dtype));
  if (wbytes <= 0) wbytes = kActivationBytes;

  // Weights: the routed experts over EP ranks when EP is on, everything else over TP.
  double routed = 0;
  const double experts = static_cast<double>(mc.num_experts);
  const double top_k = static_cast<double>(std::max<int64_t>(1, mc.num_experts_per_token));
  if (total > active && experts > top_k) routed = (total - active) * experts / (experts - top_k);
  double weights = in.ep > 1 ? routed / ep + (total - routed) / tp : total / tp;
  weights *= wbytes;
  // Quantized checkpoints keep the embedding and the LM head in 16 bits (vocab-parallel), and
  // whatever their quantization ignore list names (split over TP like the rest).
  if (wbytes < kActivationBytes) {
    weights += 2.0 * vocab * hidden * (kActivationBytes - wbytes) / tp;
    weights += static_cast<double>(mc.num_params_16bit) * (kActivationBytes - wbytes) / tp;
  }
  b.weights = Saturated(weights);
  b.rope_cache = Saturated(RopeCacheBytes(model));

  // The profile run's peak: the forward of max_num_batched_tokens tokens, or the sampler.
  const double tokens = static_cast<double>(std::max<int64_t>(1, in.max_num_batched_tokens));
  double width = static_cast<double>(mc.intermediate_size);
  if (width <= 0) width = 4.0 * hidden;
  if (routed > 0) width *= top_k;  // the fused MoE's gate/up output holds top-k rows a token
  double qkv = 0;
  for (const LayerSpec& l : model.layers) {
    if (l.kind == LayerKind::kMamba) continue;
    const double q = mc.num_attention_heads > 0 ? static_cast<double>(mc.num_attention_heads)
                                                : static_cast<double>(l.num_kv_heads);
    qkv = std::max(qkv, (q + 2.0 * static_cast<double>(l.num_kv_heads)) *
                            static_cast<double>(l.head_size));
  }
  const double forward = tokens * (3.0 * width / tp + qkv / tp + 4.0 * hidden) * kActivationBytes;
  const double rows = static_cast<double>(std::min(in.max_num_seqs, in.max_num_batched_tokens));
  const double sampler = rows * vocab * kLogitBytes * 2.0;  // logits and probabilities
  b.activations = Saturated(std::max(forward, sampler));

  b.kv = Saturated(static_cast<double>(b.requested) - static_cast<double>(b.weights) -
                   static_cast<double>(b.rope_cache) - static_cast<double>(b.activations) -
                   static_cast<double>(b.non_torch));
  return b;
}

}  // namespace kvsim
