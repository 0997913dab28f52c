// layout, schedule and replay: `kvsim layout` (apps/kvsim/cmd_layout.cc), `kvsim schedule`
// (cmd_schedule.cc) and the cache-only form of `kvsim replay` (cmd_replay.cc) over the same
// library functions. The plan and the summaries come back as JSON text (the CLI's --json), the
// step records as columns.
#include <pybind11/stl.h>

#include <cstdio>
#include <optional>
#include <nlohmann/json.hpp>

#include "python/src/common.h"
#include "sim/replay/replay.h"
#include "sim/report/plan_report.h"
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

// The cache-only replay: the trace through one full-attention group (plus `hybrid`'s, as
// --hybrid) of `num_blocks` blocks of `block_size` tokens. Returns the totals as a dict and,
// with per_request, the outcomes as columns.
pyb::dict ReplayTrace(const std::string& trace_path, int64_t block_size, int64_t num_blocks,
                      const std::string& hybrid, const std::string& semantics,
                      int64_t concurrency, bool per_request) {
  auto bad = [](const std::string& msg) { Raise(Status::Error("bad_flags", "replay: " + msg)); };
  if (block_size <= 0) bad("--block-size must be a positive integer");
  if (num_blocks < 2) bad("give the cache capacity: --num-blocks N (N >= 2)");
  if (concurrency < 0) bad("--concurrency must be positive");
  KvCacheManagerConfig cfg = Unwrap(KvCacheManagerConfigFromHybrid(hybrid, block_size, 2));
  if (semantics == "classic") cfg.semantics = VllmSemantics::kClassic;
  cfg.num_blocks = num_blocks;
  if (Status s = cfg.Validate(); !s.ok()) Raise(s);
  const RequestTrace trace = Unwrap(RequestTrace::ReadFile(trace_path));
  if (trace.size() == 0) Raise(Status::Error("bad_trace", trace_path + ": no requests in the trace"));
  ReplayOptions opts;
  opts.concurrency = concurrency;
  opts.per_request = per_request;
  ReplayResult r;
  {
    pyb::gil_scoped_release release;
    r = Replay(trace, cfg, opts);
  }
  pyb::dict d;
  d["requests"] = r.requests;
  d["served"] = r.served;
  d["not_served"] = r.not_served;
  d["prompt_tokens"] = r.prompt_tokens;
  d["hit_tokens"] = r.hit_tokens;
  d["hit_rate"] = r.hit_rate();
  d["block_size"] = cfg.scheduler_block_size();
  d["num_blocks"] = cfg.num_blocks;
  pyb::dict outcomes;
  if (per_request) {
    pyb::list id, prompt, hit, served;
    for (const RequestOutcome& o : r.outcomes) {
      id.append(trace[o.index].id);
      prompt.append(o.prompt_tokens);
      hit.append(o.hit_tokens);
      served.append(o.served);
    }
    outcomes["id"] = id;
    outcomes["prompt_tokens"] = prompt;
    outcomes["hit_tokens"] = hit;
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
  m.def("replay", &ReplayTrace, arg("trace"), arg("block_size"), arg("num_blocks"),
        arg("hybrid"), arg("semantics"), arg("concurrency"), arg("per_request"));
}

}  // namespace kvsim::py
