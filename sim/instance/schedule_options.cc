#include "sim/instance/schedule_options.h"

#include <fmt/format.h>

#include "core/offload/offload_config.h"

namespace kvsim {
namespace {

Status Bad(const std::string& msg) { return Status::Error("bad_flags", "schedule: " + msg); }

std::string Pow2(int64_t v) {
  for (int k = 0; k < 63; ++k)
    if (v == (int64_t{1} << k)) return fmt::format("2^{}", k);
  return std::to_string(v);
}

}  // namespace

std::string ScheduleOptions::CommandLine() const {
  const ScheduleOptions d;
  std::string s = "kvsim schedule " + requests;
  auto num = [&](const char* flag, int64_t v, int64_t def) {
    if (v != def) s += fmt::format(" --{} {}", flag, v);
  };
  auto str = [&](const char* flag, const std::string& v, const std::string& def) {
    if (v != def) s += fmt::format(" --{} {}", flag, v);
  };
  auto flag = [&](const char* on, const char* off, bool v, bool def) {
    if (v != def) s += fmt::format(" --{}", v ? on : off);
  };
  num("block-size", block_size, d.block_size);
  s += fmt::format(" --num-gpu-blocks {}", num_gpu_blocks);
  str("hybrid", hybrid, d.hybrid);
  num("max-num-batched-tokens", max_num_batched_tokens, d.max_num_batched_tokens);
  num("max-num-seqs", max_num_seqs, d.max_num_seqs);
  num("long-prefill-token-threshold", long_prefill_token_threshold,
      d.long_prefill_token_threshold);
  num("max-model-len", max_model_len, d.max_model_len);
  flag("enable-prefix-caching", "no-enable-prefix-caching", prefix_caching, d.prefix_caching);
  flag("chunked-prefill", "no-chunked-prefill", chunked_prefill, d.chunked_prefill);
  flag("async-scheduling", "no-async-scheduling", async_scheduling, d.async_scheduling);
  flag("reserve-full-isl", "no-reserve-full-isl", reserve_full_isl, d.reserve_full_isl);
  str("policy", policy, d.policy);
  str("vllm-semantics", semantics, d.semantics);
  if (watermark != d.watermark) s += fmt::format(" --watermark {}", watermark);
  num("num-cpu-blocks", num_cpu_blocks, d.num_cpu_blocks);
  num("offload-block-size", offload_block_size, d.offload_block_size);
  str("eviction-policy", eviction_policy, d.eviction_policy);
  num("store-threshold", store_threshold, d.store_threshold);
  str("xfer-timing", xfer_timing, d.xfer_timing);
  return s;
}

Result<StepClockConfig> MakeStepClockConfig(const ScheduleOptions& a, int64_t max_blocks) {
  if (a.block_size <= 0 || a.block_size > (1 << 20)) {
    return Bad("--block-size must be in [1, 2^20]");
  }
  if (a.num_gpu_blocks < 2) {
    return Bad("--num-gpu-blocks must be at least 2 (block 0 is the null block)");
  }
  if (a.num_gpu_blocks > max_blocks) {
    return Bad("--num-gpu-blocks must be below " + Pow2(max_blocks));
  }
  if (a.max_num_batched_tokens < 1) return Bad("--max-num-batched-tokens must be positive");
  if (a.max_num_seqs < 1) return Bad("--max-num-seqs must be positive");
  if (a.long_prefill_token_threshold < 0) {
    return Bad("--long-prefill-token-threshold must not be negative (0 = off)");
  }
  if (a.max_model_len < 0) return Bad("--max-model-len must not be negative (0 = no limit)");
  if (a.policy != "fcfs" && a.policy != "priority") return Bad("--policy must be fcfs or priority");
  if (a.semantics != "classic" && a.semantics != "latest") {
    return Bad("--vllm-semantics must be classic or latest");
  }
  if (a.eviction_policy != "lru" && a.eviction_policy != "arc") {
    return Bad("--eviction-policy must be lru or arc");
  }
  if (a.xfer_timing != "instant" && a.xfer_timing != "next-step") {
    return Bad("--xfer-timing must be instant or next-step");
  }
  if (!(a.watermark >= 0 && a.watermark < 1)) return Bad("--watermark must be in [0, 1)");
  if (a.watermark > 0 && a.semantics == "classic") {
    return Bad("--watermark is the latest snapshot's (SchedulerConfig.watermark); classic has none");
  }
  auto kv = KvCacheManagerConfigFromHybrid(a.hybrid, a.block_size, a.num_gpu_blocks);
  if (!kv.ok()) return Bad("--hybrid: " + kv.status().message());
  StepClockConfig c;
  c.source = a.requests;
  c.kv = std::move(kv.value());
  c.kv.enable_caching = a.prefix_caching;
  c.kv.semantics = a.semantics == "classic" ? VllmSemantics::kClassic : VllmSemantics::kLatest;
  c.kv.max_model_len = a.max_model_len;
  c.kv.max_num_batched_tokens = a.max_num_batched_tokens;
  if (Status s = c.kv.Validate(); !s.ok()) return s;
  SchedulerParams& p = c.sched;
  p.max_num_batched_tokens = a.max_num_batched_tokens;
  p.max_num_seqs = a.max_num_seqs;
  p.max_model_len = a.max_model_len > 0 ? a.max_model_len : int64_t{1} << 40;
  p.long_prefill_token_threshold = a.long_prefill_token_threshold;
  p.enable_chunked_prefill = a.chunked_prefill;
  p.policy = a.policy == "priority" ? SchedulingPolicy::kPriority : SchedulingPolicy::kFcfs;
  p.full_sequence_must_fit = a.reserve_full_isl;
  p.async_scheduling = a.async_scheduling;
  p.mamba_align_split = c.kv.has_mamba_align();
  c.watermark_blocks = static_cast<int64_t>(a.watermark * static_cast<double>(a.num_gpu_blocks));
  if (a.num_cpu_blocks < 0) return Bad("--num-cpu-blocks must not be negative (0 = no CPU tier)");
  if (a.num_cpu_blocks > max_blocks) return Bad("--num-cpu-blocks must be below " + Pow2(max_blocks));
  const bool tier_flags = a.offload_block_size != 0 || a.eviction_policy != "lru" ||
                          a.store_threshold != 0 || a.xfer_timing != "instant";
  if (a.num_cpu_blocks == 0) {
    if (tier_flags) return Bad("the CPU-tier flags need --num-cpu-blocks N (N > 0)");
    return c;
  }
  if (a.store_threshold < 0) return Bad("--store-threshold must not be negative");
  OffloadOptions o;
  o.num_cpu_blocks = a.num_cpu_blocks;
  o.offload_block_size = a.offload_block_size;
  o.eviction_policy =
      a.eviction_policy == "arc" ? CpuEvictionPolicyKind::kArc : CpuEvictionPolicyKind::kLru;
  o.store_threshold = a.store_threshold;
  auto oc = MakeOffloadConnectorConfig(c.kv, o);
  if (!oc.ok()) {
    const std::string flag = oc.status().code() == kOffloadErrBlockSize ? "--offload-block-size"
                             : oc.status().code() == kOffloadErrNumCpuBlocks ? "--num-cpu-blocks"
                                                                             : "offloading";
    return Bad(flag + ": " + oc.status().message());
  }
  c.offload = std::move(oc.value());
  c.xfer_timing = a.xfer_timing == "next-step" ? XferTiming::kNextStep : XferTiming::kInstant;
  return c;
}

}  // namespace kvsim
