// The kvsim subcommands. main.cc is the explicit registry: it calls each Register function
// in turn. A subcommand parses its own flags into a plain options struct and runs from the
// CLI11 callback; it reports its exit status through ExitCode().
//
// Exit codes: 0 success, 1 internal failure (or: some points failed, or a point rejected
// every request), 2 bad input (scenario, flags, trace), 3 no CUDA device (gpu-validate),
// 4 an output could not be written (disk full, no permission: the input was fine),
// 130 / 143 stopped by SIGINT / SIGTERM (finished sweep points are kept).
inline constexpr int kExitWriteFailed = 4;
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "sim/config/config_tree.h"
#include "sim/run/provenance.h"
#include "sim/run/scenario_checks.h"
#include "sim/scenario_config.h"

namespace kvsim::cli {

int& ExitCode();

// Prints a Status as the CLI does: plain text on stderr, or {"error", "message"} on stdout
// when `json` is set. Returns the exit code it chose: ExitCodeFor(status).
// ExitCodeFor: 4 for a failed write (io_error, cannot_write, write_failed), 128 + the signal for
// "interrupted", 2 (bad input) for everything else.
int ExitCodeFor(const Status& status);
int ReportError(const Status& status, bool json);

// Options shared by scenario-driven commands.
struct ScenarioArgs {
  std::string scenario;             // empty = built-in default
  std::vector<std::string> sets;    // --set a.b=v
};
void AddScenarioArgs(CLI::App* cmd, ScenarioArgs* args);
// The name errors and outputs give the scenario: its path, or "<built-in>/scenarios/default.yaml".
std::string ScenarioSource(const ScenarioArgs& args);

// ValidateScenario and ScenarioNotes (the checks `kvsim run`, `sweep` and `layout` share) are
// sim/run/scenario_checks.h's, which the Python module shares too.

// The scenario tree `kvsim run` and `kvsim sweep` execute: loaded (includes, then --set),
// with the sweep axes that a --set fixes dropped (one "kvsim: note:" line each on stderr),
// `--seeds` applied when seeds > 0, and pinned (sim/scenario/pin_scenario.h), so that the
// scenario.resolved.yaml written from it reproduces the run alone (sim/sweep/run_tree.h).
Result<ConfigNode> LoadRunTree(const ScenarioArgs& args, int64_t seeds);

// Provenance of an output directory (sim/run/provenance.h, which also has CheckOutDir), with
// this build's version: how the command ran (threads, seeds, shard, and, written again when
// the command ends, its wall time).
struct RunContext {
  int jobs = 1;
  int64_t seeds = 1;
  int shard_k = 0, shard_n = 1;
  double wall_s = -1;  // < 0: still running (not written)
};
Status WriteProvenance(const std::string& dir, const std::string& command,
                       const ConfigNode& tree, const ScenarioArgs& args,
                       const std::string& scenario_hash, int64_t points,
                       const RunContext& context = {});

// A boolean flag and its negation, --NAME and --no-NAME, as two help lines. (CLI11's
// "--x,!--no-x" prints "--x,--no-x{false}", which reads as "default false".)
void AddOnOffFlag(CLI::App* cmd, const std::string& name, bool* target, const std::string& help);

// SIGINT and SIGTERM call RequestStop (sim/sweep/sweep_runner.h) and say on stderr that the
// points in flight finish first; a second signal kills at once (the default action).
void InstallStopHandlers();

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
