// kvsim schedule: vLLM's scheduler with a step clock. Reads REQUESTS.jsonl (id, tokens,
// max_tokens, arrival_step, priority), runs them through the same scheduler and KV cache
// manager as `kvsim run`, one decision per step, and writes one step-log record per step
// plus a summary line (docs/step-log.md), so its decisions can be compared with vLLM's own
// Scheduler step by step.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <iostream>

#include "apps/kvsim/commands.h"
#include "core/kv_cache_manager.h"
#include "core/vllm_semantics.h"
#include "sim/instance/schedule_options.h"
#include "sim/instance/step_clock.h"
#include "sim/instance_builder.h"
#include "sim/scenario/scenario_loader.h"

namespace kvsim::cli {
namespace {

// The command's inputs: the step clock's flags (sim/instance/schedule_options.h), the log and
// the output mode.
struct ScheduleArgs : ScheduleOptions {
  std::string step_log;
  bool json = false;
  // --scenario FILE: the KV plan, scheduler and CPU tier come from the scenario (with --set);
  // the flags that would say the same are refused.
  ScenarioArgs scenario;
  std::vector<std::string> flags_set;  // the scenario-conflicting flags given
};

// The step clock's configuration: from the flags, or from --scenario.
Result<StepClockConfig> ScheduleConfig(const ScheduleArgs& a) {
  if (a.scenario.scenario.empty()) {
    if (!a.scenario.sets.empty()) {
      return Status::Error("bad_flags", "schedule: --set needs --scenario FILE");
    }
    return MakeStepClockConfig(a);
  }
  if (!a.flags_set.empty()) {
    std::string flags;
    for (const std::string& f : a.flags_set) flags += (flags.empty() ? "" : ", ") + f;
    return Status::Error("bad_flags", "schedule: " + flags +
                                          ": the scenario gives the KV cache, the scheduler and "
                                          "the CPU tier; change them with --set");
  }
  auto sc = LoadScenario({a.scenario.scenario, a.scenario.sets});
  if (!sc.ok()) return sc.status();
  auto c = StepClockConfigFromScenario(
      sc.value(), a.xfer_timing == "next-step" ? XferTiming::kNextStep : XferTiming::kInstant);
  if (!c.ok()) return c.status();
  c->source = a.requests;
  return c;
}

void RunSchedule(const ScheduleArgs& a) {
  auto cfg = ScheduleConfig(a);
  if (!cfg.ok()) {
    ReportError(cfg.status(), a.json);
    return;
  }
  const int64_t max_model_len =
      a.scenario.scenario.empty() || cfg->kv.max_model_len <= 0 ? a.max_model_len
                                                                : cfg->kv.max_model_len;
  auto requests = ReadStepRequests(a.requests, max_model_len);
  if (!requests.ok()) {
    ReportError(requests.status(), a.json);
    return;
  }
  std::FILE* log = nullptr;
  if (!a.step_log.empty()) {
    log = a.step_log == "-" ? stdout : std::fopen(a.step_log.c_str(), "w");
    if (!log) {
      std::cerr << "kvsim: error: schedule: cannot write " << a.step_log << "\n";
      ExitCode() = 4;
      return;
    }
  }
  bool write_failed = false;
  auto sink = [&](const StepRecord& r) {
    if (!log) return;
    const std::string line = StepRecordJson(r, requests.value()) + "\n";
    write_failed |= std::fwrite(line.data(), 1, line.size(), log) != line.size();
  };
  auto summary = RunStepClock(requests.value(), cfg.value(), sink);
  if (!summary.ok()) {
    if (log && log != stdout) std::fclose(log);
    // A request that can never be scheduled is bad input (exit 2, naming its line);
    // running past the step bound is kvsim's failure (exit 1).
    if (summary.status().code() == "stuck") {
      std::cerr << "kvsim: error: schedule: " << summary.status().message() << "\n";
      ExitCode() = 1;
      return;
    }
    ReportError(summary.status(), a.json);
    return;
  }
  const std::string summary_json = StepSummaryJson(summary.value(), requests.value());
  if (log) {
    const std::string line = summary_json + "\n";
    write_failed |= std::fwrite(line.data(), 1, line.size(), log) != line.size();
    if (log != stdout) write_failed |= std::fclose(log) != 0;
  }
  if (write_failed) {
    std::cerr << "kvsim: error: schedule: writing " << a.step_log << " failed\n";
    ExitCode() = 4;
    return;
  }
  if (a.json) {
    std::cout << summary_json << "\n";
    return;
  }
  const StepClockSummary& s = summary.value();
  int64_t prompt = 0, hits = 0;
  for (size_t i = 0; i < s.per_request.size(); ++i) {
    prompt += static_cast<int64_t>(requests.value()[i].tokens.size());
    hits += std::max<int64_t>(0, s.per_request[i].hit_tokens);
  }
  const StepClockConfig& c = cfg.value();
  std::string groups;
  for (const KvGroupConfig& g : c.kv.groups) {
    groups += (groups.empty() ? "" : " + ") + std::string(KvGroupKindName(g.kind));
    if (g.kind == KvGroupKind::kSlidingWindow) groups += fmt::format(" {}", g.sliding_window);
  }
  std::cout << fmt::format(
      "schedule {}: {} requests, {} steps (last step {}), {} preemptions; block {} x {} blocks "
      "({}), budget {} tokens / {} seqs, {} {}, {} semantics\n",
      a.requests, requests->size(), s.steps, s.last_step, s.total_preemptions,
      c.kv.scheduler_block_size(), c.kv.num_blocks, groups, c.sched.max_num_batched_tokens,
      c.sched.max_num_seqs,
      c.sched.policy == SchedulingPolicy::kPriority ? "priority" : "fcfs",
      c.sched.async_scheduling ? "async" : "sync",
      c.kv.semantics == VllmSemantics::kClassic ? "classic" : "latest");
  std::cout << fmt::format("  prompt tokens {}  first-admission hit tokens {}  hit rate {:.4f}\n",
                           prompt, hits, prompt ? static_cast<double>(hits) / prompt : 0.0);
  if (s.has_offload) {
    int64_t gpu = 0, cpu = 0;
    for (const StepRequestSummary& r : s.per_request) {
      gpu += std::max<int64_t>(0, r.gpu_hit_tokens);
      cpu += std::max<int64_t>(0, r.cpu_hit_tokens);
    }
    std::cout << fmt::format(
        "  CPU tier {} blocks of {} tokens ({}, {} copies): first-admission GPU hits {}, CPU "
        "hits {}\n",
        c.offload->tier.num_blocks, c.offload->offloaded_block_size(),
        a.eviction_policy, a.xfer_timing, gpu, cpu);
  }
  if (!a.step_log.empty() && a.step_log != "-") {
    std::cout << "  step log: " << a.step_log << "\n";
  }
}

}  // namespace

void RegisterSchedule(CLI::App& app) {
  auto args = std::make_shared<ScheduleArgs>();
  CLI::App* cmd = app.add_subcommand(
      "schedule",
      "vLLM's scheduler with a step clock: one decision per step, written as step-log records "
      "(docs/step-log.md) for a step-by-step comparison with vLLM");
  cmd->add_option("requests", args->requests,
                  "REQUESTS.jsonl: {\"id\", \"tokens\", \"max_tokens\", \"arrival_step\", "
                  "\"priority\"} per line")
      ->required();
  cmd->add_option("--step-log", args->step_log, "write the step log (JSONL; - for stdout)");
  cmd->add_option("--block-size", args->block_size, "tokens per KV block")->capture_default_str();
  cmd->add_option("--num-gpu-blocks", args->num_gpu_blocks,
                  "total KV blocks; N - 1 are usable (block 0 is the null block); required "
                  "without --scenario");
  cmd->add_option("--hybrid", args->hybrid,
                  "a second KV cache group beside full attention, as kvsim replay takes it: "
                  "mamba-align, mamba-all or swa:W (a W-token sliding window)");
  cmd->add_option("--scenario", args->scenario.scenario,
                  "take the KV cache (every group of the model's plan: sliding window, Mamba, "
                  "attention packs), the scheduler and the CPU tier from a scenario file, as "
                  "kvsim run builds them");
  cmd->add_option("--set", args->scenario.sets,
                  "with --scenario, override a scenario key: --set cache.block_size=32")
      ->type_name("KEY=VALUE");
  cmd->add_option("--max-num-batched-tokens", args->max_num_batched_tokens,
                  "token budget per step")
      ->capture_default_str();
  cmd->add_option("--max-num-seqs", args->max_num_seqs, "maximum running requests")
      ->capture_default_str();
  AddOnOffFlag(cmd, "enable-prefix-caching", &args->prefix_caching,
                "prefix caching (default on)");
  AddOnOffFlag(cmd, "chunked-prefill", &args->chunked_prefill,
                "chunked prefill (default on)");
  cmd->add_option("--long-prefill-token-threshold", args->long_prefill_token_threshold,
                  "cap on one request's chunk (0 = off)")
      ->capture_default_str();
  cmd->add_option("--max-model-len", args->max_model_len,
                  "longest sequence (0 = no limit); prompts must be shorter")
      ->capture_default_str();
  cmd->add_option("--policy", args->policy, "fcfs or priority (lower priority value first)")
      ->check(CLI::IsMember({"fcfs", "priority"}))
      ->capture_default_str();
  AddOnOffFlag(cmd, "async-scheduling", &args->async_scheduling,
                "decide step k+1 before step k's outputs are applied (default off here)");
  AddOnOffFlag(cmd, "reserve-full-isl", &args->reserve_full_isl,
                "admit a waiting request only if its whole prompt fits (default on)");
  cmd->add_option("--vllm-semantics", args->semantics,
                  "free-queue profile: classic (2026-05) or latest (2026-08-18)")
      ->check(CLI::IsMember({"classic", "latest"}))
      ->capture_default_str();
  cmd->add_option("--watermark", args->watermark,
                  "[latest] admit a waiting request only if int(F * num_gpu_blocks) blocks stay "
                  "free beyond it while others run (vLLM's SchedulerConfig.watermark; 0 = off)")
      ->capture_default_str();
  cmd->add_option("--num-cpu-blocks", args->num_cpu_blocks,
                  "CPU offloading tier size in offloaded blocks (0 = no tier; step-log.md §8)")
      ->capture_default_str();
  cmd->add_option("--offload-block-size", args->offload_block_size,
                  "tokens per offloaded block, a multiple of --block-size (0 = equal)")
      ->capture_default_str();
  cmd->add_option("--eviction-policy", args->eviction_policy, "the CPU tier's policy: lru or arc")
      ->check(CLI::IsMember({"lru", "arc"}))
      ->capture_default_str();
  cmd->add_option("--store-threshold", args->store_threshold,
                  "store a block only after it was looked up N times (below 2: every block)")
      ->capture_default_str();
  cmd->add_option("--xfer-timing", args->xfer_timing,
                  "a GPU<->CPU copy is reported finished with the output of the step that "
                  "started it (instant) or of the next one (next-step)")
      ->check(CLI::IsMember({"instant", "next-step"}))
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "print the summary line as JSON on stdout");
  cmd->callback([args, cmd] {
    args->flags_set.clear();
    for (const char* f : {"--block-size", "--num-gpu-blocks", "--hybrid", "--max-num-batched-tokens",
                          "--max-num-seqs", "--long-prefill-token-threshold", "--max-model-len",
                          "--policy", "--vllm-semantics", "--watermark", "--num-cpu-blocks",
                          "--offload-block-size", "--eviction-policy", "--store-threshold",
                          "--enable-prefix-caching", "--no-enable-prefix-caching",
                          "--chunked-prefill", "--no-chunked-prefill", "--async-scheduling",
                          "--no-async-scheduling", "--reserve-full-isl", "--no-reserve-full-isl"}) {
      if (cmd->count(f) > 0) args->flags_set.push_back(f);
    }
    RunSchedule(*args);
  });
}

}  // namespace kvsim::cli
