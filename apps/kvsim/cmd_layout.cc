// kvsim layout: print the KV cache plan of a scenario.
#include <iostream>

#include "apps/kvsim/commands.h"
#include "sim/report/plan_report.h"
#include "sim/scenario/scenario_loader.h"

namespace kvsim::cli {
namespace {

struct LayoutArgs {
  ScenarioArgs scenario;
  std::string model;
  int64_t tp = 0;
  int64_t block_size = -1;
  int64_t pack = 0;
  std::string kv_dtype;
  bool json = false;
};

void RunLayout(const LayoutArgs& a) {
  LoadOptions opts;
  opts.path = a.scenario.scenario;
  if (!a.model.empty()) opts.overrides.push_back("model.preset=" + a.model);
  if (a.tp > 0) opts.overrides.push_back("parallel.tp=" + std::to_string(a.tp));
  if (a.block_size >= 0) opts.overrides.push_back("cache.block_size=" + std::to_string(a.block_size));
  if (a.pack > 0) opts.overrides.push_back("cache.attn_pack_size=" + std::to_string(a.pack));
  if (!a.kv_dtype.empty()) opts.overrides.push_back("cache.kv_dtype=" + a.kv_dtype);
  for (const auto& s : a.scenario.sets) opts.overrides.push_back(s);
  auto sc = LoadScenario(opts);
  if (!sc.ok()) {
    ReportError(sc.status(), a.json);
    return;
  }
  auto plan = sc->Plan();
  if (!plan.ok()) {
    ReportError(plan.status(), a.json);
    return;
  }
  if (a.json) {
    std::cout << PlanToJson(sc.value(), plan.value()).dump(2) << "\n";
  } else {
    std::cout << FormatPlan(sc.value(), plan.value());
  }
}

}  // namespace

void RegisterLayout(CLI::App& app) {
  static LayoutArgs args;
  CLI::App* cmd = app.add_subcommand("layout", "print the KV cache plan of a scenario");
  AddScenarioArgs(cmd, &args.scenario);
  cmd->add_option("--model", args.model, "model preset (replaces the scenario's model)");
  cmd->add_option("--tp", args.tp, "tensor-parallel size");
  cmd->add_option("--block-size", args.block_size, "cache.block_size (0 = backend default)");
  cmd->add_option("--attn-pack-size", args.pack, "cache.attn_pack_size");
  cmd->add_option("--kv-dtype", args.kv_dtype, "cache.kv_dtype");
  cmd->add_flag("--json", args.json, "print one JSON object");
  cmd->callback([] { RunLayout(args); });
}

}  // namespace kvsim::cli
