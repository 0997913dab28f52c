// kvsim list: presets, layer kinds and every scenario key with type, default and help.
#include <fmt/format.h>

#include <iostream>

#include "apps/kvsim/commands.h"
#include "sim/scenario/scenario_loader.h"

namespace kvsim::cli {

void RegisterList(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "list", "list model presets and every scenario key (type, default, help)");
  cmd->callback([] {
    std::cout << "Model presets (model.preset):\n";
    for (const auto& name : ModelPresetNames()) {
      auto m = LoadModelPreset(name);
      std::cout << fmt::format("  {:<22} {}\n", name,
                               m.ok() ? fmt::format("{} ({} layers)", m->name, m->num_layers())
                                      : "error: " + m.status().message());
    }
    std::cout << "\nScenario keys:\n";
    for (const auto& k : DescribeScenarioKeys()) {
      if (k.type == "map") continue;
      std::cout << fmt::format("  {:<42} {:<16} default {:<10} {}\n", k.path, k.type,
                               k.default_value.empty() ? "-" : k.default_value, k.help);
    }
  });
}

}  // namespace kvsim::cli
