// kvsim: the command-line front end. Each subcommand lives in its own cmd_*.cc; this file is
// the registry that lists them.
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "apps/kvsim/commands.h"
#include "apps/kvsim/version.h"
#include "sim/config/config_reader.h"

int main(int argc, char** argv) {
  CLI::App app{
      "kvsim — how KV-cache block size, attention pack size and page padding change what an "
      "LLM server caches, reuses and sustains (vLLM v1 semantics)"};
  app.set_version_flag("--version", std::string("kvsim ") + KvsimVersion());
  app.require_subcommand(1);
  kvsim::cli::RegisterRun(app);
  kvsim::cli::RegisterSweep(app);
  kvsim::cli::RegisterMerge(app);
  kvsim::cli::RegisterLayout(app);
  kvsim::cli::RegisterList(app);
  kvsim::cli::RegisterGpuValidate(app);
  kvsim::cli::RegisterCalibrate(app);
  kvsim::cli::RegisterReplay(app);
  kvsim::cli::RegisterSchedule(app);
  // A first word that is no subcommand: say so, with the list and a did-you-mean (CLI11
  // would answer "A subcommand is required").
  if (argc > 1 && argv[1][0] != '-') {
    const std::string word = argv[1];
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      names.push_back(sub->get_name());
    }
    if (std::find(names.begin(), names.end(), word) == names.end()) {
      const std::string near = kvsim::ClosestMatch(word, names);
      std::string list;
      for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
      std::cerr << "kvsim: unknown subcommand '" << word << "'"
                << (near.empty() ? "" : " (did you mean " + near + "?)") << "; subcommands: " << list
                << " (kvsim --help)\n";
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return kvsim::cli::ExitCode();
}
