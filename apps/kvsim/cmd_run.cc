// kvsim run: until the simulator lands, prints the plan of the scenario (as `layout`).
#include <iostream>

#include "apps/kvsim/commands.h"
#include "sim/cluster/cluster_setup.h"
#include "sim/report/plan_report.h"
#include "sim/scenario/scenario_loader.h"

namespace kvsim::cli {

void RegisterRun(CLI::App& app) {
  static ScenarioArgs args;
  CLI::App* cmd = app.add_subcommand("run", "run a scenario (default: the built-in study)");
  AddScenarioArgs(cmd, &args);
  cmd->callback([] {
    LoadOptions opts{args.scenario, args.sets};
    auto sc = LoadScenario(opts);
    if (!sc.ok()) return (void)ReportError(sc.status(), false);
    if (sc->cluster.enabled) {  // P/D cluster (sim/cluster)
      auto setup = BuildClusterSetup(sc.value());
      if (!setup.ok()) return (void)ReportError(setup.status(), false);
      std::cout << FormatClusterSetup(sc.value(), setup.value());
      return;
    }
    auto plan = sc->Plan();
    if (!plan.ok()) return (void)ReportError(plan.status(), false);
    std::cout << FormatPlan(sc.value(), plan.value());
  });
}

}  // namespace kvsim::cli
