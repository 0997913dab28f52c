// ModelSpec: a model as the KV cache sees it, before tensor parallelism. It is the ordered
// list of layers (each a LayerSpec with model-level head counts and mixer sizes) plus the
// numbers the step-time model needs. Presets for real models are data files in
// scenarios/models/; the scenario loader turns them into this struct.
//
// LayerSpec::ToKvCacheSpec(tp, ...) derives the per-rank KvCacheSpec exactly as vLLM does:
// KV heads per rank = max(1, heads / TP) (replicated when TP exceeds the heads), MLA keeps
// one latent head, and Mamba state shapes follow `mamba_utils.py` (reference §1.3), with
// every TP division required to be exact.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/kv_cache_spec.h"
#include "core/status.h"

namespace kvsim {

// How a Mamba-style layer's state shapes are given.
enum class MambaMixer : uint8_t {
  kExplicit,       // `shapes`/`dtypes` given per rank in the scenario
  kGatedDeltaNet,  // Qwen3-Next / Qwen3.5 linear attention
  kMamba2,
  kMamba1,
};

constexpr std::string_view MambaMixerName(MambaMixer m) {
  switch (m) {
    case MambaMixer::kExplicit: return "mamba";
    case MambaMixer::kGatedDeltaNet: return "gdn";
    case MambaMixer::kMamba2: return "mamba2";
    case MambaMixer::kMamba1: return "mamba1";
  }
  return "?";
}

struct MambaMixerSpec {
  MambaMixer mixer = MambaMixer::kExplicit;
  int64_t conv_kernel = 4;  // K
  // Gated DeltaNet
  int64_t num_k_heads = 0;  // linear key heads (kh)
  int64_t num_v_heads = 0;  // linear value heads (vh)
  int64_t head_k_dim = 0;   // kd
  int64_t head_v_dim = 0;   // vd
  // Mamba1 / Mamba2
  int64_t intermediate_size = 0;  // I
  int64_t n_groups = 1;           // G
  int64_t state_size = 0;         // N
  int64_t num_heads = 0;          // Mamba2 heads
  int64_t head_dim = 0;           // Mamba2 head dim
  int64_t chunk_size = 0;         // model's Mamba chunk size ('all' mode alignment)
  DType conv_dtype = DType::kAuto;  // auto → model dtype
  DType ssm_dtype = DType::kAuto;   // auto → conv dtype
  std::vector<MambaState> explicit_states;  // kExplicit only, already per rank

  // Mamba1/Mamba2-family models implement SupportsMambaPrefixCaching ('all' mode); others
  // (GDN) are downgraded to 'align'. Explicit layers say so with supports_all_mode.
  bool supports_all_mode = false;

  bool operator==(const MambaMixerSpec&) const = default;
};

struct LayerSpec {
  LayerKind kind = LayerKind::kFullAttention;
  int64_t num_kv_heads = 0;  // total over all ranks
  int64_t head_size = 0;
  int64_t head_size_v = -1;  // -1: same as head_size
  DType dtype = DType::kAuto;  // per-layer KV dtype; auto → cache.kv_dtype → model dtype
  int64_t sliding_window = 0;
  int64_t attention_chunk_size = 0;
  MambaMixerSpec mamba;
  bool indexes_kv_by_block_stride = true;

  bool operator==(const LayerSpec&) const = default;

  // The per-rank spec at block size `block_size`. `kv_dtype` is the cache-wide KV dtype
  // (kAuto = model dtype). Fails on TP divisions that are not exact.
  Result<KvCacheSpec> ToKvCacheSpec(int64_t tp, int64_t block_size, DType kv_dtype,
                                    DType model_dtype, int64_t num_speculative_tokens) const;
};

// Numbers the step-time model needs; zero where a preset does not give them.
struct ModelCompute {
  int64_t hidden_size = 0;
  int64_t num_attention_heads = 0;  // query heads
  int64_t num_params = 0;           // total parameters
  int64_t num_active_params = 0;    // parameters read per token (MoE: active experts)
  int64_t vocab_size = 0;
  int64_t intermediate_size = 0;      // dense MLP width (0: derived from the params)
  int64_t num_experts = 0;            // routed experts per MoE layer (0: dense, or derived)
  int64_t num_experts_per_token = 0;  // top-k routing
  // Parameters a quantized checkpoint keeps in 16 bits besides its embedding and LM head (its
  // quantization ignore list: attention projections, routers, a vision tower).
  int64_t num_params_16bit = 0;
  // The checkpoint keeps its attention projections (QKV and O) in 16 bits (its ignore list
  // names self_attn): the step-time model reads and multiplies them as bf16, not fp8.
  bool attention_16bit = false;
  // vLLM samples through its top-k/top-p path (a sort of every row's logits, then masking)
  // when the model's generation_config.json sets top_k or top_p: vLLM applies those defaults
  // to every request that leaves them unset. Without them it only scales and draws.
  bool sampling_sorts = true;
  // The positions vLLM's rotary embedding caches cos/sin for: config.json's
  // max_position_embeddings, which a served max_model_len does not shorten (0: max_model_len).
  int64_t max_position_embeddings = 0;
  int64_t rotary_dim = 0;  // rotated dims per head (0: the attention layers' head size)
  bool operator==(const ModelCompute&) const = default;
};

struct ModelSpec {
  std::string name;
  DType dtype = DType::kBFloat16;  // model (weights/activations) dtype
  std::vector<LayerSpec> layers;   // in model order
  int64_t max_model_len = 0;       // 0: not given
  ModelCompute compute;

  int64_t num_layers() const { return static_cast<int64_t>(layers.size()); }
  bool has_mamba() const;
  bool has_attention() const;
  bool operator==(const ModelSpec&) const = default;
};

}  // namespace kvsim
