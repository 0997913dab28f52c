#include <unistd.h>

#include <csignal>
#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/kvsim/commands.h"
#include "apps/kvsim/version.h"
#include "sim/run/provenance.h"
#include "sim/sweep/run_tree.h"
#include "sim/sweep/sweep_runner.h"

namespace kvsim::cli {
namespace {

volatile std::sig_atomic_t g_signal = 0;

void OnStopSignal(int sig) {
  g_signal = sig;
  RequestStop();
  static const char kMsg[] =
      "\nkvsim: stopping: the points in flight finish and are kept (signal again to abort)\n";
  (void)!::write(STDERR_FILENO, kMsg, sizeof(kMsg) - 1);
}

}  // namespace

void InstallStopHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;  // the second signal takes the default action
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int ExitCodeFor(const Status& status) {
  if (status.code() == "io_error" || status.code() == "cannot_write" ||
      status.code() == "write_failed") {
    return kExitWriteFailed;
  }
  if (status.code() == "interrupted") return 128 + (g_signal ? g_signal : SIGINT);
  return 2;
}

int& ExitCode() {
  static int code = 0;
  return code;
}

int ReportError(const Status& status, bool json) {
  if (json) {
    // Messages quote user input (file names, keys, values) that need not be UTF-8: replace
    // invalid bytes with U+FFFD instead of letting dump() throw.
    nlohmann::json j{{"error", status.code()}, {"message", status.message()}};
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    std::cerr << "kvsim: error: " << status.message() << "\n";
  }
  ExitCode() = ExitCodeFor(status);
  return ExitCode();
}

Status WriteProvenance(const std::string& dir, const std::string& command,
                       const ConfigNode& tree, const ScenarioArgs& args,
                       const std::string& scenario_hash, int64_t points,
                       const RunContext& context) {
  ProvenanceContext p{KvsimVersion(), command, args.scenario, args.sets, context.jobs,
                      context.seeds, context.shard_k, context.shard_n, context.wall_s};
  return kvsim::WriteProvenance(dir, tree, scenario_hash, points, p);
}

Result<ConfigNode> LoadRunTree(const ScenarioArgs& args, int64_t seeds) {
  std::vector<std::string> notes;
  auto tree = kvsim::LoadRunTree({args.scenario, args.sets}, seeds, &notes);
  for (const std::string& note : notes) std::cerr << "kvsim: note: " << note << "\n";
  return tree;
}

void AddScenarioArgs(CLI::App* cmd, ScenarioArgs* args) {
  cmd->add_option("scenario", args->scenario,
                  "scenario YAML file (default: the built-in default scenario)");
  cmd->add_option("--set", args->sets, "override a scenario key: --set cache.block_size=32")
      ->type_name("KEY=VALUE");
}

void AddOnOffFlag(CLI::App* cmd, const std::string& name, bool* target, const std::string& help) {
  CLI::Option* on = cmd->add_flag_callback("--" + name, [target] { *target = true; }, help);
  CLI::Option* off =
      cmd->add_flag_callback("--no-" + name, [target] { *target = false; }, "turn --" + name + " off");
  on->excludes(off);
}

std::string ScenarioSource(const ScenarioArgs& args) { return ScenarioSourceName(args.scenario); }

}  // namespace kvsim::cli
