// Models from Hugging Face config.json files (sim/scenario/hf_config.h): each shipped preset
// against the model built from its published config (scenarios/models/hf/<preset>/), the
// parameter counts against the counts the model publishers state, and the errors of bad
// configs.
#include <catch2/catch_test_macros.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sim/engine.h"
#include "sim/report/plan_report.h"
#include "sim/scenario/hf_config.h"
#include "sim/scenario/scenario_loader.h"

namespace kvsim {
namespace {

std::string HfPath(const std::string& preset) {
  return "scenarios/models/hf/" + preset + "/config.json";
}

Result<Scenario> Load(std::vector<std::string> overrides, const std::string& path = "") {
  LoadOptions o;
  o.path = path;
  o.overrides = std::move(overrides);
  return LoadScenario(o);
}

Scenario LoadOk(std::vector<std::string> overrides, const std::string& path = "") {
  auto sc = Load(std::move(overrides), path);
  INFO(sc.status().ToString());
  REQUIRE(sc.ok());
  return std::move(sc.value());
}

ModelSpec HfModel(const std::string& preset) {
  return LoadOk({"model={hf_config: " + HfPath(preset) + "}"}).model;
}

// Where a preset and the real config differ on purpose or by mistake (see the README's
// model section); everything else must be equal.
struct Known {
  const char* preset;
  bool max_model_len_differs;  // the preset caps the context below the config's
  bool dtype_differs;          // the config's weights are FP8, the preset prices bf16
  bool experts_omitted;        // the preset leaves E and top-k for the cost model to derive
  bool chunked_as_full;        // the preset models chunked-local layers as full attention
                               // and caches fp8 KV where vLLM caches bf16
};

const std::vector<Known>& Presets() {
  static const std::vector<Known> kPresets = {
      {"llama-3.1-8b", false, false, false, false},
      {"llama-3.1-70b", false, false, false, false},
      {"llama-2-7b", false, false, false, false},
      {"llama-2-70b", false, false, false, false},
      {"codellama-34b", false, false, false, false},
      {"yi-34b", false, false, false, false},
      {"mistral-nemo-12b", true, false, false, false},
      {"qwen2.5-7b", false, false, false, false},
      {"mixtral-8x7b", false, false, false, false},
      {"llama-4-scout-17b-16e-fp8", true, false, false, true},
      {"gemma-3-27b", false, false, false, false},
      {"gpt-oss-120b", false, false, true, false},
      {"deepseek-v3", false, true, true, false},
      {"qwen3-next-80b-a3b", false, false, true, false},
      {"qwen3.5-35b-a3b", false, false, true, false},
      {"qwen3.5-397b-a17b", false, false, true, false},
  };
  return kPresets;
}

TEST_CASE("hf_config: every shipped preset's config builds the preset's layers and numbers") {
  for (const Known& k : Presets()) {
    INFO(k.preset);
    auto preset = LoadModelPreset(k.preset);
    REQUIRE(preset.ok());
    const ModelSpec& p = preset.value();
    const ModelSpec h = HfModel(k.preset);
    // Quantized weights: the config's layers carry the torch dtype (bf16) for their KV.
    std::vector<LayerSpec> h_layers = h.layers;
    const bool quantized = h.dtype != DType::kBFloat16 && h.dtype != DType::kFloat16;
    for (LayerSpec& l : h_layers) {
      CHECK(l.dtype == (quantized ? DType::kBFloat16 : DType::kAuto));
      l.dtype = DType::kAuto;
    }
    if (k.chunked_as_full) {
      REQUIRE(h_layers.size() == p.layers.size());
      int chunked = 0;
      for (size_t i = 0; i < h_layers.size(); ++i) {
        LayerSpec l = h_layers[i];
        chunked += l.kind == LayerKind::kChunkedLocal;
        // llama4.py: every fourth layer (NoPE) attends globally, the rest in 8192-token chunks.
        CHECK((l.kind == LayerKind::kChunkedLocal) == ((i + 1) % 4 != 0));
        if (l.kind == LayerKind::kChunkedLocal) CHECK(l.attention_chunk_size == 8192);
        l.kind = LayerKind::kFullAttention;
        l.attention_chunk_size = 0;
        CHECK(l == p.layers[i]);
      }
      CHECK(chunked == 36);
    } else {
      CHECK(h_layers == p.layers);
    }
    if (!k.max_model_len_differs) CHECK(h.max_model_len == p.max_model_len);
    if (!k.dtype_differs) CHECK(h.dtype == p.dtype);
    CHECK(h.compute.hidden_size == p.compute.hidden_size);
    CHECK(h.compute.num_attention_heads == p.compute.num_attention_heads);
    CHECK(h.compute.vocab_size == p.compute.vocab_size);
    CHECK(h.compute.attention_16bit == p.compute.attention_16bit);
    // A preset that leaves the MLP width out (0) has nothing to compare.
    if (p.compute.intermediate_size != 0) {
      CHECK(h.compute.intermediate_size == p.compute.intermediate_size);
    }
    if (!k.experts_omitted) {
      CHECK(h.compute.num_experts == p.compute.num_experts);
      CHECK(h.compute.num_experts_per_token == p.compute.num_experts_per_token);
    } else {
      CHECK(p.compute.num_experts == 0);
      CHECK(h.compute.num_experts > h.compute.num_experts_per_token);
    }
    // The presets round published counts (8.03 B, 671 B, ...) and some count a vision tower;
    // the config's text model must land within 2 % of them.
    const auto near = [](int64_t a, int64_t b) {
      return std::abs(static_cast<double>(a) / static_cast<double>(b) - 1.0) < 0.02;
    };
    CHECK(near(h.compute.num_params, p.compute.num_params));
    // Three presets give the name's nominal active count: gpt-oss's 5.1 B leaves out the
    // embedding and head (OpenAI's count; the config's text model reads 5.71 B a token with
    // them, and the step-time model subtracts them from the active count), and Qwen's "A3B"
    // labels round 3.87 B (Qwen3-Next) and 3.45 B (Qwen3.5-35B) down.
    const std::string name = k.preset;
    if (name != "gpt-oss-120b" && name != "qwen3-next-80b-a3b" && name != "qwen3.5-35b-a3b") {
      // Active counts are labels rounded to whole billions ("A17B" for Qwen3.5-397B's
      // 17.35 B): within 3 %.
      INFO("active " << h.compute.num_active_params << " vs preset " << p.compute.num_active_params);
      CHECK(std::abs(static_cast<double>(h.compute.num_active_params) /
                         static_cast<double>(p.compute.num_active_params) -
                     1.0) < 0.03);
    } else {
      CHECK(h.compute.num_active_params > p.compute.num_active_params);
    }
  }
}

// Presets written as `hf_config: ...` plus the keys they override (issue 30: "a preset may
// then be {hf_config, overrides}"). Each one's hand-written model, as its preset file read
// before the conversion, is kept here as the independent reference: the preset must give
// exactly the model it gave (plus sampling_sorts: false, added since on the two Mistral AI
// presets, from their generation_config.json, which config.json does not carry).
struct HandWritten {
  const char* preset;
  const char* model;  // the preset file's body before the conversion, as a flow map
};

const std::vector<HandWritten>& HandWrittenPresets() {
  static const std::vector<HandWritten> kHand = {
      {"llama-3.1-8b", R"({name: Llama-3.1-8B, dtype: bf16, max_model_len: 131072,
          layers: [{type: full_attention, count: 32, num_kv_heads: 8, head_size: 128}],
          compute: {hidden_size: 4096, num_attention_heads: 32, num_params: 8030000000,
                    num_active_params: 8030000000, vocab_size: 128256,
                    intermediate_size: 14336}})"},
      {"llama-3.1-70b", R"({name: Llama-3.1-70B, dtype: bf16, max_model_len: 131072,
          layers: [{type: full_attention, count: 80, num_kv_heads: 8, head_size: 128}],
          compute: {hidden_size: 8192, num_attention_heads: 64, num_params: 70600000000,
                    num_active_params: 70600000000, vocab_size: 128256,
                    intermediate_size: 28672}})"},
      {"llama-2-7b", R"({name: Llama-2-7B, dtype: fp16, max_model_len: 4096,
          layers: [{type: full_attention, count: 32, num_kv_heads: 32, head_size: 128}],
          compute: {hidden_size: 4096, num_attention_heads: 32, num_params: 6740000000,
                    num_active_params: 6740000000, vocab_size: 32000,
                    intermediate_size: 11008}})"},
      {"llama-2-70b", R"({name: Llama-2-70B, dtype: fp16, max_model_len: 4096,
          layers: [{type: full_attention, count: 80, num_kv_heads: 8, head_size: 128}],
          compute: {hidden_size: 8192, num_attention_heads: 64, num_params: 68980000000,
                    num_active_params: 68980000000, vocab_size: 32000,
                    intermediate_size: 28672}})"},
      {"codellama-34b", R"({name: CodeLlama-34B, dtype: bf16, max_model_len: 16384,
          layers: [{type: full_attention, count: 48, num_kv_heads: 8, head_size: 128}],
          compute: {hidden_size: 8192, num_attention_heads: 64, num_params: 33740000000,
                    num_active_params: 33740000000, vocab_size: 32000,
                    intermediate_size: 22016}})"},
      {"yi-34b", R"({name: Yi-34B, dtype: bf16, max_model_len: 4096,
          layers: [{type: full_attention, count: 60, num_kv_heads: 8, head_size: 128}],
          compute: {hidden_size: 7168, num_attention_heads: 56, num_params: 34390000000,
                    num_active_params: 34390000000, vocab_size: 64000,
                    intermediate_size: 20480}})"},
      {"qwen2.5-7b", R"({name: Qwen2.5-7B, dtype: bf16, max_model_len: 32768,
          layers: [{type: full_attention, count: 28, num_kv_heads: 4, head_size: 128}],
          compute: {hidden_size: 3584, num_attention_heads: 28, num_params: 7620000000,
                    num_active_params: 7620000000, vocab_size: 152064,
                    intermediate_size: 18944}})"},
      {"mistral-nemo-12b", R"({name: Mistral-Nemo-12B, dtype: bf16, max_model_len: 131072,
          layers: [{type: full_attention, count: 40, num_kv_heads: 8, head_size: 128}],
          compute: {hidden_size: 5120, num_attention_heads: 32, num_params: 12250000000,
                    num_active_params: 12250000000, vocab_size: 131072,
                    intermediate_size: 14336, max_position_embeddings: 1024000,
                    sampling_sorts: false}})"},
      {"mixtral-8x7b", R"({name: Mixtral-8x7B, dtype: bf16, max_model_len: 32768,
          layers: [{type: full_attention, count: 32, num_kv_heads: 8, head_size: 128}],
          compute: {hidden_size: 4096, num_attention_heads: 32, num_params: 46700000000,
                    num_active_params: 12900000000, vocab_size: 32000, num_experts: 8,
                    num_experts_per_token: 2, sampling_sorts: false}})"},
  };
  return kHand;
}

TEST_CASE("hf_config: a preset written as {hf_config, overrides} is its hand-written model") {
  for (const HandWritten& h : HandWrittenPresets()) {
    INFO(h.preset);
    const Scenario hand = LoadOk({std::string("model=") + h.model});
    auto preset = LoadModelPreset(h.preset);
    REQUIRE(preset.ok());
    CHECK(preset.value() == hand.model);
    // A scenario naming the preset loads the same model (the pinned scenario.resolved.yaml of
    // every golden that names it is unchanged: it spells out the same keys).
    const Scenario sc = LoadOk({std::string("model.preset=") + h.preset});
    CHECK(sc.model == hand.model);
    // The preset's max_model_len, an override of the config's included, is still its native
    // context: a longer one is refused as before.
    CHECK_FALSE(Load({std::string("model.preset=") + h.preset,
                      "model.max_model_len=" + std::to_string(hand.model.max_model_len + 1)})
                    .ok());
  }
  CHECK(LoadModelPreset("llama-3.1-8b")->name == "Llama-3.1-8B");
}

TEST_CASE("hf_config: the KV plan equals the preset's in both vLLM profiles") {
  for (const Known& k : Presets()) {
    for (const char* sem : {"classic", "latest"}) {
      INFO(k.preset << " " << sem);
      auto preset = LoadModelPreset(k.preset);
      REQUIRE(preset.ok());
      std::vector<std::string> common = {std::string("cache.vllm_semantics=") + sem,
                                         "parallel.tp=2"};
      // vLLM's default for chunked-local models is the hybrid manager off, which plans
      // chunked-local layers as full attention: what the Llama 4 preset writes.
      if (k.chunked_as_full) common.push_back("cache.hybrid_kv_cache_manager=false");
      std::vector<std::string> a = common, b = common;
      // The Llama 4 FP8 preset caches fp8 KV; vLLM caches this checkpoint's KV in bf16.
      if (k.chunked_as_full) a.push_back("cache.kv_dtype=bf16");
      a.push_back(std::string("model.preset=") + k.preset);
      b.push_back("model={hf_config: " + HfPath(k.preset) + "}");
      // Name, context and weight dtype as the preset says, where they are known to differ.
      b.push_back("model.name=" + preset->name);
      b.push_back("model.max_model_len=" + std::to_string(preset->max_model_len));
      b.push_back(std::string("model.dtype=") + std::string(DTypeName(preset->dtype)));
      const Scenario sa = LoadOk(a), sb = LoadOk(b);
      auto pa = sa.Plan();
      auto pb = sb.Plan();
      REQUIRE(pa.ok());
      REQUIRE(pb.ok());
      CHECK(FormatPlan(sa, pa.value()) == FormatPlan(sb, pb.value()));
      CHECK(pa->num_blocks == pb->num_blocks);
      CHECK(pa->page_bytes == pb->page_bytes);
      CHECK(pa->attn_block_size == pb->attn_block_size);
    }
  }
}

TEST_CASE("hf_config: parameter counts equal the publishers' exact counts") {
  // Safetensors totals on the model cards: Llama-2-7B 6,738,415,616; Llama-3.1-8B
  // 8,030,261,248; Mixtral-8x7B 46,702,792,704.
  CHECK(HfModel("llama-2-7b").compute.num_params == 6738415616);
  CHECK(HfModel("llama-3.1-8b").compute.num_params == 8030261248);
  CHECK(HfModel("mixtral-8x7b").compute.num_params == 46702792704);
  // Mixtral's active count by hand: 32 x (attention 41,943,040 + router 32,768 + 2 norms
  // 8,192 + 2 experts x 176,160,768) + embedding and head 262,144,000 + final norm 4,096.
  CHECK(HfModel("mixtral-8x7b").compute.num_active_params ==
        32LL * (41943040 + 32768 + 8192 + 2 * 176160768) + 262144000 + 4096);
}

TEST_CASE("hf_config: quantized weights keep the KV cache in the torch dtype") {
  // FP8 checkpoints without a KV scheme: vLLM's kv_cache_dtype auto is the torch dtype.
  const ModelSpec ds = HfModel("deepseek-v3");
  CHECK(ds.dtype == DType::kFp8);
  CHECK(ds.layers[0].dtype == DType::kBFloat16);
  const ModelSpec scout = HfModel("llama-4-scout-17b-16e-fp8");
  CHECK(scout.dtype == DType::kFp8);
  CHECK(scout.layers[0].dtype == DType::kBFloat16);
  // Its ignore list names self_attn: the attention stays 16-bit, 48 layers × (5120 × (40 + 2 ×
  // 8) × 128 + 40 × 128 × 5120) = 48 × 62,914,560 = 3,019,898,880 parameters, as the preset
  // says (the preset adds the routers and the vision tower, which the text config lacks).
  CHECK(scout.compute.attention_16bit);
  CHECK(scout.compute.num_params_16bit == 3019898880);
  CHECK_FALSE(ds.compute.attention_16bit);
  // The preset caches fp8 KV: half the page of what vLLM allocates for this checkpoint.
  auto preset = LoadModelPreset("llama-4-scout-17b-16e-fp8");
  REQUIRE(preset.ok());
  CHECK(preset->dtype == DType::kFp8);
  CHECK(preset->layers[0].dtype == DType::kAuto);
  // A compressed-tensors KV scheme quantizes the KV cache as well.
  auto kv8 = HfConfigToModelTree(
      R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
          "num_attention_heads": 4, "num_hidden_layers": 1, "max_position_embeddings": 64,
          "vocab_size": 10, "torch_dtype": "bfloat16", "quantization_config": {
          "quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights":
          {"num_bits": 8, "type": "float"}}}, "kv_cache_scheme": {"num_bits": 8,
          "type": "float"}}})",
      "kv8/config.json", {});
  REQUIRE(kv8.ok());
  CHECK(kv8->Find("dtype")->scalar == "fp8");
  CHECK(kv8->Find("layers")->seq[0].Find("dtype")->scalar == "fp8");
  // Its ignore list does not name the attention, so no 16-bit attention key.
  CHECK(kv8->Find("compute")->Find("attention_16bit") == nullptr);
  // An ignore list that names self_attn (llm-compressor's Llama-4 recipe) keeps the
  // attention projections in 16 bits.
  auto ignored = HfConfigToModelTree(
      R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
          "num_attention_heads": 4, "num_hidden_layers": 1, "max_position_embeddings": 64,
          "vocab_size": 10, "torch_dtype": "bfloat16", "quantization_config": {
          "quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights":
          {"num_bits": 8, "type": "float"}}}, "ignore": ["lm_head", "re:.*self_attn.*"]}})",
      "ignored/config.json", {});
  REQUIRE(ignored.ok());
  REQUIRE(ignored->Find("compute")->Find("attention_16bit") != nullptr);
  CHECK(ignored->Find("compute")->Find("attention_16bit")->scalar == "true");
  // A Qwen3.5 config's mamba_ssm_dtype float32 reaches the SSM state.
  CHECK(HfModel("qwen3.5-35b-a3b").layers[0].mamba.ssm_dtype == DType::kFloat32);
}

TEST_CASE("hf_config: mtp: true attaches the config's MTP layers as the draft") {
  const Scenario ds = LoadOk({"model={hf_config: " + HfPath("deepseek-v3") + ", mtp: true}",
                              "cache.num_speculative_tokens=1"});
  REQUIRE(ds.draft.has_value());
  REQUIRE(ds.draft->layers.size() == 1);
  CHECK(ds.draft->layers[0].kind == LayerKind::kMla);
  CHECK(ds.draft->layers[0].head_size == 576);
  const Scenario q = LoadOk({"model={hf_config: " + HfPath("qwen3.5-35b-a3b") + ", mtp: true}",
                             "cache.num_speculative_tokens=1"});
  REQUIRE(q.draft.has_value());
  REQUIRE(q.draft->layers.size() == 1);
  CHECK(q.draft->layers[0].kind == LayerKind::kFullAttention);
  CHECK(q.draft->layers[0].num_kv_heads == 2);
  auto none = Load({"model={hf_config: " + HfPath("llama-3.1-8b") + ", mtp: true}"});
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().message().find("no MTP layers") != std::string::npos);
}

TEST_CASE("hf_config: a validation scenario runs on a config.json model") {
  const Scenario sc = LoadOk({"model={hf_config: " + HfPath("llama-3.1-8b") + "}"},
                             "scenarios/validation/blis-eval-16-llama-3-1-8b-tp1-general-1.yaml");
  CHECK(sc.model.num_layers() == 32);
  CHECK(sc.Plan().ok());
  CHECK(Engine::Create(sc).ok());
}

// ---------------------------------------------------------------------------------------
// Errors: file and key named, exit-2 class codes, no partial model.

std::string Error(const std::string& json) {
  auto r = HfConfigToModelTree(json, "bad/config.json", {});
  REQUIRE_FALSE(r.ok());
  return r.status().message();
}

const std::string kLlama =
    R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
        "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2,
        "max_position_embeddings": 1024, "vocab_size": 1000)";

TEST_CASE("hf_config: a small Llama by hand") {
  auto r = HfConfigToModelTree(kLlama + "}", "x/config.json", {});
  REQUIRE(r.ok());
  const ConfigNode& c = *r->Find("compute");
  // 2 x (q 64x64 + k,v 2 x 64x32 + o 64x64 + MLP 3 x 64x128 + 2 norms x 64)
  // + embedding and head 2 x 1000x64 + final norm 64 = 2 x 36992 + 128064
  CHECK(c.Find("num_params")->scalar == std::to_string(2 * 36992 + 128064));
  const ConfigNode& layers = *r->Find("layers");
  REQUIRE(layers.seq.size() == 1);
  CHECK(layers.seq[0].Find("count")->scalar == "2");
  CHECK(layers.seq[0].Find("head_size")->scalar == "16");  // hidden / heads
}

TEST_CASE("hf_config: bad configs are errors naming the file and key") {
  std::string e = Error(R"({"architectures": ["FooForCausalLM"]})");
  CHECK(e.find("bad/config.json") != std::string::npos);
  CHECK(e.find("FooForCausalLM") != std::string::npos);
  CHECK(e.find("Qwen3NextForCausalLM") != std::string::npos);  // lists the supported ones
  e = Error(R"({"hidden_size": 1})");
  CHECK(e.find("architectures") != std::string::npos);
  e = Error(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64})");
  CHECK(e.find("bad/config.json: num_attention_heads: missing") != std::string::npos);
  e = Error(kLlama + R"(, "num_key_value_heads": "two"})");
  CHECK(e.find("num_key_value_heads: expected an integer") != std::string::npos);
  e = Error(kLlama + R"(, "num_hidden_layers": 100000000})");
  CHECK(e.find("num_hidden_layers") != std::string::npos);
  e = Error(kLlama + R"(, "vocab_size": -3})");
  CHECK(e.find("vocab_size") != std::string::npos);
  e = Error(kLlama + R"(, "layer_types": ["full_attention"]})");
  CHECK(e.find("layer_types: has 1 entries") != std::string::npos);
  e = Error(kLlama + R"(, "quantization_config": {"quant_method": "awq"}})");
  CHECK(e.find("quantization_config.quant_method") != std::string::npos);
  e = Error(R"({"architectures": ["Gemma3ForConditionalGeneration"]})");
  CHECK(e.find("text_config") != std::string::npos);
  e = Error(R"({"architectures": ["Gemma3ForConditionalGeneration"], "text_config": {}})");
  CHECK(e.find("text_config.hidden_size: missing") != std::string::npos);
  e = Error("{\"architectures\": [");
  CHECK(e.find("not valid JSON") != std::string::npos);
  // A number past a double's range: nlohmann throws out_of_range even when told not to throw.
  e = Error(kLlama + R"(, "rope_theta": 320001e309})");
  CHECK(e.find("not valid JSON") != std::string::npos);
  e = Error(std::string(kMaxHfConfigBytes + 1, ' '));
  CHECK(e.find("at most") != std::string::npos);
}

TEST_CASE("hf_config: scenario errors name the scenario line and key") {
  auto both = Load({"model={preset: llama-3.1-8b, hf_config: " + HfPath("llama-3.1-8b") + "}"});
  REQUIRE_FALSE(both.ok());
  CHECK(both.status().message().find("not both") != std::string::npos);
  auto missing = Load({"model={hf_config: no/such/config.json}"});
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message().find("model.hf_config: cannot read no/such/config.json") !=
        std::string::npos);
  auto dir = Load({"model={hf_config: scenarios/models}"});
  REQUIRE_FALSE(dir.ok());
  // Inline keys beside hf_config override the config's.
  const Scenario sc =
      LoadOk({"model={hf_config: " + HfPath("llama-3.1-8b") + ", max_model_len: 8192}"});
  CHECK(sc.model.max_model_len == 8192);
  CHECK(sc.model.name == "llama-3.1-8b");
}

}  // namespace
}  // namespace kvsim
