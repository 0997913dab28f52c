#include "sim/scenario/hf_config.h"
#include "sim/json_text.h"

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

namespace kvsim {
namespace {

using Json = nlohmann::json;

// Bounds on what a config may say: far above any released model, low enough that the
// layer list and the parameter arithmetic stay small and exact.
constexpr int64_t kMaxLayers = 4096;
constexpr int64_t kMaxHeads = 1 << 16;
constexpr int64_t kMaxDim = 1 << 20;  // hidden sizes, head dims, MLP widths, LoRA ranks
constexpr int64_t kMaxVocab = 1 << 24;
constexpr int64_t kMaxExperts = 1 << 16;
constexpr int64_t kMaxContext = int64_t{1} << 40;

// The first error wins: the reader stops reading values once one is recorded, so each
// message names the key that was wrong rather than what followed from it.
struct Errors {
  std::string file;
  std::optional<Status> first;
  void Add(const std::string& code, const std::string& key, const std::string& msg) {
    if (!first) first = Status::Error(code, file + ": " + key + ": " + msg);
  }
};

// One JSON object of the config (the top level, or `text_config`), with typed, bounded
// getters. `prefix` is the object's path for messages ("text_config.").
class Cfg {
 public:
  Cfg(const Json* obj, std::string prefix, Errors* errors)
      : obj_(obj), prefix_(std::move(prefix)), errors_(errors) {}

  const Json* Find(const std::string& key) const {
    if (!obj_ || !obj_->is_object()) return nullptr;
    auto it = obj_->find(key);
    if (it == obj_->end() || it->is_null()) return nullptr;
    return &*it;
  }
  bool Has(const std::string& key) const { return Find(key) != nullptr; }
  std::string Key(const std::string& key) const { return prefix_ + key; }
  void Error(const std::string& code, const std::string& key, const std::string& msg) const {
    errors_->Add(code, Key(key), msg);
  }

  int64_t Int(const std::string& key, int64_t lo, int64_t hi) const {
    const Json* v = Find(key);
    if (!v) {
      Error("missing_key", key, "missing (an integer is required)");
      return lo;
    }
    return Checked(key, *v, lo, hi);
  }
  int64_t IntOr(const std::string& key, int64_t def, int64_t lo, int64_t hi) const {
    const Json* v = Find(key);
    return v ? Checked(key, *v, lo, hi) : def;
  }
  bool BoolOr(const std::string& key, bool def) const {
    const Json* v = Find(key);
    if (!v) return def;
    if (!v->is_boolean()) {
      Error("wrong_type", key, "expected true or false, got " + Show(*v));
      return def;
    }
    return v->get<bool>();
  }
  std::string StringOr(const std::string& key, const std::string& def) const {
    const Json* v = Find(key);
    if (!v) return def;
    if (!v->is_string()) {
      Error("wrong_type", key, "expected a string, got " + Show(*v));
      return def;
    }
    return v->get<std::string>();
  }
  // A list of strings of exactly `n` entries.
  std::vector<std::string> StringList(const std::string& key, int64_t n) const {
    std::vector<std::string> out;
    const Json* v = Find(key);
    if (!v || !v->is_array()) {
      Error(v ? "wrong_type" : "missing_key", key, "expected a list of strings");
      return out;
    }
    if (static_cast<int64_t>(v->size()) != n) {
      Error("bad_value", key,
            "has " + std::to_string(v->size()) + " entries, num_hidden_layers is " +
                std::to_string(n));
      return out;
    }
    for (const auto& e : *v) {
      if (!e.is_string()) {
        Error("wrong_type", key, "expected strings, got " + Show(e));
        return {};
      }
      out.push_back(e.get<std::string>());
    }
    return out;
  }
  std::vector<int64_t> IntList(const std::string& key, int64_t n, int64_t lo, int64_t hi) const {
    std::vector<int64_t> out;
    const Json* v = Find(key);
    if (!v || !v->is_array() || static_cast<int64_t>(v->size()) != n) {
      Error(v ? "bad_value" : "missing_key", key,
            "expected a list of " + std::to_string(n) + " integers (one per layer)");
      return out;
    }
    for (const auto& e : *v) out.push_back(Checked(key, e, lo, hi));
    return out;
  }
  Cfg Sub(const std::string& key) const {
    const Json* v = Find(key);
    if (v && !v->is_object()) {
      Error("wrong_type", key, "expected an object, got " + Show(*v));
      v = nullptr;
    }
    return Cfg(v, prefix_ + key + ".", errors_);
  }
  bool present() const { return obj_ && obj_->is_object(); }

 private:
  static std::string Show(const Json& v) {
    std::string s = v.dump();
    return s.size() > 40 ? s.substr(0, 40) + "..." : s;
  }
  int64_t Checked(const std::string& key, const Json& v, int64_t lo, int64_t hi) const {
    if (!v.is_number_integer()) {
      Error("wrong_type", key, "expected an integer, got " + Show(v));
      return lo;
    }
    if (v.is_number_unsigned() ? v.get<uint64_t>() > static_cast<uint64_t>(hi)
                               : (v.get<int64_t>() < lo || v.get<int64_t>() > hi)) {
      Error("bad_value", key,
            Show(v) + " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
      return lo;
    }
    return v.get<int64_t>();
  }

  const Json* obj_;
  std::string prefix_;
  Errors* errors_;
};

// One decoder layer's cache-relevant shape, in the keys of a preset's `layers` entry.
struct Layer {
  std::string type = "full_attention";
  int64_t num_kv_heads = 0;
  int64_t head_size = 0;
  int64_t sliding_window = 0;
  int64_t attention_chunk_size = 0;
  // Gated DeltaNet
  int64_t conv_kernel = 0, num_k_heads = 0, num_v_heads = 0, head_k_dim = 0, head_v_dim = 0;
  std::string ssm_dtype;  // empty: auto
  bool operator==(const Layer&) const = default;
};

// What a family reader fills in.
struct Model {
  std::string dtype = "bf16";     // weights
  std::string kv_dtype = "auto";  // the KV cache's dtype when it is not the weights'
  std::string name_note;          // appended to the name when a fact is not modelled
  bool attention_16bit = false;   // the quantization leaves self_attn in 16 bits
  int64_t max_model_len = 0;
  std::vector<Layer> layers;
  std::vector<Layer> mtp_layers;  // the checkpoint's MTP drafter, when it has one
  // compute
  int64_t hidden = 0, heads = 0, vocab = 0, intermediate = 0, experts = 0, top_k = 0;
  double params = 0, active = 0;
};

// ---------------------------------------------------------------------------------------
// Dtypes: vLLM's model dtype is the checkpoint's torch dtype (`dtype`, or `torch_dtype` in
// older configs); a float32 checkpoint is served in bf16 under the default dtype=auto. The
// KV cache follows the torch dtype whatever the weights are quantized to, unless the
// quantization config quantizes the KV cache as well.

std::string TorchDtype(const Cfg& top, const Cfg& text) {
  for (const Cfg* c : {&text, &top}) {
    for (const char* key : {"dtype", "torch_dtype"}) {
      if (!c->Has(key)) continue;
      const std::string s = c->StringOr(key, "");
      if (s == "bfloat16" || s == "float32") return "bf16";
      if (s == "float16" || s == "half") return "fp16";
      c->Error("bad_value", key, "\"" + s + "\" is not bfloat16, float16 or float32");
      return "bf16";
    }
  }
  return "bf16";
}

// Whether a quantization config's list of modules it leaves unquantized (compressed-tensors
// `ignore`, ModelOpt `exclude_modules`, fp8 `ignored_layers` / `modules_to_not_convert`) names
// the attention projections, by module name or by a pattern over `self_attn`.
bool IgnoresSelfAttention(const Cfg& q) {
  for (const char* key :
       {"ignore", "exclude_modules", "ignored_layers", "modules_to_not_convert"}) {
    const Json* list = q.Find(key);
    if (!list || !list->is_array()) continue;
    for (const Json& e : *list) {
      if (e.is_string() && e.get<std::string>().find("self_attn") != std::string::npos) {
        return true;
      }
    }
  }
  return false;
}

void ApplyQuantization(const Cfg& top, Model& m) {
  const Cfg q = top.Sub("quantization_config");
  if (!q.present()) return;
  const std::string method = q.StringOr("quant_method", "");
  const std::string torch = m.dtype;
  if (method == "fp8") {
    m.dtype = "fp8";
  } else if (method == "compressed-tensors") {
    // vLLM serves every weight group of a checkpoint at one precision; read the first.
    const Cfg w = q.Sub("config_groups").Sub("group_0").Sub("weights");
    if (!w.present()) {
      q.Error("missing_key", "config_groups.group_0.weights",
              "compressed-tensors needs its weight scheme");
      return;
    }
    const int64_t bits = w.Int("num_bits", 1, 64);
    const std::string type = w.StringOr("type", "int");
    if (bits == 8 && type == "float") {
      m.dtype = "fp8";
    } else if (bits == 8 && type == "int") {
      m.dtype = "int8";
    } else {
      w.Error("bad_value", "num_bits",
              std::to_string(bits) + "-bit " + type +
                  " weights are not modelled (kvsim prices 16- and 8-bit weights)");
    }
    const Cfg kv = q.Sub("kv_cache_scheme");
    if (kv.present()) {
      if (kv.Int("num_bits", 1, 64) != 8 || kv.StringOr("type", "float") != "float") {
        kv.Error("bad_value", "num_bits", "only an 8-bit float KV cache scheme is modelled");
      }
      m.kv_dtype = "fp8";
    }
  } else if (method == "modelopt") {
    const std::string algo = q.StringOr("quant_algo", "");
    if (algo != "FP8") {
      q.Error("bad_value", "quant_algo", "\"" + algo + "\" is not modelled (FP8 is)");
    }
    m.dtype = "fp8";
    if (q.StringOr("kv_cache_quant_algo", "") == "FP8") m.kv_dtype = "fp8";
  } else if (method == "mxfp4") {
    // gpt-oss: only the experts are MXFP4 (attention, router, embedding and head stay
    // bf16). kvsim has no 4-bit weight dtype, so the weights are priced as bf16, as the
    // shipped gpt-oss preset does; the name says so.
    m.name_note = " (mxfp4 experts priced as bf16)";
  } else {
    q.Error("bad_value", "quant_method",
            "\"" + method + "\" is not modelled (fp8, compressed-tensors, modelopt, mxfp4 are)");
  }
  // With the weights quantized, `auto` KV stays in the checkpoint's torch dtype.
  if (m.kv_dtype == "auto" && m.dtype != torch) m.kv_dtype = torch;
  // Only where kvsim prices the weights below 16 bits does a 16-bit attention differ (gpt-oss's
  // mxfp4 experts are priced as bf16 already).
  m.attention_16bit = m.dtype != torch && IgnoresSelfAttention(q);
}

// ---------------------------------------------------------------------------------------
// Shared pieces of the decoder families.

struct Attn {
  int64_t hidden = 0, q_heads = 0, kv_heads = 0, head_dim = 0;
};

Attn ReadAttn(const Cfg& c) {
  Attn a;
  a.hidden = c.Int("hidden_size", 1, kMaxDim);
  a.q_heads = c.Int("num_attention_heads", 1, kMaxHeads);
  a.kv_heads = c.IntOr("num_key_value_heads", a.q_heads, 1, kMaxHeads);
  // transformers' default head_dim is hidden / heads (Llama, Mistral, Qwen2).
  a.head_dim = c.IntOr("head_dim", a.q_heads > 0 ? a.hidden / a.q_heads : 1, 1, kMaxDim);
  return a;
}

// q, k, v and o projections of a GQA layer (weights only).
double AttnParams(const Attn& a) {
  const double h = a.hidden, d = a.head_dim;
  return h * a.q_heads * d + 2.0 * h * a.kv_heads * d + a.q_heads * d * h;
}

void Embeddings(const Cfg& c, Model& m, bool tie_default) {
  m.vocab = c.Int("vocab_size", 1, kMaxVocab);
  const bool tie = c.BoolOr("tie_word_embeddings", tie_default);
  m.params += static_cast<double>(m.vocab) * m.hidden * (tie ? 1 : 2) + m.hidden;  // + final norm
}

int64_t NumLayers(const Cfg& c) { return c.Int("num_hidden_layers", 1, kMaxLayers); }

Layer AttnLayer(const Attn& a, const std::string& type = "full_attention") {
  Layer l;
  l.type = type;
  l.num_kv_heads = a.kv_heads;
  l.head_size = a.head_dim;
  return l;
}

// `layer_types` (newer transformers configs) as sliding/full per layer; an unknown entry is
// an error rather than a guess.
std::vector<bool> SlidingFromLayerTypes(const Cfg& c, int64_t n) {
  std::vector<bool> out;
  for (const auto& t : c.StringList("layer_types", n)) {
    if (t != "sliding_attention" && t != "full_attention") {
      c.Error("bad_value", "layer_types",
              "\"" + t + "\": expected sliding_attention or full_attention");
      return {};
    }
    out.push_back(t == "sliding_attention");
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Dense GQA decoders: vLLM llama.py (Llama, Mistral), qwen2.py, qwen3.py.

void ReadDense(const Cfg& c, Model& m, const std::string& arch) {
  const Attn a = ReadAttn(c);
  const int64_t n = NumLayers(c);
  m.hidden = a.hidden;
  m.heads = a.q_heads;
  m.intermediate = c.Int("intermediate_size", 1, kMaxDim);
  m.max_model_len = c.Int("max_position_embeddings", 1, kMaxContext);
  const bool qwen2 = arch == "Qwen2ForCausalLM";
  const bool qwen3 = arch == "Qwen3ForCausalLM";
  // Sliding windows: Qwen2/3 only with use_sliding_window, from layer max_window_layers on
  // (transformers' layer_types rule); Llama/Mistral by layer_types, else one window for all
  // layers when sliding_window is set (Mistral-7B-v0.1).
  std::vector<bool> sliding(static_cast<size_t>(n), false);
  int64_t window = 0;
  if (qwen2 || qwen3) {
    if (c.BoolOr("use_sliding_window", false)) {
      window = c.Int("sliding_window", 1, kMaxContext);
      const int64_t first = c.IntOr("max_window_layers", n, 0, kMaxLayers);
      for (int64_t i = first; i < n; ++i) sliding[static_cast<size_t>(i)] = true;
    }
  } else if (c.Has("layer_types")) {
    sliding = SlidingFromLayerTypes(c, n);
    for (bool s : sliding) {
      if (s) window = c.Int("sliding_window", 1, kMaxContext);
      if (s) break;
    }
  } else if (c.Has("sliding_window")) {
    window = c.Int("sliding_window", 1, kMaxContext);
    sliding.assign(static_cast<size_t>(n), true);
  }
  for (int64_t i = 0; i < n && static_cast<size_t>(i) < sliding.size(); ++i) {
    Layer l = AttnLayer(a, sliding[static_cast<size_t>(i)] ? "sliding_window" : "full_attention");
    if (sliding[static_cast<size_t>(i)]) l.sliding_window = window;
    m.layers.push_back(l);
  }
  const double h = a.hidden, d = a.head_dim;
  double layer = AttnParams(a) + 3.0 * h * m.intermediate + 2.0 * h;  // + two RMSNorms
  if (qwen2 || c.BoolOr("attention_bias", false)) layer += (a.q_heads + 2.0 * a.kv_heads) * d;
  if (!qwen2 && c.BoolOr("attention_bias", false)) layer += h;  // Llama's bias covers o_proj
  if (c.BoolOr("mlp_bias", false)) layer += 2.0 * m.intermediate + h;
  if (qwen3) layer += 2.0 * d;  // q_norm, k_norm
  m.params = layer * static_cast<double>(n);
  Embeddings(c, m, false);
  m.active = m.params;
}

// ---------------------------------------------------------------------------------------
// Mixtral (vLLM mixtral.py): every layer a block-sparse MoE of num_local_experts experts of
// width intermediate_size, top num_experts_per_tok, no shared expert.

void ReadMixtral(const Cfg& c, Model& m) {
  const Attn a = ReadAttn(c);
  const int64_t n = NumLayers(c);
  m.hidden = a.hidden;
  m.heads = a.q_heads;
  m.max_model_len = c.Int("max_position_embeddings", 1, kMaxContext);
  m.experts = c.Int("num_local_experts", 1, kMaxExperts);
  m.top_k = c.Int("num_experts_per_tok", 1, m.experts);
  const double width = static_cast<double>(c.Int("intermediate_size", 1, kMaxDim));
  const int64_t window = c.Has("sliding_window") ? c.Int("sliding_window", 1, kMaxContext) : 0;
  for (int64_t i = 0; i < n; ++i) {
    Layer l = AttnLayer(a, window > 0 ? "sliding_window" : "full_attention");
    l.sliding_window = window;
    m.layers.push_back(l);
  }
  const double h = a.hidden, expert = 3.0 * h * width, router = h * m.experts;
  const double shared = AttnParams(a) + router + 2.0 * h;
  m.params = (shared + m.experts * expert) * n;
  m.active = (shared + m.top_k * expert) * n;
  Embeddings(c, m, false);
  m.active += m.params - (shared + m.experts * expert) * n;
}

// ---------------------------------------------------------------------------------------
// Llama 4 (vLLM llama4.py, text_config): MoE every interleave_moe_layer_step-th layer
// (experts of width intermediate_size, top num_experts_per_tok, plus one shared expert of
// the same width), dense layers of width intermediate_size_mlp. Layers with RoPE
// (no_rope_layers[i] == 1) use chunked local attention of attention_chunk_size; the NoPE
// layers attend globally.

void ReadLlama4(const Cfg& c, Model& m) {
  const Attn a = ReadAttn(c);
  const int64_t n = NumLayers(c);
  m.hidden = a.hidden;
  m.heads = a.q_heads;
  m.max_model_len = c.Int("max_position_embeddings", 1, kMaxContext);
  m.experts = c.Int("num_local_experts", 1, kMaxExperts);
  m.top_k = c.Int("num_experts_per_tok", 1, m.experts);
  const double width = static_cast<double>(c.Int("intermediate_size", 1, kMaxDim));
  const double dense_width = static_cast<double>(c.Int("intermediate_size_mlp", 1, kMaxDim));
  const int64_t step = c.IntOr("interleave_moe_layer_step", 1, 1, kMaxLayers);
  const int64_t chunk = c.IntOr("attention_chunk_size", 0, 0, kMaxContext);
  std::vector<int64_t> rope;
  if (c.Has("no_rope_layers") && c.Find("no_rope_layers")->size() > 0) {
    rope = c.IntList("no_rope_layers", n, 0, 1);
  } else {
    // transformers' default: every fourth layer is NoPE.
    for (int64_t i = 0; i < n; ++i) rope.push_back((i + 1) % 4 != 0 ? 1 : 0);
  }
  const double h = a.hidden, expert = 3.0 * h * width;
  double total = 0, active = 0;
  for (int64_t i = 0; i < n && static_cast<size_t>(i) < rope.size(); ++i) {
    const bool chunked = chunk > 0 && rope[static_cast<size_t>(i)] == 1;
    Layer l = AttnLayer(a, chunked ? "chunked_local" : "full_attention");
    if (chunked) l.attention_chunk_size = chunk;
    m.layers.push_back(l);
    const double base = AttnParams(a) + 2.0 * h;
    if ((i + 1) % step == 0) {  // MoE layer: router, shared expert, routed experts
      total += base + h * m.experts + expert + m.experts * expert;
      active += base + h * m.experts + expert + m.top_k * expert;
    } else {
      total += base + 3.0 * h * dense_width;
      active += base + 3.0 * h * dense_width;
    }
  }
  m.params = total;
  Embeddings(c, m, false);
  m.active = active + (m.params - total);
}

// ---------------------------------------------------------------------------------------
// Gemma 3 (vLLM gemma3.py; text_config for Gemma3ForConditionalGeneration): sliding-window
// layers with a global layer every sliding_window_pattern-th (layer_types when given),
// q/k RMSNorms, four norms a layer, tied embeddings.

void ReadGemma3(const Cfg& c, Model& m) {
  const Attn a = ReadAttn(c);
  const int64_t n = NumLayers(c);
  m.hidden = a.hidden;
  m.heads = a.q_heads;
  m.intermediate = c.Int("intermediate_size", 1, kMaxDim);
  m.max_model_len = c.Int("max_position_embeddings", 1, kMaxContext);
  const int64_t window = c.Int("sliding_window", 1, kMaxContext);
  std::vector<bool> sliding;
  if (c.Has("layer_types")) {
    sliding = SlidingFromLayerTypes(c, n);
  } else {
    const int64_t pattern = c.IntOr("sliding_window_pattern", 6, 1, kMaxLayers);
    for (int64_t i = 0; i < n; ++i) sliding.push_back((i + 1) % pattern != 0);
  }
  for (bool s : sliding) {
    Layer l = AttnLayer(a, s ? "sliding_window" : "full_attention");
    l.sliding_window = s ? window : 0;
    m.layers.push_back(l);
  }
  const double h = a.hidden;
  m.params = (AttnParams(a) + 3.0 * h * m.intermediate + 4.0 * h + 2.0 * a.head_dim) * n;
  Embeddings(c, m, true);
  m.active = m.params;
}

// ---------------------------------------------------------------------------------------
// gpt-oss (vLLM gpt_oss.py): even layers slide over sliding_window tokens, odd layers are
// full (layer_types when given); biases on every projection, one attention sink per query
// head; MoE of num_local_experts experts of width intermediate_size with biases, top
// num_experts_per_tok (experts_per_token in older configs).

void ReadGptOss(const Cfg& c, Model& m) {
  const Attn a = ReadAttn(c);
  const int64_t n = NumLayers(c);
  m.hidden = a.hidden;
  m.heads = a.q_heads;
  m.max_model_len = c.Int("max_position_embeddings", 1, kMaxContext);
  m.experts = c.Int("num_local_experts", 1, kMaxExperts);
  m.top_k = c.Has("num_experts_per_tok") ? c.Int("num_experts_per_tok", 1, m.experts)
                                         : c.Int("experts_per_token", 1, m.experts);
  const int64_t window = c.Int("sliding_window", 1, kMaxContext);
  std::vector<bool> sliding;
  if (c.Has("layer_types")) {
    sliding = SlidingFromLayerTypes(c, n);
  } else {
    for (int64_t i = 0; i < n; ++i) sliding.push_back(i % 2 == 0);
  }
  for (bool s : sliding) {
    Layer l = AttnLayer(a, s ? "sliding_window" : "full_attention");
    l.sliding_window = s ? window : 0;
    m.layers.push_back(l);
  }
  const double h = a.hidden, d = a.head_dim;
  const double width = static_cast<double>(c.Int("intermediate_size", 1, kMaxDim));
  const double attn = AttnParams(a) + (a.q_heads + 2.0 * a.kv_heads) * d + h + a.q_heads;
  const double expert = h * 2.0 * width + 2.0 * width + width * h + h;  // gate_up, down + biases
  const double base = attn + h * m.experts + m.experts + 2.0 * h;       // + router with bias
  m.params = (base + m.experts * expert) * n;
  Embeddings(c, m, false);
  m.active = m.params - (m.experts - m.top_k) * expert * n;
}

// ---------------------------------------------------------------------------------------
// DeepSeek-V2/V3 (vLLM deepseek_v2.py, deepseek_mtp.py): multi-head latent attention caches
// one latent of kv_lora_rank + qk_rope_head_dim per token; the first first_k_dense_replace
// layers are dense (intermediate_size), the rest MoE of n_routed_experts experts of width
// moe_intermediate_size, top num_experts_per_tok, plus n_shared_experts shared ones.
// num_nextn_predict_layers MTP layers are the drafter.

void ReadDeepseek(const Cfg& c, Model& m) {
  const int64_t n = NumLayers(c);
  const double h = static_cast<double>(c.Int("hidden_size", 1, kMaxDim));
  m.hidden = static_cast<int64_t>(h);
  m.heads = c.Int("num_attention_heads", 1, kMaxHeads);
  m.max_model_len = c.Int("max_position_embeddings", 1, kMaxContext);
  const int64_t kv_lora = c.Int("kv_lora_rank", 1, kMaxDim);
  const int64_t rope = c.Int("qk_rope_head_dim", 1, kMaxDim);
  const int64_t nope = c.Int("qk_nope_head_dim", 1, kMaxDim);
  const int64_t v_dim = c.Int("v_head_dim", 1, kMaxDim);
  const int64_t q_lora = c.IntOr("q_lora_rank", 0, 0, kMaxDim);  // 0/null: plain q_proj
  const double dense_width = static_cast<double>(c.Int("intermediate_size", 1, kMaxDim));
  const double moe_width = static_cast<double>(c.Int("moe_intermediate_size", 1, kMaxDim));
  m.experts = c.Int("n_routed_experts", 1, kMaxExperts);
  m.top_k = c.Int("num_experts_per_tok", 1, m.experts);
  const int64_t shared = c.IntOr("n_shared_experts", 0, 0, kMaxExperts);
  const int64_t first_dense = c.IntOr("first_k_dense_replace", 0, 0, n);
  const int64_t moe_freq = c.IntOr("moe_layer_freq", 1, 1, kMaxLayers);
  const int64_t mtp = c.IntOr("num_nextn_predict_layers", 0, 0, kMaxLayers);

  Layer mla;
  mla.type = "mla";
  mla.head_size = kv_lora + rope;
  m.layers.assign(static_cast<size_t>(n), mla);
  m.mtp_layers.assign(static_cast<size_t>(mtp), mla);

  const double heads = static_cast<double>(m.heads);
  double attn = h * (kv_lora + rope) + kv_lora + kv_lora * heads * (nope + v_dim) +
                heads * v_dim * h;
  attn += q_lora > 0 ? h * q_lora + q_lora + q_lora * heads * (nope + rope)
                     : h * heads * (nope + rope);
  const double base = attn + 2.0 * h;
  const double expert = 3.0 * h * moe_width;
  double total = 0, active = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (i >= first_dense && i % moe_freq == 0) {
      // router weight and its score-correction bias (noaux_tc), shared experts, routed
      const double common = base + h * m.experts + m.experts + shared * expert;
      total += common + m.experts * expert;
      active += common + m.top_k * expert;
    } else {
      total += base + 3.0 * h * dense_width;
      active += base + 3.0 * h * dense_width;
    }
  }
  m.params = total;
  Embeddings(c, m, false);
  m.active = active + (m.params - total);
}

// ---------------------------------------------------------------------------------------
// Qwen3-Next and Qwen3.5 (vLLM qwen3_next.py, qwen3_5.py; text_config for the
// ConditionalGeneration classes): layer_types (or every full_attention_interval-th layer)
// are gated full attention, the rest Gated DeltaNet with linear_* heads and a conv of
// linear_conv_kernel_dim; the SSM state takes mamba_ssm_dtype when the config gives it.
// MoE (num_experts > 0): experts of moe_intermediate_size, top num_experts_per_tok, one
// gated shared expert of shared_expert_intermediate_size; else a dense MLP.
// mtp_num_hidden_layers full-attention MTP layers are the drafter.

void ReadQwenNext(const Cfg& c, const Cfg& top, Model& m) {
  const Attn a = ReadAttn(c);
  const int64_t n = NumLayers(c);
  m.hidden = a.hidden;
  m.heads = a.q_heads;
  m.max_model_len = c.Int("max_position_embeddings", 1, kMaxContext);
  std::vector<bool> full;
  if (c.Has("layer_types")) {
    for (const auto& t : c.StringList("layer_types", n)) {
      if (t != "linear_attention" && t != "full_attention") {
        c.Error("bad_value", "layer_types",
                "\"" + t + "\": expected linear_attention or full_attention");
        return;
      }
      full.push_back(t == "full_attention");
    }
  } else {
    const int64_t interval = c.Int("full_attention_interval", 1, kMaxLayers);
    for (int64_t i = 0; i < n; ++i) full.push_back((i + 1) % interval == 0);
  }
  Layer gdn;
  gdn.type = "gdn";
  gdn.conv_kernel = c.Int("linear_conv_kernel_dim", 1, 64);
  gdn.num_k_heads = c.Int("linear_num_key_heads", 1, kMaxHeads);
  gdn.num_v_heads = c.Int("linear_num_value_heads", 1, kMaxHeads);
  gdn.head_k_dim = c.Int("linear_key_head_dim", 1, kMaxDim);
  gdn.head_v_dim = c.Int("linear_value_head_dim", 1, kMaxDim);
  for (const Cfg* src : {&c, &top}) {
    if (!src->Has("mamba_ssm_dtype")) continue;
    const std::string s = src->StringOr("mamba_ssm_dtype", "");
    gdn.ssm_dtype = s == "float32" ? "fp32" : s == "bfloat16" ? "bf16" : s == "float16" ? "fp16" : "";
    if (gdn.ssm_dtype.empty()) {
      src->Error("bad_value", "mamba_ssm_dtype", "\"" + s + "\" is not float32/bfloat16/float16");
    }
    break;
  }
  for (bool f : full) m.layers.push_back(f ? AttnLayer(a) : gdn);
  // Qwen3.5 names its MTP layers mtp_num_hidden_layers; vLLM's qwen3_next_mtp.py reads
  // num_nextn_predict_layers.
  const int64_t mtp = c.Has("mtp_num_hidden_layers")
                          ? c.Int("mtp_num_hidden_layers", 0, kMaxLayers)
                          : c.IntOr("num_nextn_predict_layers", 0, 0, kMaxLayers);
  m.mtp_layers.assign(static_cast<size_t>(mtp), AttnLayer(a));

  const double h = a.hidden, d = a.head_dim;
  // Gated attention: q_proj also writes the output gate; q_norm and k_norm.
  const double attn = AttnParams(a) + h * a.q_heads * d + 2.0 * d;
  const double kh = gdn.num_k_heads, vh = gdn.num_v_heads, kd = gdn.head_k_dim,
               vd = gdn.head_v_dim;
  const double conv_ch = 2.0 * kh * kd + vh * vd;
  // in_proj (q, k, v, z, b, a), conv1d, dt_bias, A_log, gated norm, out_proj
  const double linear =
      h * (conv_ch + vh * vd + 2.0 * vh) + conv_ch * gdn.conv_kernel + 2.0 * vh + vd + vh * vd * h;
  double mlp_total = 0, mlp_active = 0;
  const int64_t experts = c.IntOr("num_experts", 0, 0, kMaxExperts);
  if (experts > 0) {
    m.experts = experts;
    m.top_k = c.Int("num_experts_per_tok", 1, experts);
    const double expert = 3.0 * h * c.Int("moe_intermediate_size", 1, kMaxDim);
    const double shared = 3.0 * h * c.IntOr("shared_expert_intermediate_size", 0, 0, kMaxDim);
    const double common = h * experts + (shared > 0 ? shared + h : 0);  // router, gated shared
    mlp_total = common + experts * expert;
    mlp_active = common + m.top_k * expert;
  } else {
    m.intermediate = c.Int("intermediate_size", 1, kMaxDim);
    mlp_total = mlp_active = 3.0 * h * m.intermediate;
  }
  double total = 0, active = 0;
  for (bool f : full) {
    total += (f ? attn : linear) + mlp_total + 2.0 * h;
    active += (f ? attn : linear) + mlp_active + 2.0 * h;
  }
  m.params = total;
  Embeddings(c, m, false);
  m.active = active + (m.params - total);
}

// ---------------------------------------------------------------------------------------

enum class Family { kDense, kMixtral, kLlama4, kGemma3, kGptOss, kDeepseek, kQwenNext };

struct Arch {
  const char* name;
  Family family;
  bool text_config;  // the decoder's keys sit under text_config
};

const std::vector<Arch>& Archs() {
  static const std::vector<Arch> kArchs = {
      {"LlamaForCausalLM", Family::kDense, false},
      {"MistralForCausalLM", Family::kDense, false},
      {"Qwen2ForCausalLM", Family::kDense, false},
      {"Qwen3ForCausalLM", Family::kDense, false},
      {"MixtralForCausalLM", Family::kMixtral, false},
      {"Llama4ForConditionalGeneration", Family::kLlama4, true},
      {"Llama4ForCausalLM", Family::kLlama4, false},
      {"Gemma3ForCausalLM", Family::kGemma3, false},
      {"Gemma3ForConditionalGeneration", Family::kGemma3, true},
      {"GptOssForCausalLM", Family::kGptOss, false},
      {"DeepseekV3ForCausalLM", Family::kDeepseek, false},
      {"DeepseekV2ForCausalLM", Family::kDeepseek, false},
      {"Qwen3NextForCausalLM", Family::kQwenNext, false},
      {"Qwen3_5ForConditionalGeneration", Family::kQwenNext, true},
      {"Qwen3_5MoeForConditionalGeneration", Family::kQwenNext, true},
  };
  return kArchs;
}

ConfigNode Scalar(const std::string& v, const SourcePos& pos) { return ConfigNode::Scalar(v, pos); }

ConfigNode MapNode(const SourcePos& pos) {
  ConfigNode n;
  n.kind = ConfigNode::Kind::kMap;
  n.pos = pos;
  return n;
}

// `kv_dtype` other than "auto" is written into every layer (attention `dtype`, Gated
// DeltaNet `conv_dtype`): a checkpoint with quantized weights keeps its KV cache and Mamba
// state in the torch dtype, which the model's `dtype` (the weights') no longer says.
ConfigNode LayersNode(const std::vector<Layer>& layers, const std::string& kv_dtype,
                      const SourcePos& pos) {
  ConfigNode list;
  list.kind = ConfigNode::Kind::kSeq;
  list.pos = pos;
  auto num = [&](int64_t v) { return Scalar(std::to_string(v), pos); };
  for (size_t i = 0; i < layers.size();) {
    size_t j = i;
    while (j < layers.size() && layers[j] == layers[i]) ++j;
    const Layer& l = layers[i];
    ConfigNode e = MapNode(pos);
    e.Set("type", Scalar(l.type, pos), pos);
    e.Set("count", num(static_cast<int64_t>(j - i)), pos);
    if (l.type == "gdn") {
      e.Set("conv_kernel", num(l.conv_kernel), pos);
      e.Set("num_k_heads", num(l.num_k_heads), pos);
      e.Set("num_v_heads", num(l.num_v_heads), pos);
      e.Set("head_k_dim", num(l.head_k_dim), pos);
      e.Set("head_v_dim", num(l.head_v_dim), pos);
      if (kv_dtype != "auto") e.Set("conv_dtype", Scalar(kv_dtype, pos), pos);
      if (!l.ssm_dtype.empty()) e.Set("ssm_dtype", Scalar(l.ssm_dtype, pos), pos);
    } else {
      if (l.type != "mla") e.Set("num_kv_heads", num(l.num_kv_heads), pos);
      e.Set("head_size", num(l.head_size), pos);
      if (kv_dtype != "auto") e.Set("dtype", Scalar(kv_dtype, pos), pos);
      if (l.sliding_window > 0) e.Set("sliding_window", num(l.sliding_window), pos);
      if (l.attention_chunk_size > 0) {
        e.Set("attention_chunk_size", num(l.attention_chunk_size), pos);
      }
    }
    list.seq.push_back(std::move(e));
    i = j;
  }
  return list;
}

ConfigNode ModelNode(const Model& m, const std::string& name, const SourcePos& pos,
                     bool with_compute) {
  ConfigNode out = MapNode(pos);
  auto num = [&](int64_t v) { return Scalar(std::to_string(v), pos); };
  out.Set("name", Scalar(name, pos), pos);
  out.Set("dtype", Scalar(m.dtype, pos), pos);
  out.Set("max_model_len", num(m.max_model_len), pos);
  out.Set("layers", LayersNode(with_compute ? m.layers : m.mtp_layers, m.kv_dtype, pos), pos);
  if (!with_compute) return out;
  ConfigNode c = MapNode(pos);
  c.Set("hidden_size", num(m.hidden), pos);
  c.Set("num_attention_heads", num(m.heads), pos);
  c.Set("num_params", num(std::llround(m.params)), pos);
  c.Set("num_active_params", num(std::llround(m.active)), pos);
  c.Set("vocab_size", num(m.vocab), pos);
  // The dense MLP width of a dense model; a MoE model's dense and shared widths are left to
  // the step-time model to derive from the parameter counts, as the MoE presets do.
  if (m.experts == 0) c.Set("intermediate_size", num(m.intermediate), pos);
  if (m.experts > 0) {
    c.Set("num_experts", num(m.experts), pos);
    c.Set("num_experts_per_token", num(m.top_k), pos);
  }
  if (m.attention_16bit) {
    c.Set("attention_16bit", Scalar("true", pos), pos);
    // What the KV budget then counts at 16 bits: the attention layers' QKV and O projections
    // (a vision tower or routers the list also names are not in the text config's shape).
    int64_t attention = 0;
    for (const Layer& l : m.layers) {
      if (l.type != "full_attention" && l.type != "sliding_window" && l.type != "chunked_local")
        continue;
      attention += std::llround(AttnParams({m.hidden, m.heads, l.num_kv_heads, l.head_size}));
    }
    c.Set("num_params_16bit", num(attention), pos);
  }
  out.Set("compute", std::move(c), pos);
  return out;
}

}  // namespace

const std::vector<std::string>& HfSupportedArchitectures() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> v;
    for (const Arch& a : Archs()) v.push_back(a.name);
    return v;
  }();
  return kNames;
}

Result<ConfigNode> HfConfigToModelTree(const std::string& json_text, const std::string& file,
                                       const HfConfigOptions& options) {
  if (json_text.size() > kMaxHfConfigBytes) {
    return Status::Error("bad_value", file + ": " + std::to_string(json_text.size()) +
                                          " bytes; a config.json is at most " +
                                          std::to_string(kMaxHfConfigBytes));
  }
  std::string where;
  Json root = ParseJsonNoThrow<Json>(json_text, &where);
  if (root.is_discarded()) return Status::Error("bad_json", file + ": not valid JSON: " + where);
  if (!root.is_object()) return Status::Error("wrong_type", file + ": expected a JSON object");
  Errors errors{file, std::nullopt};
  const Cfg top(&root, "", &errors);

  const Json* archs = top.Find("architectures");
  std::string names;
  for (const auto& n : HfSupportedArchitectures()) names += (names.empty() ? "" : ", ") + n;
  if (!archs || !archs->is_array() || archs->empty() || !(*archs)[0].is_string()) {
    return Status::Error(archs ? "wrong_type" : "missing_key",
                         file + ": architectures: expected a list naming the model class (" +
                             names + ")");
  }
  const std::string arch_name = (*archs)[0].get<std::string>();
  const Arch* arch = nullptr;
  for (const Arch& a : Archs()) {
    if (arch_name == a.name) arch = &a;
  }
  if (!arch) {
    return Status::Error("unknown_architecture", file + ": architectures: \"" + arch_name +
                                                     "\" is not supported; supported: " + names);
  }
  const Cfg text = arch->text_config ? top.Sub("text_config") : top;
  if (arch->text_config && !text.present()) {
    return Status::Error("missing_key", file + ": text_config: " + arch_name +
                                            " keeps the decoder's keys in text_config");
  }

  Model m;
  m.dtype = TorchDtype(top, text);
  ApplyQuantization(top, m);
  switch (arch->family) {
    case Family::kDense: ReadDense(text, m, arch_name); break;
    case Family::kMixtral: ReadMixtral(text, m); break;
    case Family::kLlama4: ReadLlama4(text, m); break;
    case Family::kGemma3: ReadGemma3(text, m); break;
    case Family::kGptOss: ReadGptOss(text, m); break;
    case Family::kDeepseek: ReadDeepseek(text, m); break;
    case Family::kQwenNext: ReadQwenNext(text, top, m); break;
  }
  if (errors.first) return *errors.first;
  if (m.params >= 9e18 || m.active >= 9e18) {
    return Status::Error("bad_value", file + ": the parameter count overflows int64");
  }
  if (options.mtp_draft && m.mtp_layers.empty()) {
    return Status::Error("bad_value", file + ": " + arch_name +
                                          " names no MTP layers (num_nextn_predict_layers / "
                                          "mtp_num_hidden_layers), so there is no drafter");
  }

  const SourcePos pos{file, 0};
  const std::string name = options.default_name + m.name_note;
  ConfigNode out = ModelNode(m, name, pos, true);
  if (options.mtp_draft) out.Set("draft", ModelNode(m, name + " MTP", pos, false), pos);
  return out;
}

}  // namespace kvsim
