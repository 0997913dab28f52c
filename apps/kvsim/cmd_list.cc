// kvsim list: presets, layer kinds and every scenario key with type, default and help.
#include <fmt/format.h>

#include <algorithm>
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
    const std::vector<KeyDoc> docs = DescribeScenarioKeys();
    // Long enum types ("NHD|HND|LBNHC|...") get a line of their own, and the default column
    // is as wide as the longest default, so the columns align.
    const std::string pool_prefix = "cluster.{prefill,decode}.";
    size_t key_width = 46, def_width = 10;
    for (const auto& k : docs) {
      if (k.type == "map") continue;
      key_width = std::max(key_width, k.path.size());
      if (k.default_value.size() <= 16) def_width = std::max(def_width, k.default_value.size());
    }
    size_t path_width = key_width;  // the per-pool section widens it by the prefix
    auto print = [&](const std::string& path, const KeyDoc& k) {
      const std::string def = k.default_value.empty() ? "-" : k.default_value;
      if (k.type.size() > 16) {
        std::cout << fmt::format("  {:<{}} {:<16} default {:<{}} {}\n", path, path_width,
                                 "choice", def, def_width, k.help)
                  << fmt::format("  {:<{}} one of {}\n", "", path_width, k.type);
      } else {
        std::cout << fmt::format("  {:<{}} {:<16} default {:<{}} {}\n", path, path_width,
                                 k.type, def, def_width, k.help);
      }
    };
    std::cout << "\nScenario keys:\n";
    for (const auto& k : docs) {
      if (k.type == "map") continue;
      print(k.path, k);
    }
    // A P/D cluster's pools take any key of these sections for themselves, merged over the
    // top-level section (sim/scenario/cluster_sections.cc).
    std::cout << "\nPer-pool keys of a P/D cluster (cluster.prefill.* and cluster.decode.*, "
                 "merged over the top-level key):\n";
    path_width = key_width + pool_prefix.size();
    for (const auto& k : docs) {
      if (k.type == "map") continue;
      const std::string section = k.path.substr(0, k.path.find('.'));
      if (section != "model" && section != "parallel" && section != "cache" &&
          section != "scheduler" && section != "hardware") {
        continue;
      }
      print(pool_prefix + k.path, k);
    }
    std::cout << "\nSweeps (the `sweep:` section; every point is the scenario with these set):\n"
                 "  sweep.KEY.PATH: [v1, v2, ...]              an axis: any scenario key above; "
                 "axes multiply (last varies fastest)\n"
                 "  sweep.zip: [{KEY.PATH: [...], ...}, ...]   keys in one group advance "
                 "together (equal lengths)\n"
                 "  --set 'sweep={KEY.PATH: [v1, v2]}'         replace the sweep from the command "
                 "line; --set 'sweep={}' runs one point\n"
                 "  --set 'sweep.KEY.PATH=[v1, v2]'            set or add one axis, leaving the "
                 "others\n"
                 "  --set KEY.PATH=v on a swept key            fixes that axis to v (and says so "
                 "on stderr)\n";
  });
}

}  // namespace kvsim::cli
