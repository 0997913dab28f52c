// A scenario (or one pool of a P/D scenario) made into the config of one simulated vLLM
// instance (sim/instance/instance_core.h): the one place where the scenario's cache,
// scheduler, spec and offload sections become the KV manager's config, the scheduler's
// params, the drafter and the CPU tier. Every driver builds its instances here; the instance
// itself never sees the Scenario.
#pragma once

#include <cstdint>

#include "core/kv_cache_manager.h"
#include "core/offload/offload_config.h"
#include "core/page_planner.h"
#include "core/status.h"
#include "sim/instance/instance_core.h"
#include "sim/instance/step_clock.h"
#include "sim/scenario_config.h"
#include "sim/scheduler/scheduler.h"
#include "sim/workload/rng.h"

namespace kvsim {

// The data-parallel ranks of a colocated scenario (parallel.dp): the engine runs one
// instance per rank behind vLLM's DP load balancer (sim/engine.h). 1 for a P/D cluster's
// instances.
int64_t DpRanks(const Scenario& sc);

// The manager config for `plan`, with the scenario's token budget and (when it drafts) its
// EAGLE flag, validated. A pool the manager cannot hold (2^30 blocks or more) is an error at
// the file, line and key that sized it (cache.num_gpu_blocks if given, else
// cache.kv_memory_bytes).
Result<KvCacheManagerConfig> EngineKvConfig(const Scenario& sc, const KvCachePlan& plan);

// The offloading connector configuration of a scenario with cache.offload, given its plan.
// cpu_bytes becomes blocks as vLLM's CPUOffloadingSpec counts them (classic floor; latest
// rounds the offloaded block's bytes up to 4096). Errors name the file, line and key.
Result<OffloadConnectorConfig> ScenarioOffloadConfig(const Scenario& sc, const KvCachePlan& plan);

// One GPU block across all layers and TP ranks, in bytes, as vLLM's offloading spec computes
// it: (Σ KV tensor bytes // num_gpu_blocks) · world size.
int64_t GpuBlockBytesAllRanks(const KvCachePlan& plan);

// The whole instance, one DP rank of it: `plan` is the scenario's (per rank), `role` says what it runs (a prefill instance never drafts), `accept_rng` is its
// draft acceptance stream. Errors name the scenario's file, line and key.
Result<InstanceConfig> BuildInstanceConfig(const Scenario& sc, KvCachePlan plan,
                                           InstanceRole role, Rng accept_rng);

// `kvsim schedule --scenario`: the step clock over the scenario's KV plan (every KV cache
// group: full attention, sliding window, Mamba with its mode, attention packs), its
// scheduler and its CPU tier, as `kvsim run` builds them, with copies reported per
// `xfer_timing`. A scenario that drafts (cache.num_speculative_tokens) is refused: the step
// clock has no drafter.
Result<StepClockConfig> StepClockConfigFromScenario(const Scenario& sc, XferTiming xfer_timing);

}  // namespace kvsim
