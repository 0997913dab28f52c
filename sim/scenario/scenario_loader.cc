#include "sim/scenario/scenario_loader.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "core/vllm_semantics.h"
#include "sim/embedded_data.h"
#include "sim/scenario/cluster_sections.h"
#include "sim/scenario/hf_config.h"
#include "sim/scenario/offload_section.h"
#include "sim/scenario/sim_sections.h"

namespace kvsim {
namespace {

namespace fs = std::filesystem;

constexpr const char* kBuiltIn = "<built-in>/";
constexpr int kMaxIncludeDepth = 16;
// Llama-4-Scout's 10M-token config is the longest in use; 2^40 bounds the rotary cache's size
// arithmetic (positions × dims × 2 bytes) well inside int64.
constexpr int64_t kMaxPositions = int64_t{1} << 40;

// ---------------------------------------------------------------------------------------
// Files: on disk first, then the embedded copies of scenarios/.

struct LoadedText {
  std::string text;
  std::string name;  // what error messages call the file
};

std::optional<LoadedText> ReadFile(const std::string& path) {
  std::ifstream f(path);
  if (f) {
    std::stringstream ss;
    ss << f.rdbuf();
    return LoadedText{ss.str(), path};
  }
  std::string rel = path;
  if (rel.rfind(kBuiltIn, 0) == 0) rel = rel.substr(std::string(kBuiltIn).size());
  for (const std::string& candidate : {rel, "scenarios/" + rel}) {
    if (const std::string* s = FindEmbeddedFile(fs::path(candidate).lexically_normal().string())) {
      return LoadedText{*s, kBuiltIn + fs::path(candidate).lexically_normal().string()};
    }
  }
  return std::nullopt;
}

Result<ConfigNode> LoadWithIncludes(const std::string& path, int depth,
                                    std::vector<std::string>& stack) {
  if (depth > kMaxIncludeDepth) {
    return Status::Error("include_cycle", path + ": includes nested deeper than " +
                                              std::to_string(kMaxIncludeDepth) + " levels");
  }
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    return Status::Error("missing_file", path + ": is a directory, not a scenario file");
  }
  auto text = ReadFile(path);
  if (!text) return Status::Error("missing_file", path + ": no such scenario file");
  if (std::find(stack.begin(), stack.end(), text->name) != stack.end()) {
    // The include item that closes the cycle adds its file and line (below).
    std::string chain;
    for (const auto& f : stack) chain += f + " → ";
    return Status::Error("include_cycle", "include cycle: " + chain + text->name);
  }
  auto parsed = ParseYaml(text->text, text->name);
  if (!parsed.ok()) return parsed.status();
  ConfigNode root = std::move(parsed.value());
  if (root.is_null()) {
    root.kind = ConfigNode::Kind::kMap;
    root.pos = {text->name, 1};
  }
  if (!root.is_map()) {
    return Status::Error("wrong_type", text->name + ":" + std::to_string(root.pos.line) +
                                           ": a scenario must be a map of keys");
  }
  const ConfigNode* inc = root.Find("include");
  if (!inc) return root;
  std::vector<const ConfigNode*> items;
  if (inc->is_scalar()) {
    items.push_back(inc);
  } else if (inc->is_seq()) {
    for (const auto& n : inc->seq) items.push_back(&n);
  } else {
    return Status::Error("wrong_type", inc->pos.ToString() +
                                           ": include: expected a file name or a list of them");
  }
  stack.push_back(text->name);
  ConfigNode merged;
  merged.kind = ConfigNode::Kind::kMap;
  merged.pos = root.pos;
  const fs::path dir = fs::path(text->name).parent_path();
  for (const ConfigNode* item : items) {
    if (!item->is_scalar()) {
      return Status::Error("wrong_type", item->pos.ToString() + ": include: expected a file name");
    }
    const std::string rel = (dir / item->scalar).lexically_normal().string();
    auto child = LoadWithIncludes(rel, depth + 1, stack);
    if (!child.ok()) {
      if (child.status().code() == "missing_file") {
        return Status::Error("missing_file", item->pos.ToString() + ": include: cannot find " +
                                                 item->scalar + " (looked for " + rel + ")");
      }
      const std::string& msg = child.status().message();
      if (child.status().code() == "include_cycle" && msg.rfind("include cycle: ", 0) == 0) {
        return Status::Error("include_cycle", item->pos.ToString() + ": include: " + msg);
      }
      return child.status();
    }
    merged.MergeFrom(child.value());
  }
  stack.pop_back();
  root.Erase("include");
  merged.MergeFrom(root);
  return merged;
}

// ---------------------------------------------------------------------------------------
// Model section.

const std::vector<std::string> kLayerTypes = {
    "full_attention", "full", "sliding_window", "swa", "chunked_local", "mla",
    "mamba",          "gdn",  "mamba2",         "mamba1"};

DType ParseDTypeKey(ConfigReader& r, const std::string& key, const std::string& def,
                    const std::string& help) {
  static const std::vector<std::string> kNames = {
      "auto", "fp32", "float32", "fp16", "float16", "bf16", "bfloat16", "fp8", "fp8_e4m3",
      "fp8_e5m2", "fp8_per_token_head", "fp8_ds_mla", "int8", "nvfp4"};
  return *ParseDType(r.Choice(key, def, kNames, help));
}

LayerSpec ParseLayer(ConfigReader& r, int64_t* count) {
  LayerSpec l;
  const std::string type = r.Choice("type", "full_attention", kLayerTypes,
                                    "layer kind; gdn/mamba2/mamba1 derive state shapes per TP "
                                    "rank, mamba takes explicit per-rank shapes");
  *count = r.Int("count", 1, "consecutive layers of this kind", 1, 100000);
  const bool all = r.describing();
  const bool attention = type == "full_attention" || type == "full" || type == "sliding_window" ||
                         type == "swa" || type == "chunked_local" || type == "mla";
  if (type == "full_attention" || type == "full") l.kind = LayerKind::kFullAttention;
  if (type == "sliding_window" || type == "swa") l.kind = LayerKind::kSlidingWindow;
  if (type == "chunked_local") l.kind = LayerKind::kChunkedLocal;
  if (type == "mla") l.kind = LayerKind::kMla;
  if (!attention) l.kind = LayerKind::kMamba;

  if (attention || all) {
    if (type != "mla" || all) {
      l.num_kv_heads = r.Int("num_kv_heads", 0, "KV heads over all TP ranks", 0, 1 << 20);
    } else if (r.Has("num_kv_heads")) {
      // MLA caches one latent vector per token, which HF configs and vLLM describe as one
      // KV head; saying so is fine, any other count is a mistake.
      if (r.Int("num_kv_heads", 1, "", 0, 1 << 20) != 1) {
        r.Error("num_kv_heads", "bad_value",
                "an MLA layer caches one latent vector per token: num_kv_heads is 1 (or left "
                "out)");
      }
    }
    l.head_size = r.Int("head_size", 0, "head dim D (MLA: kv_lora_rank + rope dim)", 0, 1 << 20);
    if (type != "mla" || all) {
      l.head_size_v = r.Int("head_size_v", -1, "V head dim Dv; -1 = head_size", -1, 1 << 20);
    }
    l.dtype = ParseDTypeKey(r, "dtype", "auto", "KV dtype of this layer; auto = cache.kv_dtype");
    l.indexes_kv_by_block_stride =
        r.Bool("indexes_kv_by_block_stride", true,
               "the layer's backend addresses pages by a block stride, so its page may be padded");
    if (attention && type != "mla" && l.num_kv_heads < 1) {
      r.Error("num_kv_heads", "missing_key", "an attention layer needs num_kv_heads >= 1");
    }
    if (attention && l.head_size < 1) {
      r.Error("head_size", "missing_key", "an attention layer needs head_size >= 1");
    }
  }
  if (type == "sliding_window" || type == "swa" || all) {
    l.sliding_window = r.Int("sliding_window", 0, "window W in tokens (sliding_window layers)", 0);
    if (!all && l.sliding_window < 1) {
      r.Error("sliding_window", "missing_key", "a sliding_window layer needs sliding_window >= 1");
    }
  }
  if (type == "chunked_local" || all) {
    l.attention_chunk_size =
        r.Int("attention_chunk_size", 0, "chunk C in tokens (chunked_local layers)", 0);
    if (!all && l.attention_chunk_size < 1) {
      r.Error("attention_chunk_size", "missing_key",
              "a chunked_local layer needs attention_chunk_size >= 1");
    }
  }
  if (!attention || all) {
    MambaMixerSpec& m = l.mamba;
    m.mixer = type == "gdn"      ? MambaMixer::kGatedDeltaNet
              : type == "mamba2" ? MambaMixer::kMamba2
              : type == "mamba1" ? MambaMixer::kMamba1
                                 : MambaMixer::kExplicit;
    m.supports_all_mode = m.mixer == MambaMixer::kMamba2 || m.mixer == MambaMixer::kMamba1;
    if (type == "mamba" || all) {
      const ConfigNode* shapes =
          r.Raw("shapes", "list of int lists", "mamba: state shapes per TP rank, conv first");
      const auto dtypes = r.StringList("dtypes", "mamba: one dtype per state");
      m.supports_all_mode = r.Bool("supports_all_mode", false,
                                   "mamba: the model implements SupportsMambaPrefixCaching");
      if (!all) {
        if (!shapes || !shapes->is_seq() || shapes->seq.empty()) {
          r.Error("shapes", "missing_key", "a mamba layer needs shapes: [[...], ...]");
        } else if (dtypes.size() != shapes->seq.size()) {
          r.Error("dtypes", "bad_value",
                  "needs one dtype per shape (" + std::to_string(shapes->seq.size()) + ")");
        } else {
          for (size_t i = 0; i < shapes->seq.size(); ++i) {
            MambaState st;
            st.name = i == 0 ? "conv" : (i == 1 ? "ssm" : "state" + std::to_string(i));
            const ConfigNode& sh = shapes->seq[i];
            bool ok = sh.is_seq() && !sh.seq.empty();
            for (const auto& d : sh.seq) {
              char* end = nullptr;
              const long long v = d.is_scalar() ? std::strtoll(d.scalar.c_str(), &end, 10) : 0;
              ok = ok && d.is_scalar() && end && *end == '\0' && v > 0;
              st.shape.push_back(v);
            }
            const auto dt = ParseDType(dtypes[i]);
            if (!ok) {
              r.Error("shapes", "wrong_type", "shape " + std::to_string(i) +
                                                  " must be a list of positive integers");
            } else if (!dt || *dt == DType::kAuto || ElementBytes(*dt) == 0) {
              r.Error("dtypes", "bad_value", "\"" + dtypes[i] + "\" is not a state dtype (" +
                                                 kDTypeNamesHelp + ")");
            } else {
              st.dtype = *dt;
              m.explicit_states.push_back(st);
            }
          }
        }
      }
    }
    if (type != "mamba" || all) {
      m.conv_kernel = r.Int("conv_kernel", 4, "gdn/mamba1/mamba2: conv kernel width K", 1, 64);
      m.conv_dtype = ParseDTypeKey(r, "conv_dtype", "auto",
                                   "gdn/mamba1/mamba2: conv state dtype; auto = model dtype");
      m.ssm_dtype = ParseDTypeKey(r, "ssm_dtype", "auto",
                                  "gdn/mamba1/mamba2: SSM state dtype; auto = conv dtype");
    }
    if (type == "gdn" || all) {
      m.num_k_heads = r.Int("num_k_heads", 0, "gdn: linear key heads", 0);
      m.num_v_heads = r.Int("num_v_heads", 0, "gdn: linear value heads", 0);
      m.head_k_dim = r.Int("head_k_dim", 0, "gdn: key head dim", 0);
      m.head_v_dim = r.Int("head_v_dim", 0, "gdn: value head dim", 0);
      if (!all && (m.num_k_heads < 1 || m.num_v_heads < 1 || m.head_k_dim < 1 ||
                   m.head_v_dim < 1)) {
        r.Error("", "missing_key",
                "a gdn layer needs num_k_heads, num_v_heads, head_k_dim and head_v_dim >= 1");
      }
    }
    if (type == "mamba2" || type == "mamba1" || all) {
      m.intermediate_size = r.Int("intermediate_size", 0, "mamba1/mamba2: inner size I", 0);
      m.state_size = r.Int("state_size", 0, "mamba1/mamba2: SSM state size N", 0);
      if (!all && (m.intermediate_size < 1 || m.state_size < 1)) {
        r.Error("", "missing_key", "a " + type + " layer needs intermediate_size and state_size");
      }
    }
    if (type == "mamba2" || all) {
      m.n_groups = r.Int("n_groups", 1, "mamba2: groups G", 1);
      m.num_heads = r.Int("num_heads", 0, "mamba2: heads", 0);
      m.head_dim = r.Int("head_dim", 0, "mamba2: head dim", 0);
      m.chunk_size = r.Int("chunk_size", 0, "mamba2: chunk size ('all' mode alignment)", 0);
      if (!all && (m.num_heads < 1 || m.head_dim < 1)) {
        r.Error("", "missing_key", "a mamba2 layer needs num_heads and head_dim");
      }
    }
  }
  r.Finish();
  return l;
}

ModelSpec ParseModelBody(ConfigReader& r, bool is_draft) {
  ModelSpec m;
  m.name = r.String("name", is_draft ? "draft" : "model", "model name shown in reports");
  m.dtype = ParseDTypeKey(r, "dtype", "bf16", "model (weights and activations) dtype");
  if (m.dtype == DType::kAuto) r.Error("dtype", "bad_value", "the model dtype cannot be auto");
  m.max_model_len = r.Int("max_model_len", 0, "context length (max_model_len)", 0);
  const int64_t repeat = r.Int("repeat", 1, "the layers list is repeated this many times", 1, 100000);
  std::vector<ConfigReader> layer_readers = r.MapList(
      "layers", "layer kinds in model order: {type, count, num_kv_heads, head_size, ...}");
  std::vector<std::pair<LayerSpec, int64_t>> runs;
  if (r.describing()) {
    ConfigReader doc(nullptr, r.path() + ".layers[]", r.errors(), r.docs());
    int64_t c = 0;
    ParseLayer(doc, &c);
  }
  for (auto& lr : layer_readers) {
    int64_t count = 1;
    LayerSpec l = ParseLayer(lr, &count);
    runs.emplace_back(l, count);
  }
  for (int64_t k = 0; k < repeat; ++k) {
    for (const auto& [l, count] : runs) {
      for (int64_t c = 0; c < count; ++c) m.layers.push_back(l);
    }
  }
  ConfigReader c = r.Map("compute", "numbers for the step-time model");
  m.compute.hidden_size = c.Int("hidden_size", 0, "hidden size", 0);
  m.compute.num_attention_heads = c.Int("num_attention_heads", 0, "query heads", 0);
  m.compute.num_params = c.Int("num_params", 0, "total parameters", 0);
  m.compute.num_active_params =
      c.Int("num_active_params", 0, "parameters used per token (MoE: active)", 0);
  m.compute.vocab_size = c.Int("vocab_size", 0, "vocabulary size", 0);
  m.compute.intermediate_size =
      c.Int("intermediate_size", 0, "dense MLP width (0: derived from num_active_params)", 0);
  m.compute.num_experts = c.Int("num_experts", 0, "routed experts per MoE layer (0: dense)", 0);
  m.compute.num_experts_per_token =
      c.Int("num_experts_per_token", 0, "experts each token is routed to (top-k)", 0);
  m.compute.num_params_16bit =
      c.Int("num_params_16bit", 0,
            "parameters a quantized (fp8) checkpoint keeps in 16 bits besides the embedding and "
            "LM head (its quantization ignore list)",
            0);
  m.compute.attention_16bit =
      c.Bool("attention_16bit", false,
             "a quantized checkpoint keeps the attention projections (QKV, O) in 16 bits (its "
             "ignore list names self_attn)");
  m.compute.sampling_sorts =
      c.Bool("sampling_sorts", true,
             "vLLM samples through top-k/top-p (a sort of the logits): the model's "
             "generation_config.json sets top_k or top_p");
  m.compute.max_position_embeddings =
      c.Int("max_position_embeddings", 0,
            "positions vLLM's rotary embedding caches cos/sin for (config.json's "
            "max_position_embeddings; 0: model.max_model_len)",
            0, kMaxPositions);
  m.compute.rotary_dim =
      c.Int("rotary_dim", 0, "rotated dimensions per head (0: the attention head size)", 0, 65536);
  c.Finish();
  return m;
}

// `hf_config: F` (with `mtp: true|false`) as the model tree of a preset. F is looked up
// beside the file that names it, then as given (the working directory, then the embedded
// scenarios/), so a scenario and its config travel together.
Result<ConfigNode> LoadHfModelTree(const ConfigNode& section, const std::string& path) {
  const ConfigNode& hf = *section.Find("hf_config");
  if (!hf.is_scalar() || hf.scalar.empty()) {
    return Status::Error("wrong_type",
                         hf.pos.ToString() + ": " + path + ".hf_config: expected a file name");
  }
  bool mtp = false;
  if (const ConfigNode* m = section.Find("mtp")) {
    if (!m->is_scalar() || (m->scalar != "true" && m->scalar != "false")) {
      return Status::Error("wrong_type",
                           m->pos.ToString() + ": " + path + ".mtp: expected true or false");
    }
    mtp = m->scalar == "true";
  }
  // A file on disk must be a regular file of bounded size (not a FIFO or /dev/zero, which
  // would hang or eat memory); otherwise the embedded copies of scenarios/ are tried.
  auto read = [&](const std::string& p) -> Result<std::optional<LoadedText>> {
    std::error_code ec;
    if (fs::exists(p, ec)) {
      if (!fs::is_regular_file(p, ec)) {
        return Status::Error("bad_value", hf.pos.ToString() + ": " + path + ".hf_config: " + p +
                                              " is not a regular file");
      }
      if (fs::file_size(p, ec) > kMaxHfConfigBytes) {
        return Status::Error("bad_value", hf.pos.ToString() + ": " + path + ".hf_config: " + p +
                                              " is larger than a config.json can be (" +
                                              std::to_string(kMaxHfConfigBytes) + " bytes)");
      }
    }
    return ReadFile(p);
  };
  std::string own_file = hf.pos.file;
  const bool embedded = own_file.rfind(kBuiltIn, 0) == 0;
  if (embedded) own_file = own_file.substr(std::string(kBuiltIn).size());
  std::optional<LoadedText> text;
  if (hf.pos.file.rfind("--set", 0) != 0 && fs::path(hf.scalar).is_relative()) {
    const std::string beside =
        (fs::path(own_file).parent_path() / hf.scalar).lexically_normal().string();
    auto r = embedded ? Result<std::optional<LoadedText>>(ReadFile(kBuiltIn + beside))
                      : read(beside);
    if (!r.ok()) return r.status();
    text = std::move(r.value());
  }
  if (!text) {
    auto r = read(hf.scalar);
    if (!r.ok()) return r.status();
    text = std::move(r.value());
  }
  if (!text) {
    return Status::Error("missing_file", hf.pos.ToString() + ": " + path +
                                             ".hf_config: cannot read " + hf.scalar);
  }
  HfConfigOptions o;
  o.mtp_draft = mtp;
  const fs::path dir = fs::path(text->name).parent_path().filename();
  o.default_name = dir.empty() ? "hf model" : dir.string();
  return HfConfigToModelTree(text->text, text->name, o);
}

struct ParsedModel {
  ModelSpec model;
  std::optional<ModelSpec> draft;
  std::string preset;  // empty when the layers were given inline
  // The context the model was built for: its preset's max_model_len, or for inline layers
  // the section's own (0 = unknown); model and cache max_model_len may not exceed it unless
  // allow_long_context.
  int64_t native_max_model_len = 0;
  bool allow_long_context = false;
};

// model.allow_long_max_model_len, vLLM's VLLM_ALLOW_LONG_MAX_MODEL_LEN.
bool ReadAllowLongContext(ConfigReader& r) {
  return r.Bool("allow_long_max_model_len", false,
                "accept a max_model_len (model or cache) above the preset's native context, as "
                "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 does in vLLM");
}

std::string LongContextMessage(int64_t asked, const std::string& model, int64_t native,
                               bool preset) {
  return fmt::format(
      "{} is above {}'s native context of {} tokens ({}); vLLM "
      "refuses a longer max_model_len unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 is set (the model "
      "was not trained that far): lower it, or set model.allow_long_max_model_len: true to "
      "model that override",
      asked, model, native, preset ? "its preset's max_model_len" : "model.max_model_len");
}

// Resolves `preset` (merging the preset underneath the section's own keys) and parses.
std::optional<ParsedModel> ParseModelSection(ConfigReader& parent, const std::string& key,
                                             bool is_draft, const std::string& help) {
  const ConfigNode* node = parent.Raw(key, "map", help);
  if (parent.describing()) {
    ConfigReader doc(nullptr, parent.path().empty() ? key : parent.path() + "." + key,
                     parent.errors(), parent.docs());
    doc.String("preset", "", "model preset name (scenarios/models/<preset>.yaml)");
    doc.String("hf_config", "",
               "a Hugging Face config.json to build the model from (relative to this file); "
               "keys beside it override what it gives");
    doc.Bool("mtp", false, "with hf_config: the config's MTP layers become model.draft");
    if (!is_draft) ReadAllowLongContext(doc);
    ParsedModel out;
    out.model = ParseModelBody(doc, is_draft);
    if (!is_draft) ParseModelSection(doc, "draft", true, "draft model, same keys as model");
    return out;
  }
  if (!node) return std::nullopt;
  ParsedModel out;
  ConfigNode merged;
  int64_t native_len = 0;  // the preset's max_model_len (0: no preset, or it records none)
  if (!node->is_map()) {
    parent.Error(key, "wrong_type", "expected a map with `preset` or `layers`");
    return std::nullopt;
  }
  merged = *node;
  if (node->Find("hf_config") && node->Find("preset")) {
    parent.Error(key, "bad_value", "give `preset` or `hf_config`, not both");
    return std::nullopt;
  }
  if (node->Find("hf_config")) {
    auto base = LoadHfModelTree(*node, parent.path().empty() ? key : parent.path() + "." + key);
    if (!base.ok()) {
      parent.errors()->list.push_back({base.status().code(), base.status().message()});
      return std::nullopt;
    }
    ConfigNode own = *node;
    own.Erase("hf_config");
    own.Erase("mtp");
    merged = std::move(base.value());
    merged.MergeFrom(own);
  } else if (const ConfigNode* preset = node->Find("preset")) {
    if (!preset->is_scalar()) {
      parent.Error(key, "wrong_type", "preset: expected a preset name");
      return std::nullopt;
    }
    const std::string rel = "scenarios/models/" + preset->scalar + ".yaml";
    const std::string* text = FindEmbeddedFile(rel);
    if (!text) {
      std::string names;
      for (const auto& n : ModelPresetNames()) names += (names.empty() ? "" : ", ") + n;
      const std::string near = ClosestMatch(preset->scalar, ModelPresetNames());
      parent.errors()->list.push_back(
          {"unknown_preset", preset->pos.ToString() + ": " +
                                 (parent.path().empty() ? key : parent.path() + "." + key) +
                                 ".preset: unknown model preset \"" + preset->scalar + "\"" +
                                 (near.empty() ? "" : " (did you mean " + near + "?)") +
                                 "; known: " + names});
      return std::nullopt;
    }
    auto base = ParseYaml(*text, std::string(kBuiltIn) + rel);
    if (!base.ok()) {
      parent.errors()->list.push_back({base.status().code(), base.status().message()});
      return std::nullopt;
    }
    out.preset = preset->scalar;
    if (base.value().Find("hf_config")) {
      // A preset written as its checkpoint's config.json plus the keys it overrides.
      auto hf = ExpandHfPreset(base.value(), "scenarios/models/" + preset->scalar);
      if (!hf.ok()) {
        parent.errors()->list.push_back({hf.status().code(), hf.status().message()});
        return std::nullopt;
      }
      base.value() = std::move(hf.value());
    }
    if (const ConfigNode* len = base.value().Find("max_model_len"); len && len->is_scalar()) {
      native_len = std::strtoll(len->scalar.c_str(), nullptr, 10);
    }
    ConfigNode own = *node;
    own.Erase("preset");
    // Inline layers replace the preset's layers (and its repeat) as a whole.
    if (own.Find("layers")) base.value().Erase("repeat");
    merged = std::move(base.value());
    merged.MergeFrom(own);
  }
  ConfigReader r(&merged, parent.path().empty() ? key : parent.path() + "." + key,
                 parent.errors());
  if (!is_draft) {
    if (auto d = ParseModelSection(r, "draft", true, "draft model, same keys as model")) {
      out.draft = std::move(d->model);
    }
  }
  out.model = ParseModelBody(r, is_draft);
  if (!is_draft) {
    out.allow_long_context = ReadAllowLongContext(r);
    out.native_max_model_len = native_len > 0 ? native_len : out.model.max_model_len;
    // vLLM derives the context from the model's config and refuses a longer one
    // (_get_and_verify_max_len) unless VLLM_ALLOW_LONG_MAX_MODEL_LEN is set.
    if (native_len > 0 && out.model.max_model_len > native_len && !out.allow_long_context) {
      r.Error("max_model_len", "bad_value",
              LongContextMessage(out.model.max_model_len, out.model.name, native_len, true));
    }
  }
  if (out.model.layers.empty() && r.errors()->empty()) {
    r.Error("layers", "missing_key", "the model has no layers: give `preset` or `layers`");
  }
  r.Finish();
  return out;
}

KvOrder ParseLayout(const std::string& s) {
  if (s == "NHD" || s == "LBNHC") return KvOrder::kLBNHC;
  if (s == "HND" || s == "LBHNC") return KvOrder::kLBHNC;
  if (s == "LHBNC") return KvOrder::kLHBNC;
  if (s == "BLHNC") return KvOrder::kBLHNC;
  if (s == "BLNHC") return KvOrder::kBLNHC;
  return KvOrder::kBHLNC;
}

void ParseCacheSections(ConfigReader& root, Scenario& sc) {
  PlannerConfig& c = sc.cache;
  ConfigReader par = root.Map("parallel", "parallelism");
  c.tp = par.Int("tp", 1, "tensor-parallel size", 1, 1024);
  c.dp = par.Int("dp", 1,
                 "data-parallel ranks: one engine each behind vLLM's DP load balancer "
                 "(an MoE model's step in lock-step)",
                 1, 1024);
  c.ep = par.Int("ep", 1, "expert-parallel ranks of the MoE layers (1 = TP-sharded experts)", 1,
                 1024);
  par.Finish();

  ConfigReader r = root.Map("cache", "KV cache configuration (vLLM CacheConfig)");
  c.block_size = r.Int("block_size", 0,
                       "tokens per block; 0 = the backend default (16; 64 for MLA); hybrid "
                       "models raise it to cover the Mamba page",
                       0, 1 << 24);
  c.attn_pack_size =
      r.Int("attn_pack_size", 1, "attention layers sharing one page (PR #35703)", 1, 64);
  c.kv_dtype = ParseDTypeKey(r, "kv_dtype", "auto", "KV cache dtype; auto = model dtype");
  c.layout = ParseLayout(r.Choice(
      "layout", "NHD", {"NHD", "HND", "LBNHC", "LBHNC", "LHBNC", "BLHNC", "BLNHC", "BHLNC"},
      "physical layout: NHD/HND per layer, B-first orders = one cross-layer slab"));
  const std::string split =
      r.Choice("kv_split", "packed_content", {"packed_content", "kv_in_block", "kv_first_tensor"},
               "where V sits: packed after K in the content dim [latest], a V block after the K "
               "block [classic], or a separate V half of the tensor [legacy]");
  c.kv_split = split == "packed_content" ? KvSplit::kPackedInContent
               : split == "kv_in_block"  ? KvSplit::kKvInBlock
                                         : KvSplit::kKvFirstTensor;
  c.kv_memory_bytes =
      r.Bytes("kv_memory_bytes", 0, "memory available for KV per rank (vLLM's number); 40GiB ok");
  c.gpu_memory_utilization = r.Double(
      "gpu_memory_utilization", 0,
      "share of the GPU's memory vLLM may use; derives kv_memory_bytes as vLLM's worker does "
      "(less weights, profile-run activations, non-torch memory); 0 = give kv_memory_bytes or "
      "num_gpu_blocks",
      0, 1);
  c.num_gpu_blocks = r.Int("num_gpu_blocks", 0,
                           "num_gpu_blocks_override (includes the null block); wins over "
                           "kv_memory_bytes",
                           0);
  const std::string mode = r.Choice("mamba_cache_mode", "align", {"none", "align", "all"},
                                    "Mamba prefix-cache mode");
  c.mamba_cache_mode = mode == "none"    ? MambaCacheMode::kNone
                       : mode == "align" ? MambaCacheMode::kAlign
                                         : MambaCacheMode::kAll;
  c.mamba_block_size = r.Int("mamba_block_size", 0, "'all' mode Mamba chunk; 0 = model's", 0);
  c.num_speculative_tokens =
      r.Int("num_speculative_tokens", 0, "speculative tokens per step (MTP/EAGLE/DFlash)", 0, 64);
  c.enable_prefix_caching = r.Bool("enable_prefix_caching", true, "prefix caching on");
  const std::string backend = r.Choice("attention_backend", "flash_attn",
                                       {"flash_attn", "flashinfer", "triton"},
                                       "attention backend (kernel block sizes)");
  c.backend = backend == "flash_attn"   ? AttentionBackend::kFlashAttn
              : backend == "flashinfer" ? AttentionBackend::kFlashInfer
                                        : AttentionBackend::kTriton;
  c.hybrid_kv_cache_manager = r.Bool("hybrid_kv_cache_manager", true,
                                     "false = --disable-hybrid-kv-cache-manager");
  c.semantics = r.Choice("vllm_semantics", "latest", {"classic", "latest"},
                         "which vLLM snapshot to mirror where they differ") == "classic"
                    ? VllmSemantics::kClassic
                    : VllmSemantics::kLatest;
  c.prefix_cache_retention_interval = r.IntOrNull(
      "prefix_cache_retention_interval", -2, -1, "0 (latest), dense (classic)",
      "[latest] sparse SWA/Mamba checkpoints: 0 = replay boundary and shared-prefix "
      "junctions only, k = also one per k-token segment, null = dense (every block)",
      0);
  if (c.semantics == VllmSemantics::kClassic && c.prefix_cache_retention_interval >= 0)
    r.Error("prefix_cache_retention_interval", "bad_value",
            "only for vllm_semantics latest (vLLM 2026-08); classic is always dense: drop "
            "it or set it to null");
  c.max_model_len = r.Int("max_model_len", 0, "context length; 0 = the model's", 0);
  ParseOffloadSection(r, sc.offload);
  r.Finish();

  ConfigReader s = root.Map("scheduler", "scheduler budgets (vLLM SchedulerConfig)");
  sc.scheduler.max_num_batched_tokens =
      s.Int("max_num_batched_tokens", 8192, "token budget per step", 1);
  sc.scheduler.max_num_seqs = s.Int("max_num_seqs", 1024, "running requests at most", 1);
  ParseSchedulerExtras(s, sc);
  s.Finish();
  c.max_num_batched_tokens = sc.scheduler.max_num_batched_tokens;
}

// cache.gpu_memory_utilization without kv_memory_bytes or num_gpu_blocks: the KV memory as
// vLLM's worker derives it (util × memory − weights − profile-run peak − non-torch memory),
// or an error naming what filled the GPU.
void DeriveKvMemory(ConfigReader& root, Scenario& sc) {
  if (sc.cache.gpu_memory_utilization <= 0 || sc.cache.kv_memory_bytes != 0 ||
      sc.cache.num_gpu_blocks != 0)
    return;
  MemoryBudgetInputs in;
  in.total_bytes = sc.sim.hardware.hbm_capacity_bytes;
  in.gpu_memory_utilization = sc.cache.gpu_memory_utilization;
  in.tp = sc.cache.tp;
  in.ep = sc.cache.ep;
  in.max_num_batched_tokens = sc.scheduler.max_num_batched_tokens;
  in.max_num_seqs = sc.scheduler.max_num_seqs;
  in.non_torch_bytes = sc.sim.hardware.non_torch_memory_bytes;
  const MemoryBudget b = VllmKvMemoryBudget(sc.model, in);
  if (b.kv > 0) {
    sc.cache.kv_memory_bytes = b.kv;
    sc.memory_budget = b;
    return;
  }
  ConfigReader cache = root.Map("cache", "");
  cache.Error("gpu_memory_utilization", "no_kv_memory",
              fmt::format("{:.2f} of the GPU's {:.1f} GiB leaves nothing for the KV cache: "
                          "weights {:.1f} GiB per rank, rotary cache {:.2f} GiB, activations "
                          "{:.2f} GiB, non-torch {:.2f} GiB",
                          sc.cache.gpu_memory_utilization,
                          static_cast<double>(in.total_bytes) / (1 << 30),
                          static_cast<double>(b.weights) / (1 << 30),
                          static_cast<double>(b.rope_cache) / (1 << 30),
                          static_cast<double>(b.activations) / (1 << 30),
                          static_cast<double>(b.non_torch) / (1 << 30)));
}

Result<Scenario> ParseScenarioImpl(const ConfigNode* tree, const std::string& source,
                                   std::vector<KeyDoc>* docs, ConfigErrors* errors_out = nullptr) {
  ConfigErrors errors;
  Scenario sc;
  sc.source = source;
  ConfigReader root(tree, "", &errors, docs);
  sc.name = root.String("name", "", "scenario name");
  sc.description = root.String("description", "", "one line on what the scenario studies");
  sc.seed = static_cast<uint64_t>(root.Int("seed", 0, "root of all randomness", 0));
  root.Raw("include", "list of string", "files merged underneath this one");

  auto model = ParseModelSection(root, "model", false, "the served model");
  if (!docs) {
    if (!model && errors.empty()) {
      root.Error("model", "missing_key", "a scenario needs a model (model.preset or model.layers)");
    }
    if (model) {
      sc.model = std::move(model->model);
      sc.draft = std::move(model->draft);
      sc.model_preset = model->preset;
    }
  }
  ParseCacheSections(root, sc);
  if (model && !docs && sc.cache.max_model_len > model->native_max_model_len &&
      model->native_max_model_len > 0 && !model->allow_long_context) {
    ConfigReader cache = root.Map("cache", "");
    cache.Error("max_model_len", "bad_value",
                LongContextMessage(sc.cache.max_model_len, sc.model.name,
                                   model->native_max_model_len, !model->preset.empty()));
  }
  ParseClusterSection(root, tree, sc);
  ParseSimSections(root, sc);
  if (!docs) DeriveKvMemory(root, sc);
  sc.sim.workload.max_model_len =
      sc.cache.max_model_len > 0 ? sc.cache.max_model_len : sc.model.max_model_len;
  CheckPromptsFitContext(root, sc);
  if (sc.name.empty()) sc.name = fs::path(source).stem().string();
  root.Finish();
  if (errors_out) *errors_out = errors;
  if (!errors.empty()) return errors.ToStatus();
  if (tree) sc.tree = *tree;
  return sc;
}

}  // namespace

Result<ConfigNode> ExpandHfPreset(const ConfigNode& preset, const std::string& path) {
  auto hf = LoadHfModelTree(preset, path);
  if (!hf.ok()) return hf.status();
  ConfigNode overrides = preset;
  overrides.Erase("hf_config");
  overrides.Erase("mtp");
  hf.value().MergeFrom(overrides);
  return hf;
}

std::vector<std::string> ModelPresetNames() {
  std::vector<std::string> out;
  const std::string prefix = "scenarios/models/";
  for (const auto& f : EmbeddedDataFiles()) {
    std::string p = f.path;
    if (p.rfind(prefix, 0) == 0 && p.size() > 5 && p.substr(p.size() - 5) == ".yaml") {
      out.push_back(p.substr(prefix.size(), p.size() - prefix.size() - 5));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<ModelSpec> LoadModelPreset(const std::string& name) {
  ConfigNode tree;
  tree.kind = ConfigNode::Kind::kMap;
  ConfigNode model;
  model.kind = ConfigNode::Kind::kMap;
  model.Set("preset", ConfigNode::Scalar(name, {"--model", 0}), {"--model", 0});
  tree.Set("model", model, {"--model", 0});
  ConfigErrors errors;
  ConfigReader root(&tree, "", &errors);
  auto m = ParseModelSection(root, "model", false, "");
  if (!errors.empty()) return errors.ToStatus();
  return m->model;
}

namespace {

// The key paths a `sweep:` block sets (its axes and the keys of its zip groups); empty when
// there is none or it is malformed (the sweep's own parser reports that).
std::vector<std::string> SweptKeyPaths(const ConfigNode& tree) {
  std::vector<std::string> keys;
  const ConfigNode* sweep = tree.Find("sweep");
  if (!sweep || !sweep->is_map()) return keys;
  for (const auto& [key, node] : sweep->map) {
    if (key != "zip") {
      keys.push_back(key);
      continue;
    }
    std::vector<const ConfigNode*> groups;
    if (node.is_map()) groups.push_back(&node);
    if (node.is_seq()) {
      for (const ConfigNode& g : node.seq) groups.push_back(&g);
    }
    for (const ConfigNode* g : groups) {
      if (!g->is_map()) continue;
      for (const auto& [zk, zv] : g->map) keys.push_back(zk);
    }
  }
  return keys;
}

// Every sweep point overrides a swept key, so the points never parse the value the file
// gives it underneath (`block_size: -.inf` under a sweep of block_size): check those base
// values here. Only errors at swept keys count; the points report every other key.
Status CheckSweptBaseValues(const ConfigNode& tree, const std::string& source) {
  const std::vector<std::string> swept = SweptKeyPaths(tree);
  if (swept.empty()) return Status::Ok();
  ConfigErrors all;
  (void)ParseScenarioImpl(&tree, source, nullptr, &all);
  ConfigErrors at_swept;
  for (const ConfigError& e : all.list) {
    if (e.code == "missing_key") continue;  // a key the points supply
    for (const std::string& k : swept) {
      if (!e.key.empty() && (e.key == k || e.key.rfind(k + ".", 0) == 0)) {
        ConfigError kept = e;
        kept.message += " (every sweep point overrides this value, but the file's value must "
                        "still be valid)";
        at_swept.list.push_back(std::move(kept));
        break;
      }
    }
  }
  return at_swept.empty() ? Status::Ok() : at_swept.ToStatus();
}

}  // namespace

Result<ConfigNode> LoadScenarioTree(const LoadOptions& options) {
  const std::string path =
      options.path.empty() ? std::string(kBuiltIn) + kDefaultScenarioPath : options.path;
  std::vector<std::string> stack;
  auto tree = LoadWithIncludes(path, 0, stack);
  if (!tree.ok()) return tree.status();
  for (size_t i = 0; i < options.overrides.size(); ++i) {
    const std::string& o = options.overrides[i];
    const std::string label =
        i < options.override_labels.size() ? options.override_labels[i] : std::string();
    // `--set model.preset=X` replaces an inline model instead of merging into it.
    if (o.rfind("model.preset=", 0) == 0) {
      if (ConfigNode* m = tree.value().Find("model")) {
        m->Erase("layers");
        m->Erase("repeat");
        m->Erase("name");
        m->Erase("compute");
      }
    }
    if (Status s = ApplyOverride(tree.value(), o, label); !s.ok()) return s;
  }
  if (Status s = CheckSweptBaseValues(tree.value(), path); !s.ok()) return s;
  return tree;
}

Result<Scenario> ParseScenario(const ConfigNode& tree, const std::string& source) {
  return ParseScenarioImpl(&tree, source, nullptr);
}

Result<Scenario> LoadScenario(const LoadOptions& options) {
  auto tree = LoadScenarioTree(options);
  if (!tree.ok()) return tree.status();
  const std::string source =
      options.path.empty() ? std::string(kBuiltIn) + kDefaultScenarioPath : options.path;
  return ParseScenario(tree.value(), source);
}

std::vector<KeyDoc> DescribeScenarioKeys() {
  std::vector<KeyDoc> docs;
  (void)ParseScenarioImpl(nullptr, "", &docs);
  return docs;
}

}  // namespace kvsim
