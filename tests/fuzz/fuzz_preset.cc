// libFuzzer target: a model or hardware preset file (the first byte chooses which), read as
// the scenario loader reads scenarios/models/*.yaml and scenarios/hardware/*.yaml: the text
// becomes the `model:` (or `hardware:`) section of an otherwise default scenario.
#include <cstdint>

#include "sim/config/config_tree.h"
#include "sim/scenario/scenario_loader.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 16384) return 0;
  const bool hardware = data[0] & 1;
  auto section = kvsim::ParseYaml(AsText(data + 1, size - 1), "fuzz_preset.yaml");
  if (!section.ok()) return 0;
  kvsim::ConfigNode tree;
  tree.kind = kvsim::ConfigNode::Kind::kMap;
  const kvsim::SourcePos pos{"fuzz_preset.yaml", 1};
  if (hardware) {
    kvsim::ConfigNode model;
    model.kind = kvsim::ConfigNode::Kind::kMap;
    model.Set("preset", kvsim::ConfigNode::Scalar("llama-3.1-8b", pos), pos);
    tree.Set("model", model, pos);
    tree.Set("hardware", section.value(), pos);
  } else {
    tree.Set("model", section.value(), pos);
  }
  auto sc = kvsim::ParseScenario(tree, "fuzz_preset.yaml");
  if (!sc.ok()) return 0;
  for (const auto& layer : sc->model.layers) {
    ACCEPTED_INVALID(layer.kind == kvsim::LayerKind::kMamba || layer.head_size >= 1,
                     "an attention layer without a head size");
  }
  auto plan = sc->Plan();
  (void)plan;
  return 0;
}
