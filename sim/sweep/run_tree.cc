#include "sim/sweep/run_tree.h"

#include "sim/scenario/pin_scenario.h"
#include "sim/sweep/sweep_spec.h"

namespace kvsim {

Result<ConfigNode> LoadRunTree(const LoadOptions& options, int64_t seeds,
                               std::vector<std::string>* notes) {
  auto tree = LoadScenarioTree(options);
  if (!tree.ok()) return tree.status();
  for (std::string& note : FixSweptKeys(tree.value(), options.overrides)) {
    if (notes != nullptr) notes->push_back(std::move(note));
  }
  if (seeds > 0) SetSweepSeeds(tree.value(), seeds);
  PinScenarioTree(tree.value(), ScenarioSourceName(options.path));
  return tree;
}

std::string ScenarioSourceName(const std::string& path) {
  return path.empty() ? std::string("<built-in>/") + kDefaultScenarioPath : path;
}

}  // namespace kvsim
