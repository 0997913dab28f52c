// libFuzzer target: a Hugging Face config.json, read as `model: {hf_config: ...}` reads it
// (sim/scenario/hf_config.h). An accepted config must give a model tree the scenario parser
// takes or refuses with a Status, never a crash, and an accepted model has layers.
#include <cstdint>

#include "sim/scenario/hf_config.h"
#include "sim/scenario/scenario_loader.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 65536) return 0;
  kvsim::HfConfigOptions options;
  options.mtp_draft = size > 0 && (data[0] & 1) && (data[0] & 2);
  auto model = kvsim::HfConfigToModelTree(AsText(data, size), "fuzz/config.json", options);
  if (!model.ok()) return 0;
  kvsim::ConfigNode tree;
  tree.kind = kvsim::ConfigNode::Kind::kMap;
  const kvsim::SourcePos pos{"fuzz_hf_config.yaml", 1};
  tree.Set("model", model.value(), pos);
  auto sc = kvsim::ParseScenario(tree, "fuzz_hf_config.yaml");
  if (!sc.ok()) return 0;
  ACCEPTED_INVALID(sc->model.num_layers() > 0, "a model without layers");
  ACCEPTED_INVALID(sc->model.compute.num_params >= 0, "a negative parameter count");
  auto plan = sc->Plan();
  (void)plan;
  return 0;
}
