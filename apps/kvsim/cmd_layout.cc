// kvsim layout: print the KV cache plan of a scenario.
#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/kvsim/commands.h"
#include "sim/report/plan_report.h"
#include "sim/scenario/scenario_loader.h"
#include "sim/sweep/sweep_spec.h"

namespace kvsim::cli {
namespace {

// The flags are shorthands for --set: a flag that was given becomes its override whatever
// its value, so the scenario loader range-checks it exactly as it checks --set (a sentinel
// value meaning "not given" would silently swallow --tp 0 or --block-size -1).
struct LayoutArgs {
  ScenarioArgs scenario;
  std::string model;
  std::string hf_config;
  int64_t tp = 0;
  int64_t block_size = 0;
  int64_t pack = 0;
  std::string kv_dtype;
  bool json = false;
  CLI::Option* tp_flag = nullptr;
  CLI::Option* block_flag = nullptr;
  CLI::Option* pack_flag = nullptr;
};

void RunLayout(const LayoutArgs& a) {
  LoadOptions opts;
  opts.path = a.scenario.scenario;
  // A flag's errors name the flag as typed, not the --set it stands for.
  auto flag = [&](const std::string& name, const std::string& key, const std::string& value) {
    opts.overrides.push_back(key + "=" + value);
    opts.override_labels.push_back(name + " " + value);
  };
  if (!a.model.empty()) flag("--model", "model.preset", a.model);
  if (!a.hf_config.empty()) {
    // The whole model section is replaced (a scenario's preset and hf_config cannot mix).
    flag("--hf-config", "model", "{hf_config: " + nlohmann::json(a.hf_config).dump() + "}");
  }
  if (a.tp_flag->count() > 0) flag("--tp", "parallel.tp", std::to_string(a.tp));
  if (a.block_flag->count() > 0) flag("--block-size", "cache.block_size", std::to_string(a.block_size));
  if (a.pack_flag->count() > 0) flag("--attn-pack-size", "cache.attn_pack_size", std::to_string(a.pack));
  if (!a.kv_dtype.empty()) flag("--kv-dtype", "cache.kv_dtype", a.kv_dtype);
  for (const auto& s : a.scenario.sets) opts.overrides.push_back(s);
  // The sweep block is checked as `kvsim run` checks it before running (its axes, and the
  // first point's scenario: a misspelt swept key); the plan shown is the base point's.
  auto tree = LoadScenarioTree(opts);
  if (!tree.ok()) {
    ReportError(tree.status(), a.json);
    return;
  }
  for (const std::string& note : FixSweptKeys(tree.value(), opts.overrides)) {
    std::cerr << "kvsim: note: " << note << "\n";
  }
  const std::string source = ScenarioSource(a.scenario);
  auto points = ExpandSweep(tree.value());
  if (!points.ok()) {
    ReportError(points.status(), a.json);
    return;
  }
  if (points->size() > 1) {
    if (auto first = ParseScenario(points->front().tree, source); !first.ok()) {
      ReportError(first.status(), a.json);
      return;
    }
  }
  auto sc = ParseScenario(tree.value(), source);
  if (!sc.ok()) {
    ReportError(sc.status(), a.json);
    return;
  }
  auto plan = sc->Plan();
  if (!plan.ok()) {
    ReportError(plan.status(), a.json);
    return;
  }
  // What `kvsim run` would refuse, layout refuses too (one validation for both).
  if (Status v = ValidateScenario(sc.value()); !v.ok()) {
    ReportError(v, a.json);
    return;
  }
  for (const std::string& note : ScenarioNotes(sc.value())) {
    std::cerr << "kvsim: note: " << note << "\n";
  }
  if (a.json) {
    std::cout << PlanToJson(sc.value(), plan.value()).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
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
  cmd->add_option("--hf-config", args.hf_config,
                  "a Hugging Face config.json (replaces the scenario's model; the supported "
                  "architectures are in the README's model section)")
      ->excludes("--model");
  args.tp_flag = cmd->add_option("--tp", args.tp, "tensor-parallel size (parallel.tp)");
  args.block_flag =
      cmd->add_option("--block-size", args.block_size, "cache.block_size (0 = backend default)");
  args.pack_flag = cmd->add_option("--attn-pack-size", args.pack, "cache.attn_pack_size");
  cmd->add_option("--kv-dtype", args.kv_dtype, "cache.kv_dtype");
  cmd->add_flag("--json", args.json, "print one JSON object");
  cmd->callback([] { RunLayout(args); });
}

}  // namespace kvsim::cli
