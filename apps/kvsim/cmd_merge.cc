// kvsim merge OUT.csv SHARD.csv... [--allow-missing]: joins the CSVs of a sharded sweep
// (`kvsim sweep --shard`) into one, sorted by point index; duplicated points must agree.
// Strict: a shard of another sweep exits 2 naming it; missing points exit 1 naming them
// and write nothing (--allow-missing writes the rest with a warning, exit 0).
#include <iostream>

#include "apps/kvsim/commands.h"
#include "sim/sweep/sweep_runner.h"

namespace kvsim::cli {

void RegisterMerge(CLI::App& app) {
  static std::string out;
  static std::vector<std::string> inputs;
  static bool allow_missing = false;
  CLI::App* cmd = app.add_subcommand("merge", "join shard CSVs of a sweep into one CSV");
  cmd->add_option("out", out, "merged CSV to write")->required();
  cmd->add_option("inputs", inputs, "shard CSVs (kvsim sweep --shard K/N)")->required();
  cmd->add_flag("--allow-missing", allow_missing,
                "write the merged CSV even when points are missing (warns; exit 0)");
  cmd->callback([] {
    Status s = MergeSweepCsvs(inputs, out, std::cerr, allow_missing);
    if (!s.ok()) {
      ReportError(s, false);
      if (s.code() == "missing_points") ExitCode() = 1;  // incomplete, not bad input
    }
  });
}

}  // namespace kvsim::cli
