// layout, schedule and replay: `kvsim layout` (apps/kvsim/cmd_layout.cc), `kvsim schedule`
// (cmd_schedule.cc) and `kvsim replay` (cmd_replay.cc, every form) over the same library
// functions. The plan and the summaries come back as JSON text (the CLI's --json), the
// step records as columns.
#include <pybind11/stl.h>

#include <cstdio>
#include <optional>
#include <nlohmann/json.hpp>

#include "python/src/common.h"
#include "sim/report/plan_report.h"
#include "sim/run/replay_command.h"
#include "sim/run/scenario_checks.h"
#include "sim/instance/schedule_options.h"
#include "sim/scenario/scenario_loader.h"
#include "sim/sweep/run_tree.h"
#include "sim/sweep/sweep_spec.h"
#include "sim/trace/request_trace.h"

namespace kvsim::py {
namespace {

std::string Dump(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

// As `kvsim layout SCENARIO --set ...`: the base point's plan, after the checks `kvsim run`
// makes. Returns (plan JSON text, the plan as `kvsim layout` prints it).
pyb::tuple Layout(const std::string& scenario, const std::vector<std::string>& overrides) {
  LoadOptions opts{scenario, overrides};
  ConfigNode tree = Unwrap(LoadScenarioTree(opts));
  FixSweptKeys(tree, opts.overrides);
  const std::string source = ScenarioSourceName(scenario);
  const std::vector<SweepPoint> points = Unwrap(ExpandSweep(tree));
  if (points.size() > 1) Unwrap(ParseScenario(points.front().tree, source));
  const Scenario sc = Unwrap(ParseScenario(tree, source));
  const KvCachePlan plan = Unwrap(sc.Plan());
  if (Status v = ValidateScenario(sc); !v.ok()) Raise(v);
  return pyb::make_tuple(Dump(PlanToJson(sc, plan)), FormatPlan(sc, plan));
}

// As `kvsim schedule`: `requests_text` is REQUESTS.jsonl's text, or "" to read o.requests.
// With `step_log`, writes the file `--step-log` writes. Returns (step columns, summary JSON).
pyb::tuple Schedule(const ScheduleOptions& o, const std::string& requests_text,
                    const std::string& step_log) {
  const StepClockConfig cfg = Unwrap(MakeStepClockConfig(o));
  const std::vector<StepRequest> requests =
      requests_text.empty()
          ? Unwrap(ReadStepRequests(o.requests, o.max_model_len))
          : Unwrap(ParseStepRequests(requests_text, o.requests, o.max_model_len));
  std::vector<StepRecord> records;
  std::optional<Result<StepClockSummary>> summary;
  std::string log;
  {
    pyb::gil_scoped_release release;
    summary = RunStepClock(requests, cfg, [&](const StepRecord& r) {
      if (!step_log.empty()) log += StepRecordJson(r, requests) + "\n";
      records.push_back(r);
    });
  }
  const StepClockSummary done = Unwrap(std::move(*summary));
  const std::string summary_json = StepSummaryJson(done, requests);
  if (!step_log.empty()) {
    log += summary_json + "\n";
    std::FILE* f = std::fopen(step_log.c_str(), "w");
    const bool ok = f != nullptr && std::fwrite(log.data(), 1, log.size(), f) == log.size();
    if (f == nullptr || std::fclose(f) != 0 || !ok) {
      Raise(Status::Error("write_failed", "schedule: writing " + step_log + " failed"));
    }
  }
  pyb::dict cols = StepColumns(records, pyb::dict(), false, &requests);
  return pyb::make_tuple(cols, summary_json);
}

// As `kvsim replay` with these flags (sim/run/replay_command.h: every form the CLI takes).
// Returns what the CLI prints (the --json object and the text), the --per-request file's text
// and, with per_request, each request's outcome as columns; the replay runs without the GIL.
pyb::dict ReplayTrace(const ReplayFlags& flags) {
  std::optional<Result<ReplayRun>> ran;
  {
    pyb::gil_scoped_release release;
    ran = RunReplayCommand(flags);
  }
  const ReplayRun run = Unwrap(std::move(*ran));
  pyb::dict d;
  d["json"] = ReplayJson(run);
  d["text"] = ReplayText(flags, run);
  d["note"] = run.note;
  d["none_served"] = ReplayNoneServedMessage(run);
  d["per_request"] = flags.per_request && !run.curve ? ReplayPerRequestJsonl(run) : "";
  pyb::dict outcomes;
  if (flags.per_request && !run.curve) {
    pyb::list id, prompt, hit, cpu_hit, served;
    for (const RequestOutcome& o : run.result.outcomes) {
      id.append(run.trace[o.index].id);
      prompt.append(o.prompt_tokens);
      hit.append(o.hit_tokens);
      cpu_hit.append(o.cpu_hit_tokens);
      served.append(o.served);
    }
    outcomes["id"] = id;
    outcomes["prompt_tokens"] = prompt;
    outcomes["hit_tokens"] = hit;
    if (run.offload) outcomes["cpu_hit_tokens"] = cpu_hit;
    outcomes["served"] = served;
  }
  d["outcomes"] = outcomes;
  return d;
}

}  // namespace

void BindSchedule(pyb::module_& m) {
  using pyb::arg;
  m.def("layout", &Layout, arg("scenario"), arg("overrides"));
  pyb::class_<ScheduleOptions>(m, "ScheduleOptions")
      .def(pyb::init<>())
      .def_readwrite("requests", &ScheduleOptions::requests)
      .def_readwrite("block_size", &ScheduleOptions::block_size)
      .def_readwrite("num_gpu_blocks", &ScheduleOptions::num_gpu_blocks)
      .def_readwrite("max_num_batched_tokens", &ScheduleOptions::max_num_batched_tokens)
      .def_readwrite("max_num_seqs", &ScheduleOptions::max_num_seqs)
      .def_readwrite("long_prefill_token_threshold",
                     &ScheduleOptions::long_prefill_token_threshold)
      .def_readwrite("max_model_len", &ScheduleOptions::max_model_len)
      .def_readwrite("prefix_caching", &ScheduleOptions::prefix_caching)
      .def_readwrite("chunked_prefill", &ScheduleOptions::chunked_prefill)
      .def_readwrite("async_scheduling", &ScheduleOptions::async_scheduling)
      .def_readwrite("reserve_full_isl", &ScheduleOptions::reserve_full_isl)
      .def_readwrite("policy", &ScheduleOptions::policy)
      .def_readwrite("semantics", &ScheduleOptions::semantics)
      .def_readwrite("watermark", &ScheduleOptions::watermark)
      .def_readwrite("num_cpu_blocks", &ScheduleOptions::num_cpu_blocks)
      .def_readwrite("offload_block_size", &ScheduleOptions::offload_block_size)
      .def_readwrite("eviction_policy", &ScheduleOptions::eviction_policy)
      .def_readwrite("store_threshold", &ScheduleOptions::store_threshold)
      .def_readwrite("xfer_timing", &ScheduleOptions::xfer_timing)
      .def("command_line", &ScheduleOptions::CommandLine);
  m.def("schedule", &Schedule, arg("options"), arg("requests_text"), arg("step_log"));
  pyb::class_<ReplayFlags>(m, "ReplayFlags")
      .def(pyb::init<>())
      .def_readwrite("trace", &ReplayFlags::trace)
      .def_readwrite("block_size", &ReplayFlags::block_size)
      .def_readwrite("num_blocks", &ReplayFlags::num_blocks)
      .def_readwrite("cache_tokens", &ReplayFlags::cache_tokens)
      .def_readwrite("concurrency", &ReplayFlags::concurrency)
      .def_readwrite("hybrid", &ReplayFlags::hybrid)
      .def_readwrite("model", &ReplayFlags::model)
      .def_readwrite("scenario", &ReplayFlags::scenario)
      .def_readwrite("vllm_semantics", &ReplayFlags::semantics)
      .def_readwrite("prefix_cache_retention_interval", &ReplayFlags::retention)
      .def_readwrite("per_request", &ReplayFlags::per_request)
      .def_readwrite("curve", &ReplayFlags::curve)
      .def_readwrite("skip_bad_lines", &ReplayFlags::skip_bad_lines)
      .def_readwrite("num_cpu_blocks", &ReplayFlags::num_cpu_blocks)
      .def_readwrite("offload_block_size", &ReplayFlags::offload_block_size)
      .def_readwrite("eviction_policy", &ReplayFlags::eviction_policy)
      .def_readwrite("store_threshold", &ReplayFlags::store_threshold);
  m.def("replay", &ReplayTrace, arg("flags"));
}

}  // namespace kvsim::py
