#include "sim/run/provenance.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sim/json_text.h"
#include "sim/output_file.h"

namespace kvsim {
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

std::string SeedOf(const ConfigNode& tree) {
  if (const ConfigNode* s = tree.Find("seed"); s && s->is_scalar()) return s->scalar;
  return "0";  // the scenario default
}

std::string SourceOf(const ProvenanceContext& c) {
  return c.scenario.empty() ? "<built-in default>" : c.scenario;
}

}  // namespace

std::string ProvenanceJsonText(const ConfigNode& tree, const std::string& scenario_hash,
                               int64_t points, const ProvenanceContext& context) {
  nlohmann::ordered_json j;
  j["kvsim_version"] = context.version;
  j["command"] = context.command;
  j["scenario"] = SourceOf(context);
  j["overrides"] = context.overrides;
  j["seed"] = SeedOf(tree);
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
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

Status WriteProvenance(const std::string& dir, const ConfigNode& tree,
                       const std::string& scenario_hash, int64_t points,
                       const ProvenanceContext& context) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::Error("io_error", dir + ": cannot create directory: " + ec.message());
  // The tree as run: includes are merged in already. It is written unchanged (defaults are
  // not added) so that it hashes to the same scenario_hash and sweep_id when rerun.
  // No version here (it is in provenance.json): this file depends on the scenario only.
  std::string header = "# scenario: " + SourceOf(context) + "\n# scenario_hash: " +
                       scenario_hash + "\n# seed: " + SeedOf(tree) + "\n";
  for (const auto& o : context.overrides) header += "# --set " + o + "\n";
  header += "# Includes and --set applied; `kvsim " + context.command +
            " scenario.resolved.yaml` reproduces this run.\n";
  if (Status w = WriteFileAtomically((fs::path(dir) / "scenario.resolved.yaml").string(),
                                     header + ToExactYaml(tree));
      !w.ok()) {
    return w;
  }
  const std::string file =
      context.shard_n > 1
          ? fmt::format("provenance.shard-{}-of-{}.json", context.shard_k, context.shard_n)
          : std::string("provenance.json");
  return WriteFileAtomically((fs::path(dir) / file).string(),
                             ProvenanceJsonText(tree, scenario_hash, points, context) + "\n");
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

}  // namespace kvsim
