// The scenario tree `kvsim run`, `kvsim sweep` and the Python module (python/) execute: loaded
// (includes, then --set), with the sweep axes that a --set fixes dropped (one note each for
// the user), `--seeds` applied when seeds > 0, and pinned (sim/scenario/pin_scenario.h), so
// that the scenario.resolved.yaml written from it reproduces the run alone. One function for
// all three, so that the CLI and the module run the same points and write the same bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "sim/config/config_tree.h"
#include "sim/scenario/scenario_loader.h"

namespace kvsim {

// `notes` (optional) receives one line per swept key that an override fixes.
Result<ConfigNode> LoadRunTree(const LoadOptions& options, int64_t seeds,
                               std::vector<std::string>* notes = nullptr);

// The name errors and outputs give a scenario: its path, or "<built-in>/scenarios/default.yaml"
// for the built-in default (an empty path).
std::string ScenarioSourceName(const std::string& path);

}  // namespace kvsim
