#include "sim/engine_common.h"

#include <algorithm>

namespace kvsim {

namespace {

// The manager's limit on the pool's size is about the keys that set that size.
Status NamePoolKeys(const Scenario& sc, const KvCachePlan& plan, const Status& s) {
  if (s.code() != "bad_num_blocks") return s;
  const ConfigNode* cache = sc.tree.Find("cache");
  const std::string key = cache != nullptr && cache->Find("num_gpu_blocks") != nullptr
                              ? "cache.num_gpu_blocks"
                              : "cache.kv_memory_bytes";
  return Status::Error(s.code(), sc.Where(key) + ": " + key + ": " + s.message() +
                                     " (the pool has " + std::to_string(plan.num_blocks) +
                                     " blocks)");
}

}  // namespace

int64_t DpRanks(const Scenario& sc) {
  return sc.cluster.enabled ? 1 : std::max<int64_t>(1, sc.cache.dp);
}

Result<KvCacheManagerConfig> EngineKvConfig(const Scenario& sc, const KvCachePlan& plan) {
  auto kv = KvCacheManagerConfigFromPlan(plan);
  if (!kv.ok()) return NamePoolKeys(sc, plan, kv.status());
  KvCacheManagerConfig kvc = kv.value();
  kvc.max_num_batched_tokens = sc.scheduler.max_num_batched_tokens * DpRanks(sc);
  if (sc.cache.num_speculative_tokens > 0) kvc.use_eagle = sc.sim.spec.eagle();
  if (Status s = kvc.Validate(); !s.ok()) return NamePoolKeys(sc, plan, s);
  return kvc;
}

SchedulerParams EngineSchedulerParams(const Scenario& sc, const KvCachePlan& plan,
                                      const KvCacheManagerConfig& kv_config,
                                      int64_t num_speculative_tokens) {
  SchedulerParams params;
  params.max_num_batched_tokens = sc.scheduler.max_num_batched_tokens * DpRanks(sc);
  params.max_num_seqs = sc.scheduler.max_num_seqs * DpRanks(sc);
  params.max_model_len = plan.max_model_len > 0 ? plan.max_model_len : (int64_t{1} << 40);
  params.long_prefill_token_threshold = sc.sim.scheduler.long_prefill_token_threshold;
  params.enable_chunked_prefill = sc.sim.scheduler.enable_chunked_prefill;
  params.policy =
      sc.sim.scheduler.policy == "priority" ? SchedulingPolicy::kPriority : SchedulingPolicy::kFcfs;
  params.full_sequence_must_fit = sc.sim.scheduler.full_sequence_must_fit;
  params.num_lookahead_tokens =
      num_speculative_tokens > 0 ? num_speculative_tokens + (sc.sim.spec.method == "dflash" ? 1 : 0)
                                 : 0;
  params.mamba_align_split = kv_config.has_mamba_align();
  return params;
}

int64_t VerifyDrafts(SimRequest& r, int64_t num_drafts, double acceptance_rate, Rng& rng) {
  int64_t accepted = 0;
  while (accepted < num_drafts && rng.Bernoulli(acceptance_rate)) ++accepted;
  r.num_computed_tokens -= num_drafts - accepted;
  return accepted;
}

int64_t NextStepDrafts(const SimRequest& r, int64_t num_speculative_tokens) {
  return std::max<int64_t>(
      0, std::min<int64_t>(num_speculative_tokens, r.max_output_tokens - r.num_output_tokens - 1));
}

}  // namespace kvsim
