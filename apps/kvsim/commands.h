// The kvsim subcommands. main.cc is the explicit registry: it calls each Register function
// in turn. A subcommand parses its own flags into a plain options struct and runs from the
// CLI11 callback; it reports its exit status through ExitCode().
//
// Exit codes: 0 success, 1 internal failure, 2 bad input (scenario, flags, trace),
// 3 no CUDA device (gpu-validate).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace kvsim::cli {

int& ExitCode();

// Prints a Status as the CLI does: plain text on stderr, or {"error", "message"} on stdout
// when `json` is set. Returns the exit code it chose (2 for input errors).
int ReportError(const Status& status, bool json);

// Options shared by scenario-driven commands.
struct ScenarioArgs {
  std::string scenario;             // empty = built-in default
  std::vector<std::string> sets;    // --set a.b=v
};
void AddScenarioArgs(CLI::App* cmd, ScenarioArgs* args);

void RegisterCalibrate(CLI::App& app);
void RegisterGpuValidate(CLI::App& app);
void RegisterLayout(CLI::App& app);
void RegisterList(CLI::App& app);
void RegisterReplay(CLI::App& app);
void RegisterSchedule(CLI::App& app);
void RegisterRun(CLI::App& app);
void RegisterSweep(CLI::App& app);
void RegisterMerge(CLI::App& app);

}  // namespace kvsim::cli
