// Loading scenarios: file → ConfigNode (with includes and presets merged) → `--set`
// overrides → typed Scenario. All errors name file, line and key path; the CLI turns them
// into exit code 2.
#pragma once

#include <string>
#include <vector>

#include "sim/config/config_reader.h"
#include "sim/scenario_config.h"

namespace kvsim {

struct LoadOptions {
  std::string path;                    // empty: the built-in default scenario
  std::vector<std::string> overrides;  // "a.b=value", applied in order after includes
  // What errors call overrides[i] when a command's own flag made it ("--tp 0"); missing or
  // empty = "--set a.b".
  std::vector<std::string> override_labels = {};
};

// The name of the built-in default scenario file.
inline constexpr const char* kDefaultScenarioPath = "scenarios/default.yaml";

Result<Scenario> LoadScenario(const LoadOptions& options);

// The merged, overridden tree without typed parsing (sweeps re-parse it per point).
Result<ConfigNode> LoadScenarioTree(const LoadOptions& options);

// Typed parse of a merged tree.
Result<Scenario> ParseScenario(const ConfigNode& tree, const std::string& source);

// A model preset by name ("llama-3.1-8b"), or an error listing the known ones.
Result<ModelSpec> LoadModelPreset(const std::string& name);

// A model preset file written as `hf_config: F` (F beside the preset) plus the keys it
// overrides: the model tree F gives, with those keys merged over it. `path` names the preset
// in errors.
Result<ConfigNode> ExpandHfPreset(const ConfigNode& preset, const std::string& path);
std::vector<std::string> ModelPresetNames();

// Every scenario key with type, default and help, in schema order (for `kvsim list`).
std::vector<KeyDoc> DescribeScenarioKeys();

}  // namespace kvsim
