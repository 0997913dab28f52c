#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/kvsim/commands.h"

namespace kvsim::cli {

int& ExitCode() {
  static int code = 0;
  return code;
}

int ReportError(const Status& status, bool json) {
  if (json) {
    nlohmann::json j{{"error", status.code()}, {"message", status.message()}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::cerr << "kvsim: error: " << status.message() << "\n";
  }
  ExitCode() = 2;
  return 2;
}

void AddScenarioArgs(CLI::App* cmd, ScenarioArgs* args) {
  cmd->add_option("scenario", args->scenario,
                  "scenario YAML file (default: the built-in default scenario)");
  cmd->add_option("--set", args->sets, "override a scenario key: --set cache.block_size=32")
      ->type_name("KEY=VALUE");
}

}  // namespace kvsim::cli
