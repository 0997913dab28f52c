// kvsim merge OUT.csv SHARD.csv...: joins the CSVs of a sharded sweep (`kvsim sweep --shard`)
// into one, sorted by point index; duplicated points must agree; gaps are reported.
#include <iostream>

#include "apps/kvsim/commands.h"
#include "sim/sweep/sweep_runner.h"

namespace kvsim::cli {

void RegisterMerge(CLI::App& app) {
  static std::string out;
  static std::vector<std::string> inputs;
  CLI::App* cmd = app.add_subcommand("merge", "join shard CSVs of a sweep into one CSV");
  cmd->add_option("out", out, "merged CSV to write")->required();
  cmd->add_option("inputs", inputs, "shard CSVs (kvsim sweep --shard K/N)")->required();
  cmd->callback([] {
    Status s = MergeSweepCsvs(inputs, out, std::cerr);
    if (!s.ok()) ReportError(s, false);
  });
}

}  // namespace kvsim::cli
