#include "sim/instance_builder.h"

#include <algorithm>
#include <cmath>
#include <utility>


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

int64_t GpuBlockBytesAllRanks(const KvCachePlan& plan) {
  if (plan.num_blocks <= 0) return 0;
  return plan.total_bytes() / plan.num_blocks * plan.config.tp;
}

Result<OffloadConnectorConfig> ScenarioOffloadConfig(const Scenario& sc, const KvCachePlan& plan) {
  const OffloadSection& off = sc.offload;
  auto fail = [&](const std::string& key, const Status& s) {
    return Status::Error(s.code(), sc.Where(key) + ": " + key + ": " + s.message());
  };
  auto kv = KvCacheManagerConfigFromPlan(plan);
  if (!kv.ok()) return fail("cache", kv.status());
  auto policy = ParseCpuEvictionPolicyKind(off.eviction_policy);
  if (!policy.ok()) return fail("cache.offload.eviction_policy", policy.status());
  OffloadOptions o;
  o.offload_block_size = off.block_size;
  o.eviction_policy = *policy;
  o.store_threshold = off.store_threshold;
  o.max_tracker_size = off.max_tracker_size;
  // Bytes are counted below; an empty tier is checked like a real one, then emptied.
  o.num_cpu_blocks = off.cpu_bytes > 0 || off.empty() ? 1 : off.num_cpu_blocks;
  auto cfg = MakeOffloadConnectorConfig(*kv, o);
  if (!cfg.ok()) {
    const std::string& code = cfg.status().code();
    const std::string key = code == kOffloadErrBlockSize     ? "cache.offload.block_size"
                            : code == kOffloadErrMambaAlign  ? "cache.mamba_cache_mode"
                            : code == kOffloadErrNumCpuBlocks ? "cache.offload.num_cpu_blocks"
                                                              : "cache.offload";
    return fail(key, cfg.status());
  }
  if (off.empty()) cfg->tier.num_blocks = 0;
  if (off.cpu_bytes > 0) {
    const int64_t block_bytes = GpuBlockBytesAllRanks(plan);
    if (block_bytes <= 0)
      return fail("cache.offload.cpu_bytes",
                  Status::Error("bad_value", "the plan has no KV bytes per block to offload"));
    const int64_t n = NumCpuBlocksFromBytes(off.cpu_bytes, block_bytes, cfg->block_size_factor,
                                            plan.config.semantics);
    if (n < 1)
      return fail("cache.offload.cpu_bytes",
                  Status::Error("bad_value",
                                std::to_string(off.cpu_bytes) +
                                    " bytes hold no offloaded block (one takes " +
                                    std::to_string(block_bytes * cfg->block_size_factor) +
                                    " bytes)"));
    cfg->tier.num_blocks = n;
  }
  return cfg;
}

int64_t DpRanks(const Scenario& sc) {
  return sc.cluster.enabled ? 1 : std::max<int64_t>(1, sc.cache.dp);
}

Result<KvCacheManagerConfig> EngineKvConfig(const Scenario& sc, const KvCachePlan& plan) {
  auto kv = KvCacheManagerConfigFromPlan(plan);
  if (!kv.ok()) return NamePoolKeys(sc, plan, kv.status());
  KvCacheManagerConfig kvc = kv.value();
  kvc.max_num_batched_tokens = sc.scheduler.max_num_batched_tokens;
  if (sc.cache.num_speculative_tokens > 0) kvc.use_eagle = sc.sim.spec.eagle();
  if (Status s = kvc.Validate(); !s.ok()) return NamePoolKeys(sc, plan, s);
  return kvc;
}

SchedulerParams EngineSchedulerParams(const Scenario& sc, const KvCachePlan& plan,
                                      const KvCacheManagerConfig& kv_config,
                                      int64_t num_speculative_tokens) {
  SchedulerParams params;
  params.max_num_batched_tokens = sc.scheduler.max_num_batched_tokens;
  params.max_num_seqs = sc.scheduler.max_num_seqs;
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

Result<InstanceConfig> BuildInstanceConfig(const Scenario& sc, KvCachePlan plan,
                                           InstanceRole role, Rng accept_rng) {
  // One DP rank: its own pool, limits and scheduler; its step prices its own tokens (the
  // driver adds the tokens its lock-step peers run to the experts' share).
  plan.config.dp = 1;
  if (plan.num_blocks < 2) {
    return Status::Error("no_kv_memory",
                         sc.source + ": the KV cache has no usable blocks; set "
                                     "cache.kv_memory_bytes or cache.num_gpu_blocks");
  }
  InstanceConfig c;
  c.role = role;
  auto kvc = EngineKvConfig(sc, plan);
  if (!kvc.ok()) return kvc.status();
  c.kv = kvc.value();
  if (sc.offload.enabled) {
    auto off = ScenarioOffloadConfig(sc, plan);
    if (!off.ok()) return off.status();
    if (!sc.offload.empty()) c.offload = std::move(off.value());
  }
  // The prefill pool never decodes, so it never drafts.
  c.num_speculative_tokens = role == InstanceRole::kPrefill ? 0 : sc.cache.num_speculative_tokens;
  c.acceptance_rate = sc.sim.spec.acceptance_rate;
  c.accept_rng = accept_rng;
  c.params = EngineSchedulerParams(sc, plan, c.kv, c.num_speculative_tokens);
  // Async scheduling with drafts would need placeholders for the drafts too: such runs are
  // modelled with sync scheduling (docs/step-log.md).
  c.params.async_scheduling =
      sc.sim.scheduler.async_scheduling && sc.cache.num_speculative_tokens == 0;
  c.params.reserve_for_inflight_prefills =
      c.offload && c.offload->semantics == VllmSemantics::kLatest;
  if (sc.sim.scheduler.watermark > 0) {
    if (plan.config.semantics == VllmSemantics::kClassic) {
      return Status::Error("bad_value", sc.Where("scheduler.watermark") +
                                            ": scheduler.watermark: the classic snapshot has "
                                            "no admission watermark (latest only)");
    }
    c.watermark_blocks =
        static_cast<int64_t>(sc.sim.scheduler.watermark * static_cast<double>(plan.num_blocks));
  }
  if (c.offload) {
    // Copies go over the GPU's host link; every rank copies its share of each block in
    // parallel, so one rank's bytes set the time.
    CopyLinkModel& link = c.offload_link;
    link.bytes_per_ns = sc.offload.pcie_gbytes_per_s;  // GB/s = bytes/ns
    link.latency_ns = std::llround(sc.offload.pcie_latency_us * 1e3);
    link.launch_ns = std::llround(sc.offload.copy_kernel_us * 1e3);
    link.kernels_per_job = std::max<int64_t>(1, static_cast<int64_t>(plan.tensors.size()));
    link.block_bytes = plan.block_bytes * c.offload->block_size_factor;
    link.shared_link = sc.offload.shared_link;
    c.offload_block_bytes = GpuBlockBytesAllRanks(plan) * c.offload->block_size_factor;
  }
  c.model = sc.model;
  c.hardware = sc.sim.hardware;
  c.plan = std::move(plan);
  return c;
}

Result<StepClockConfig> StepClockConfigFromScenario(const Scenario& sc, XferTiming xfer_timing) {
  if (sc.cache.num_speculative_tokens > 0) {
    return Status::Error("bad_value", sc.Where("cache.num_speculative_tokens") +
                                          ": cache.num_speculative_tokens: kvsim schedule's "
                                          "step clock has no drafter; set it to 0");
  }
  auto plan = sc.Plan();
  if (!plan.ok()) return plan.status();
  auto inst = BuildInstanceConfig(sc, std::move(plan.value()), InstanceRole::kColocated, Rng(0));
  if (!inst.ok()) return inst.status();
  StepClockConfig c;
  c.kv = std::move(inst->kv);
  c.sched = inst->params;
  c.offload = std::move(inst->offload);
  c.watermark_blocks = inst->watermark_blocks;
  c.xfer_timing = xfer_timing;
  return c;
}

}  // namespace kvsim
