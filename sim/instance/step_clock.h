// The step clock: vLLM's scheduler driven one decision per step, with no cost model — the
// engine of `kvsim schedule`. It feeds requests with arrival steps to an InstanceCore on a
// unit clock (sim/instance/instance_core.h: the same step, scheduler and KV cache manager
// `kvsim run` uses) and reports every decision as a step-log record
// (../shared/reference/step-log.md, mirrored in docs/step-log.md; sim/instance/step_log_io.h
// reads the requests and writes the records): who was scheduled with how many tokens, who was
// preempted, who finished, and the free blocks after the decision. This file owns only the
// clock: arrivals, idle gaps, the summary and the two ways a run fails.
//
// The clock (step-log.md §2): before decision k every request with arrival_step ≤ k joins
// WAITING in arrival order; one record per decision while any request is unfinished; when
// none is, the clock jumps to the next arrival. A step samples token 1000000 + k for every
// request whose chunk reaches its known tokens. Sync: decide k, apply k. Async: decide k+1,
// then apply k (the record of step k is complete then).
//
// With a CPU offloading tier (step-log.md §8, sim/instance/offload_driver.h) each decision
// also plans the tier's stores; loads and stores are reported finished with the outputs of a
// later step (--xfer-timing). When nothing is unfinished but requests finished since the last
// decision (or copies are still in flight), the clock makes vLLM's "flush" decision (no
// record) before it idles; async, the outputs of the step still in flight are applied (and
// its record completed) before that decision, and both before the next arrival is decided
// (docs/step-log.md, "A finished request's last stores, empty steps and idle gaps").
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/kv_cache_manager.h"
#include "core/offload/offload_connector.h"
#include "core/status.h"
#include "sim/instance/offload_driver.h"
#include "sim/instance/step_log_io.h"
#include "sim/scheduler/scheduler.h"

namespace kvsim {

// Sees the instance's KV cache manager (and the CPU tier's driver, or null) each time a record
// is complete, before the sink gets it: the viewer snapshots the pools of every step with it.
using StepPoolObserver =
    std::function<void(const StepRecord&, const KvCacheManager&, const OffloadDriver*)>;

struct StepClockConfig {
  KvCacheManagerConfig kv;  // one full-attention group at the scheduler's block size, usually
  SchedulerParams sched;    // sched.async_scheduling picks the clock's mode
  // vLLM's CPU offloading tier (step-log.md §8); nullopt = none. Its semantics follow kv's.
  std::optional<OffloadConnectorConfig> offload;
  XferTiming xfer_timing = XferTiming::kInstant;
  int64_t watermark_blocks = 0;  // [latest] int(watermark · num_gpu_blocks)
  StepPoolObserver observer;  // optional
  int64_t max_steps = int64_t{1} << 31;  // a bound, not a knob: a run past it is an error
  std::string source;  // REQUESTS.jsonl's path, which errors name with the request's line
};

// Runs every request to completion, calling `sink` once per step in step order. Fails with
// code "never_scheduled" (bad input, naming config.source and the request's line) when a
// waiting request can never be admitted and nothing else can change that, and "stuck" past
// config.max_steps.
Result<StepClockSummary> RunStepClock(const std::vector<StepRequest>& requests,
                                      const StepClockConfig& config, const StepRecordSink& sink);

}  // namespace kvsim
