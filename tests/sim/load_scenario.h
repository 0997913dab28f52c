// Scenario text → Scenario for the simulator's tests: parsed as a file named `name` (errors
// name it), with `--set`-style overrides applied first. A bad text fails the test at once.
#pragma once

#include <catch2/catch_test_macros.hpp>
#include <string>
#include <vector>

#include "sim/config/config_tree.h"
#include "sim/scenario/scenario_loader.h"

namespace kvsim {

inline Scenario LoadScenarioText(const std::string& yaml, const std::string& name,
                                 const std::vector<std::string>& sets = {}) {
  auto tree = ParseYaml(yaml, name);
  REQUIRE(tree.ok());
  for (const auto& s : sets) REQUIRE(ApplyOverride(tree.value(), s).ok());
  auto sc = ParseScenario(tree.value(), name);
  INFO(sc.status().ToString());
  REQUIRE(sc.ok());
  return sc.value();
}

}  // namespace kvsim
