// kvsim: the command-line front end. Each subcommand lives in its own cmd_*.cc; this file is
// the registry that lists them.
#include "apps/kvsim/commands.h"
#include "apps/kvsim/version.h"

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
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return kvsim::cli::ExitCode();
}
