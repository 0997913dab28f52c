// Models from a Hugging Face `config.json`: `model: {hf_config: path/to/config.json}`.
//
// HfConfigToModelTree reads the JSON text of one config and writes the model section it
// describes, in the same keys a preset file uses (name, dtype, max_model_len, layers,
// compute, optionally draft), so the scenario loader validates and merges it exactly
// like a preset: inline keys next to `hf_config` override what the config gave. Each
// supported architecture follows vLLM's model code for it (vllm/model_executor/models/*.py):
// which layers are full, sliding-window, chunked-local, MLA or Gated DeltaNet, their head
// counts and state shapes, the MoE routing, and the weight and KV dtypes that vLLM picks.
// Parameter counts are computed from the weight shapes of that model code (embedding, every
// projection, norm and bias of the text model; vision towers are not counted).
//
// Errors name the file and the JSON key (`text_config.num_key_value_heads`); an unknown
// architecture lists the supported ones. Sizes are bounded so a hostile file cannot make the
// loader allocate without limit.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "sim/config/config_tree.h"

namespace kvsim {

// Largest config.json accepted (real ones are a few KiB).
inline constexpr size_t kMaxHfConfigBytes = 1 << 20;

struct HfConfigOptions {
  // Attach the checkpoint's MTP layers (DeepSeek num_nextn_predict_layers, Qwen3-Next /
  // Qwen3.5 mtp_num_hidden_layers) as the draft model. vLLM only builds them when
  // speculative decoding runs with method mtp, so they are off unless asked for.
  bool mtp_draft = false;
  // Name shown in reports when the config does not give one (the caller passes the folder).
  std::string default_name = "model";
};

// `file` names the config in error messages and in the positions of the tree's nodes.
Result<ConfigNode> HfConfigToModelTree(const std::string& json_text, const std::string& file,
                                       const HfConfigOptions& options);

// The `architectures` entries this reader knows, in the order the README lists them.
const std::vector<std::string>& HfSupportedArchitectures();

}  // namespace kvsim
