#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/kvsim/commands.h"
#include "apps/kvsim/version.h"
#include "core/kv_cache_manager.h"
#include "sim/instance_builder.h"
#include "sim/output_file.h"
#include "sim/report/plan_report.h"
#include "sim/scenario/pin_scenario.h"
#include "sim/scenario/scenario_loader.h"
#include "sim/workload/i_workload.h"
#include "sim/sweep/sweep_runner.h"
#include "sim/json_text.h"

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

Status ValidateScenario(const Scenario& sc) {
  if (Status w = CheckWorkload(sc.sim.workload); !w.ok()) return w;
  if (sc.cluster.enabled) return Status::Ok();
  auto plan = sc.Plan();
  if (!plan.ok()) return plan.status();
  if (plan->num_blocks < 2) {
    return Status::Error("no_kv_memory",
                         sc.source + ": cache.kv_memory_bytes: the KV cache has no usable "
                                     "blocks; give more memory (or cache.num_gpu_blocks)");
  }
  // The manager's config as the engine builds it (a pool too large names the key that sized it).
  auto kv = EngineKvConfig(sc, plan.value());
  return kv.ok() ? Status::Ok() : kv.status();
}

std::vector<std::string> ScenarioNotes(const Scenario& sc) {
  std::vector<std::string> notes;
  const int64_t hbm = sc.sim.hardware.hbm_capacity_bytes;
  if (!sc.cluster.enabled && hbm > 0 && sc.cache.kv_memory_bytes > hbm) {
    notes.push_back(sc.Where("cache.kv_memory_bytes") + ": cache.kv_memory_bytes: " +
                    HumanBytes(static_cast<double>(sc.cache.kv_memory_bytes)) +
                    " per rank is more than the GPU's memory (hardware.hbm_capacity_bytes " +
                    HumanBytes(static_cast<double>(hbm)) + ", " + sc.sim.hardware.name +
                    "): a what-if, not a configuration that GPU can run");
  }
  return notes;
}

Status CheckOutDir(const std::string& dir, const std::string& scenario_hash, bool force) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (force || !fs::is_directory(dir, ec)) return Status::Ok();
  const fs::path prov = fs::path(dir) / "provenance.json";
  std::string theirs;
  if (std::ifstream f(prov); f) {
    std::stringstream ss;
    ss << f.rdbuf();
    const auto j = ParseJsonNoThrow<nlohmann::json>(ss.str());
    if (j.is_object() && j.contains("scenario_hash") && j["scenario_hash"].is_string()) {
      theirs = j["scenario_hash"].get<std::string>();
    }
    if (theirs == scenario_hash) return Status::Ok();  // a rerun of the same scenario
  } else {
    bool results = false;
    for (const char* f : {"metrics.json", "requests.csv", "summary.csv", "sweep.csv", "points"}) {
      results = results || fs::exists(fs::path(dir) / f, ec);
    }
    if (!results) return Status::Ok();
  }
  return Status::Error(
      "out_dir_taken",
      dir + ": holds the results of another " +
          (theirs.empty() ? std::string("run (no provenance.json)")
                          : "scenario (scenario_hash " + theirs + ", this one is " +
                                scenario_hash + ")") +
          "; use another -o, or --force to write over it");
}

namespace {

// This process's command line as typed (arguments joined by spaces, quoted where needed).
std::string CommandLine() {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string raw = ss.str();
  std::string out;
  size_t start = 0;
  while (start < raw.size()) {
    size_t end = raw.find('\0', start);
    if (end == std::string::npos) end = raw.size();
    std::string arg = raw.substr(start, end - start);
    const bool plain = !arg.empty() && arg.find_first_of(" \t\"'$\\") == std::string::npos;
    if (!plain) {
      std::string q = "'";
      for (char c : arg) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
      arg = q + "'";
    }
    out += (out.empty() ? "" : " ") + arg;
    start = end + 1;
  }
  return out;
}

std::string HostName() {
  char buf[256] = {};
  return ::gethostname(buf, sizeof(buf) - 1) == 0 ? std::string(buf) : std::string("?");
}

// When this process started (the first call), as UTC ISO 8601.
const std::string& StartTime() {
  static const std::string kStart = [] {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
    return std::string(buf);
  }();
  return kStart;
}

}  // namespace

Status WriteProvenance(const std::string& dir, const std::string& command,
                       const ConfigNode& tree, const ScenarioArgs& args,
                       const std::string& scenario_hash, int64_t points,
                       const RunContext& context) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::Error("io_error", dir + ": cannot create directory: " + ec.message());
  // The tree as run: includes are merged in already. It is written unchanged (defaults are
  // not added) so that it hashes to the same scenario_hash and sweep_id when rerun.
  std::string seed = "0";  // the scenario default
  if (const ConfigNode* s = tree.Find("seed"); s && s->is_scalar()) seed = s->scalar;
  const std::string source = args.scenario.empty() ? "<built-in default>" : args.scenario;
  // No version here (it is in provenance.json): this file depends on the scenario only.
  std::string header = "# scenario: " + source + "\n# scenario_hash: " + scenario_hash +
                       "\n# seed: " + seed + "\n";
  for (const auto& o : args.sets) header += "# --set " + o + "\n";
  header += "# Includes and --set applied; `kvsim " + command +
            " scenario.resolved.yaml` reproduces this run.\n";
  if (Status w = WriteFileAtomically((fs::path(dir) / "scenario.resolved.yaml").string(),
                                     header + ToExactYaml(tree));
      !w.ok()) {
    return w;
  }
  nlohmann::ordered_json j;
  j["kvsim_version"] = KvsimVersion();
  j["command"] = command;
  j["scenario"] = source;
  j["overrides"] = args.sets;
  j["seed"] = seed;
  j["scenario_hash"] = scenario_hash;
  j["points"] = points;
  j["resolved"] = "scenario.resolved.yaml";
  j["command_line"] = CommandLine();
  j["host"] = HostName();
  j["started_utc"] = StartTime();
  j["jobs"] = context.jobs;
  j["seeds"] = context.seeds;
  if (context.shard_n > 1) j["shard"] = fmt::format("{}/{}", context.shard_k, context.shard_n);
  if (context.wall_s >= 0) j["wall_s"] = std::round(context.wall_s * 1000) / 1000;
  const std::string file =
      context.shard_n > 1
          ? fmt::format("provenance.shard-{}-of-{}.json", context.shard_k, context.shard_n)
          : std::string("provenance.json");
  return WriteFileAtomically(
      (fs::path(dir) / file).string(),
      j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

Result<ConfigNode> LoadRunTree(const ScenarioArgs& args, int64_t seeds) {
  auto tree = LoadScenarioTree({args.scenario, args.sets});
  if (!tree.ok()) return tree.status();
  for (const std::string& note : FixSweptKeys(tree.value(), args.sets)) {
    std::cerr << "kvsim: note: " << note << "\n";
  }
  if (seeds > 0) SetSweepSeeds(tree.value(), seeds);
  PinScenarioTree(tree.value(), ScenarioSource(args));
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

std::string ScenarioSource(const ScenarioArgs& args) {
  return args.scenario.empty() ? std::string("<built-in>/") + kDefaultScenarioPath
                               : args.scenario;
}

}  // namespace kvsim::cli
