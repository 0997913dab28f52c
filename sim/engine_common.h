// What one simulated vLLM engine does the same way whether it runs alone (Engine) or as one
// instance of a P/D cluster (ClusterSim): how its scenario becomes the KV cache manager's
// config and the scheduler's params, and how a decode step's speculative drafts are
// verified. Both callers own their manager, scheduler state and acceptance stream; these
// functions only read the scenario and update the one request they are given.
#pragma once

#include <cstdint>

#include "core/kv_cache_manager.h"
#include "core/page_planner.h"
#include "core/status.h"
#include "sim/scenario_config.h"
#include "sim/scheduler/scheduler.h"
#include "sim/workload/rng.h"

namespace kvsim {

// Data parallelism until the instance core runs one engine core per rank behind vLLM's
// load balancer: one engine with the ranks' limits and KV pools taken together
// (max_num_seqs, max_num_batched_tokens and the blocks times parallel.dp), i.e. dp ranks kept
// perfectly balanced; the cost model prices a step at tokens / dp per rank, and MoE experts
// see every rank's tokens (the ranks run in lock-step). 1 for a P/D cluster's instances.
int64_t DpRanks(const Scenario& sc);

// The manager config for `plan`, with the scenario's token budget and (when it drafts) its
// EAGLE flag, validated. A pool the manager cannot hold (2^30 blocks or more) is an error at
// the file, line and key that sized it (cache.num_gpu_blocks if given, else
// cache.kv_memory_bytes).
Result<KvCacheManagerConfig> EngineKvConfig(const Scenario& sc, const KvCachePlan& plan);

// The scheduler's params from the scenario's scheduler sections. max_model_len is the
// plan's (2^40 when the plan leaves it open); `num_speculative_tokens` is the drafts per
// decode step (0 for an instance that never decodes) and sets the lookahead (+1 for DFlash).
SchedulerParams EngineSchedulerParams(const Scenario& sc, const KvCachePlan& plan,
                                      const KvCacheManagerConfig& kv_config,
                                      int64_t num_speculative_tokens);

// Verifies the `num_drafts` drafts a request just computed: each is accepted with
// `acceptance_rate`, left to right until the first rejection, and the rejected ones are
// rolled back from r.num_computed_tokens. Returns how many were accepted.
int64_t VerifyDrafts(SimRequest& r, int64_t num_drafts, double acceptance_rate, Rng& rng);

// The drafts a running request's next step carries: num_speculative_tokens, but none that
// would go past its max_output_tokens.
int64_t NextStepDrafts(const SimRequest& r, int64_t num_speculative_tokens);

}  // namespace kvsim
