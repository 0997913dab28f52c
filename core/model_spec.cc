#include "core/model_spec.h"

#include <algorithm>
#include <string>

namespace kvsim {
namespace {

Status NotDivisible(const char* what, int64_t value, int64_t tp) {
  return Status::Error("tp_not_divisible", std::string(what) + " = " + std::to_string(value) +
                                               " is not divisible by TP " + std::to_string(tp));
}

DType Resolve(DType t, DType fallback) { return t == DType::kAuto ? fallback : t; }

Result<std::vector<MambaState>> MambaStatesPerRank(const MambaMixerSpec& m, int64_t tp,
                                                   DType model_dtype, int64_t nspec) {
  const DType conv_t = Resolve(m.conv_dtype, model_dtype);
  const DType ssm_t = Resolve(m.ssm_dtype, conv_t);
  std::vector<MambaState> out;
  switch (m.mixer) {
    case MambaMixer::kExplicit:
      return m.explicit_states;
    case MambaMixer::kGatedDeltaNet: {
      // conv: (K-1+nspec) x (2*kh*kd + vh*vd)/TP;  ssm: (vh/TP, vd, kd)
      const int64_t channels = 2 * m.num_k_heads * m.head_k_dim + m.num_v_heads * m.head_v_dim;
      if (channels % tp != 0) return NotDivisible("GDN conv channels", channels, tp);
      if (m.num_v_heads % tp != 0) return NotDivisible("GDN value heads", m.num_v_heads, tp);
      out.push_back({"conv", {m.conv_kernel - 1 + nspec, channels / tp}, conv_t});
      out.push_back({"ssm", {m.num_v_heads / tp, m.head_v_dim, m.head_k_dim}, ssm_t});
      return out;
    }
    case MambaMixer::kMamba2: {
      // G' = G if G % TP == 0 else G + (TP - G): groups are replicated to cover the ranks.
      const int64_t g = (m.n_groups % tp == 0) ? m.n_groups : m.n_groups + (tp - m.n_groups);
      const int64_t channels = m.intermediate_size + 2 * g * m.state_size;
      if (channels % tp != 0) return NotDivisible("Mamba2 conv channels", channels, tp);
      if (m.num_heads % tp != 0) return NotDivisible("Mamba2 heads", m.num_heads, tp);
      out.push_back({"conv", {m.conv_kernel - 1 + nspec, channels / tp}, conv_t});
      out.push_back({"ssm", {m.num_heads / tp, m.head_dim, m.state_size}, ssm_t});
      return out;
    }
    case MambaMixer::kMamba1: {
      if (m.intermediate_size % tp != 0)
        return NotDivisible("Mamba1 intermediate size", m.intermediate_size, tp);
      out.push_back({"conv", {m.conv_kernel - 1, m.intermediate_size / tp}, conv_t});
      out.push_back({"ssm", {m.intermediate_size / tp, m.state_size}, ssm_t});
      return out;
    }
  }
  return out;
}

}  // namespace

Result<KvCacheSpec> LayerSpec::ToKvCacheSpec(int64_t tp, int64_t block_size, DType kv_dtype,
                                              DType model_dtype,
                                              int64_t num_speculative_tokens) const {
  KvCacheSpec s;
  s.kind = kind;
  s.block_size = block_size;
  s.indexes_kv_by_block_stride = indexes_kv_by_block_stride;
  if (kind == LayerKind::kMamba) {
    auto states = MambaStatesPerRank(mamba, tp, model_dtype, num_speculative_tokens);
    if (!states.ok()) return states.status();
    s.mamba_states = std::move(states.value());
    s.num_speculative_blocks = num_speculative_tokens;
    s.num_kv_heads = 1;
    s.dtype = Resolve(mamba.conv_dtype, model_dtype);
    return s;
  }
  s.dtype = Resolve(dtype, Resolve(kv_dtype, model_dtype));
  s.head_size = head_size;
  if (kind == LayerKind::kMla) {
    s.num_kv_heads = 1;
    s.head_size_v = 0;
  } else {
    // vLLM's attention layers split KV heads over TP or replicate them; a TP size that does
    // neither is rejected when the model loads.
    if (num_kv_heads < 1) {
      return Status::Error("invalid_config", "an attention layer needs num_kv_heads >= 1");
    }
    if (num_kv_heads >= tp ? num_kv_heads % tp != 0 : tp % num_kv_heads != 0) {
      return Status::Error("tp_not_divisible",
                           "KV heads = " + std::to_string(num_kv_heads) +
                               " cannot be split over TP " + std::to_string(tp) +
                               " (one must divide the other)");
    }
    s.num_kv_heads = std::max<int64_t>(1, num_kv_heads / tp);
    s.head_size_v = head_size_v < 0 ? head_size : head_size_v;
  }
  s.sliding_window = kind == LayerKind::kSlidingWindow ? sliding_window : 0;
  s.attention_chunk_size = kind == LayerKind::kChunkedLocal ? attention_chunk_size : 0;
  return s;
}

bool ModelSpec::has_mamba() const {
  return std::any_of(layers.begin(), layers.end(),
                     [](const LayerSpec& l) { return l.kind == LayerKind::kMamba; });
}
bool ModelSpec::has_attention() const {
  return std::any_of(layers.begin(), layers.end(),
                     [](const LayerSpec& l) { return l.kind != LayerKind::kMamba; });
}

}  // namespace kvsim
