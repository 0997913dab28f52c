#include "sim/instance_builder.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <utility>

namespace kvsim {

namespace {

// What an instance takes from a scenario, read in one pass before anything is built: plain
// values, and where in the scenario's files each key that can turn out wrong sits, so that an
// error the core finds below is named without going back to the scenario.
struct InstanceInputs {
  std::string source;  // the scenario's file
  // The pool's size: the key that set it (cache.num_gpu_blocks if given, else
  // cache.kv_memory_bytes) and where.
  std::string pool_key, pool_where;
  int64_t max_num_batched_tokens = 0;
  bool drafts = false, eagle = false;
  SchedulerParams params;  // but mamba_align_split, which the KV config decides
  bool async = false;
  int64_t num_speculative_tokens = 0;
  double acceptance_rate = 0;
  double watermark = 0;
  OffloadSection offload;
  int64_t gpu_block_bytes_all_ranks = 0;
  // Where each key an error may name sits ("file:line").
  std::map<std::string, std::string> where;
  ModelSpec model;
  HardwareSpec hardware;
};

InstanceInputs ReadInstanceInputs(const Scenario& sc, const KvCachePlan& plan, InstanceRole role) {
  InstanceInputs in;
  in.source = sc.source;
  const ConfigNode* cache = sc.tree.Find("cache");
  in.pool_key = cache != nullptr && cache->Find("num_gpu_blocks") != nullptr
                    ? "cache.num_gpu_blocks"
                    : "cache.kv_memory_bytes";
  for (const char* key :
       {"cache", "cache.offload", "cache.offload.block_size", "cache.mamba_cache_mode",
        "cache.offload.num_cpu_blocks", "cache.offload.eviction_policy", "cache.offload.cpu_bytes",
        "scheduler.watermark"}) {
    in.where[key] = sc.Where(key);
  }
  in.pool_where = sc.Where(in.pool_key);
  in.max_num_batched_tokens = sc.scheduler.max_num_batched_tokens;
  in.drafts = sc.cache.num_speculative_tokens > 0;
  in.eagle = sc.sim.spec.eagle();
  // The prefill pool never decodes, so it never drafts.
  in.num_speculative_tokens = role == InstanceRole::kPrefill ? 0 : sc.cache.num_speculative_tokens;
  in.acceptance_rate = sc.sim.spec.acceptance_rate;
  SchedulerParams& params = in.params;
  params.max_num_batched_tokens = sc.scheduler.max_num_batched_tokens;
  params.max_num_seqs = sc.scheduler.max_num_seqs;
  params.max_model_len = plan.max_model_len > 0 ? plan.max_model_len : (int64_t{1} << 40);
  params.long_prefill_token_threshold = sc.sim.scheduler.long_prefill_token_threshold;
  params.enable_chunked_prefill = sc.sim.scheduler.enable_chunked_prefill;
  params.policy =
      sc.sim.scheduler.policy == "priority" ? SchedulingPolicy::kPriority : SchedulingPolicy::kFcfs;
  params.full_sequence_must_fit = sc.sim.scheduler.full_sequence_must_fit;
  params.num_lookahead_tokens =
      in.num_speculative_tokens > 0
          ? in.num_speculative_tokens + (sc.sim.spec.method == "dflash" ? 1 : 0)
          : 0;
  // Async scheduling with drafts would need placeholders for the drafts too: such runs are
  // modelled with sync scheduling (docs/step-log.md).
  in.async = sc.sim.scheduler.async_scheduling && sc.cache.num_speculative_tokens == 0;
  in.watermark = sc.sim.scheduler.watermark;
  in.offload = sc.offload;
  in.gpu_block_bytes_all_ranks = GpuBlockBytesAllRanks(plan);
  in.model = sc.model;
  in.hardware = sc.sim.hardware;
  return in;
}

// The KV manager's config from the plan and the inputs, validated; with `offload` (the
// scenario has cache.offload) also the CPU tier's. Errors name the key that set the value.
struct KvParts {
  KvCacheManagerConfig kv;
  std::optional<OffloadConnectorConfig> offload;
};
Result<KvParts> BuildKvParts(const InstanceInputs& in, const KvCachePlan& plan, bool with_kv,
                             bool with_offload) {
  auto at = [&](const std::string& key, const Status& s) {
    return Status::Error(s.code(), in.where.at(key) + ": " + key + ": " + s.message());
  };
  // The manager's limit on the pool's size is about the keys that set that size.
  auto pool = [&](const Status& s) {
    if (s.code() != "bad_num_blocks") return s;
    return Status::Error(s.code(), in.pool_where + ": " + in.pool_key + ": " + s.message() +
                                       " (the pool has " + std::to_string(plan.num_blocks) +
                                       " blocks)");
  };
  KvParts parts;
  if (with_kv) {
    auto kv = KvCacheManagerConfigFromPlan(plan);
    if (!kv.ok()) return pool(kv.status());
    parts.kv = kv.value();
    parts.kv.max_num_batched_tokens = in.max_num_batched_tokens;
    if (in.drafts) parts.kv.use_eagle = in.eagle;
    if (Status s = parts.kv.Validate(); !s.ok()) return pool(s);
  }
  if (!with_offload) return parts;
  const OffloadSection& off = in.offload;
  auto kv = KvCacheManagerConfigFromPlan(plan);
  if (!kv.ok()) return at("cache", kv.status());
  auto policy = ParseCpuEvictionPolicyKind(off.eviction_policy);
  if (!policy.ok()) return at("cache.offload.eviction_policy", policy.status());
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
    const std::string key = code == kOffloadErrBlockSize      ? "cache.offload.block_size"
                            : code == kOffloadErrMambaAlign   ? "cache.mamba_cache_mode"
                            : code == kOffloadErrNumCpuBlocks ? "cache.offload.num_cpu_blocks"
                                                              : "cache.offload";
    return at(key, cfg.status());
  }
  if (off.empty()) cfg->tier.num_blocks = 0;
  if (off.cpu_bytes > 0) {
    const int64_t block_bytes = in.gpu_block_bytes_all_ranks;
    if (block_bytes <= 0)
      return at("cache.offload.cpu_bytes",
                Status::Error("bad_value", "the plan has no KV bytes per block to offload"));
    const int64_t n = NumCpuBlocksFromBytes(off.cpu_bytes, block_bytes, cfg->block_size_factor,
                                            plan.config.semantics);
    if (n < 1)
      return at("cache.offload.cpu_bytes",
                Status::Error(
                    "bad_value",
                    std::to_string(off.cpu_bytes) + " bytes hold no offloaded block (one takes " +
                        std::to_string(block_bytes * cfg->block_size_factor) + " bytes)"));
    cfg->tier.num_blocks = n;
  }
  parts.offload = std::move(cfg.value());
  return parts;
}

// The instance from its inputs: every call from here on goes down to the core.
Result<InstanceConfig> AssembleInstance(InstanceInputs in, KvCachePlan plan, InstanceRole role,
                                        Rng accept_rng) {
  auto parts = BuildKvParts(in, plan, /*with_kv=*/true, in.offload.enabled);
  if (!parts.ok()) return parts.status();
  InstanceConfig c;
  c.role = role;
  c.kv = std::move(parts->kv);
  if (parts->offload && !in.offload.empty()) c.offload = std::move(parts->offload);
  c.num_speculative_tokens = in.num_speculative_tokens;
  c.acceptance_rate = in.acceptance_rate;
  c.accept_rng = accept_rng;
  c.params = in.params;
  c.params.mamba_align_split = c.kv.has_mamba_align();
  c.params.async_scheduling = in.async;
  c.params.reserve_for_inflight_prefills =
      c.offload && c.offload->semantics == VllmSemantics::kLatest;
  if (in.watermark > 0) {
    if (plan.config.semantics == VllmSemantics::kClassic) {
      return Status::Error("bad_value", in.where.at("scheduler.watermark") +
                                            ": scheduler.watermark: the classic snapshot has "
                                            "no admission watermark (latest only)");
    }
    c.watermark_blocks = static_cast<int64_t>(in.watermark * static_cast<double>(plan.num_blocks));
  }
  if (c.offload) {
    // Copies go over the GPU's host link; every rank copies its share of each block in
    // parallel, so one rank's bytes set the time.
    CopyLinkModel& link = c.offload_link;
    link.bytes_per_ns = in.offload.pcie_gbytes_per_s;  // GB/s = bytes/ns
    link.latency_ns = std::llround(in.offload.pcie_latency_us * 1e3);
    link.launch_ns = std::llround(in.offload.copy_kernel_us * 1e3);
    link.kernels_per_job = std::max<int64_t>(1, static_cast<int64_t>(plan.tensors.size()));
    link.block_bytes = plan.block_bytes * c.offload->block_size_factor;
    link.shared_link = in.offload.shared_link;
    c.offload_block_bytes = in.gpu_block_bytes_all_ranks * c.offload->block_size_factor;
  }
  c.model = std::move(in.model);
  c.hardware = std::move(in.hardware);
  c.plan = std::move(plan);
  return c;
}

}  // namespace

int64_t GpuBlockBytesAllRanks(const KvCachePlan& plan) {
  if (plan.num_blocks <= 0) return 0;
  return plan.total_bytes() / plan.num_blocks * plan.config.tp;
}

Result<OffloadConnectorConfig> ScenarioOffloadConfig(const Scenario& sc, const KvCachePlan& plan) {
  auto parts = BuildKvParts(ReadInstanceInputs(sc, plan, InstanceRole::kColocated), plan,
                            /*with_kv=*/false, /*with_offload=*/true);
  if (!parts.ok()) return parts.status();
  return std::move(*parts->offload);
}

int64_t DpRanks(const Scenario& sc) {
  return sc.cluster.enabled ? 1 : std::max<int64_t>(1, sc.cache.dp);
}

Result<KvCacheManagerConfig> EngineKvConfig(const Scenario& sc, const KvCachePlan& plan) {
  auto parts = BuildKvParts(ReadInstanceInputs(sc, plan, InstanceRole::kColocated), plan,
                            /*with_kv=*/true, /*with_offload=*/false);
  if (!parts.ok()) return parts.status();
  return std::move(parts->kv);
}

Result<InstanceConfig> BuildInstanceConfig(const Scenario& sc, KvCachePlan plan, InstanceRole role,
                                           Rng accept_rng) {
  // One DP rank: its own pool, limits and scheduler; its step prices its own tokens (the
  // driver adds the tokens its lock-step peers run to the experts' share).
  plan.config.dp = 1;
  if (plan.num_blocks < 2) {
    return Status::Error("no_kv_memory", sc.source +
                                             ": the KV cache has no usable blocks; set "
                                             "cache.kv_memory_bytes or cache.num_gpu_blocks");
  }
  // The scenario is read once, here; what follows builds from plain inputs.
  InstanceInputs in = ReadInstanceInputs(sc, plan, role);
  return AssembleInstance(std::move(in), std::move(plan), role, accept_rng);
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
