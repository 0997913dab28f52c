#include "sim/run/replay_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

#include "core/offload/offload_config.h"
#include "core/vllm_semantics.h"
#include "sim/instance_builder.h"
#include "sim/scenario/scenario_loader.h"

namespace kvsim {
namespace {

// The flag an offloading error is about.
std::string OffloadFlag(const std::string& code) {
  if (code == kOffloadErrBlockSize) return "--offload-block-size: ";
  if (code == kOffloadErrNumCpuBlocks) return "--num-cpu-blocks: ";
  if (code == kOffloadErrMambaAlign) return "--hybrid mamba-align / mamba_cache_mode align: ";
  return "";
}

Status Bad(const std::string& msg) { return Status::Error("bad_flags", "replay: " + msg); }

// --prefix-cache-retention-interval: "null" → dense, N ≥ 0 tokens; "" → the profile's.
Result<int64_t> ParseRetention(const std::string& v) {
  if (v.empty()) return KvCacheManagerConfig::kRetentionProfileDefault;
  if (v == "null") return KvCacheManagerConfig::kRetentionDense;
  int64_t n = 0;
  size_t pos = 0;
  try {
    n = std::stoll(v, &pos);
  } catch (...) {
    pos = 0;
  }
  if (pos != v.size() || n < 0)
    return Bad("--prefix-cache-retention-interval takes null or a token count ≥ 0, got '" + v +
               "'");
  return n;
}

// The GPU cache configuration; `offload` gets the CPU tier's, if one is asked for.
Result<KvCacheManagerConfig> BuildConfig(const ReplayFlags& a,
                                         std::optional<OffloadConnectorConfig>& offload) {
  if (a.block_size <= 0) return Bad("--block-size must be a positive integer");
  auto retention = ParseRetention(a.retention);
  if (!retention.ok()) return retention.status();
  if (a.num_blocks > 0 && a.cache_tokens > 0)
    return Bad("give --num-blocks or --cache-tokens, not both");
  if (a.num_blocks <= 0 && a.cache_tokens <= 0 && !a.curve)
    return Bad("give the cache capacity: --num-blocks N or --cache-tokens T");
  if (a.num_blocks < 0 || a.cache_tokens < 0) return Bad("capacities must be positive");
  if (!a.model.empty() && !a.scenario.empty()) return Bad("give --model or --scenario, not both");
  if (!a.hybrid.empty() && (!a.model.empty() || !a.scenario.empty()))
    return Bad(
        "--hybrid is the cache-only shorthand; it cannot be combined with --model/--scenario");
  if (!a.semantics.empty() && a.semantics != "classic" && a.semantics != "latest")
    return Bad("--vllm-semantics takes classic or latest, got '" + a.semantics + "'");
  if (!a.eviction_policy.empty() && a.eviction_policy != "lru" && a.eviction_policy != "arc")
    return Bad("--eviction-policy takes lru or arc, got '" + a.eviction_policy + "'");
  const bool offload_flags = a.num_cpu_blocks != 0 || a.offload_block_size != 0 ||
                             !a.eviction_policy.empty() || a.store_threshold >= 0;
  if (a.num_cpu_blocks < 0) return Bad("--num-cpu-blocks must be positive");
  if (a.offload_block_size < 0) return Bad("--offload-block-size must be positive");
  KvCacheManagerConfig cfg;
  std::optional<OffloadConnectorConfig> scenario_offload;
  if (!a.model.empty() || !a.scenario.empty()) {
    LoadOptions opts;
    opts.path = a.scenario;
    if (!a.model.empty()) opts.overrides.push_back("model.preset=" + a.model);
    opts.overrides.push_back("cache.block_size=" + std::to_string(a.block_size));
    opts.overrides.push_back("cache.num_gpu_blocks=" +
                             std::to_string(a.num_blocks > 0 ? a.num_blocks : 2));
    if (!a.semantics.empty()) opts.overrides.push_back("cache.vllm_semantics=" + a.semantics);
    if (!a.retention.empty())
      opts.overrides.push_back("cache.prefix_cache_retention_interval=" + a.retention);
    auto sc = LoadScenario(opts);
    if (!sc.ok()) return sc.status();
    auto plan = sc->Plan();
    if (!plan.ok()) return plan.status();
    auto c = KvCacheManagerConfigFromPlan(plan.value());
    if (!c.ok()) return c.status();
    cfg = std::move(c.value());
    if (sc->offload.enabled && a.num_cpu_blocks == 0) {
      auto oc = ScenarioOffloadConfig(sc.value(), plan.value());
      if (!oc.ok()) return oc.status();
      scenario_offload = std::move(oc.value());
    }
    if (!cfg.enable_caching && !scenario_offload && a.num_cpu_blocks == 0)
      return Bad("the scenario has prefix caching off; nothing to replay");
  } else {
    auto c = KvCacheManagerConfigFromHybrid(a.hybrid, a.block_size, 2);
    if (!c.ok()) return c.status();
    cfg = std::move(c.value());
    if (a.semantics == "classic") cfg.semantics = VllmSemantics::kClassic;
    cfg.prefix_cache_retention_interval = retention.value();
  }
  if (a.num_blocks > 0) cfg.num_blocks = a.num_blocks;
  if (a.cache_tokens > 0) cfg.num_blocks = a.cache_tokens / cfg.scheduler_block_size() + 1;
  if (a.curve && a.num_blocks <= 0 && a.cache_tokens <= 0) cfg.num_blocks = 2;
  if (Status s = cfg.Validate(); !s.ok()) return s;

  if (a.num_cpu_blocks > 0) {
    OffloadOptions o;
    o.num_cpu_blocks = a.num_cpu_blocks;
    o.offload_block_size = a.offload_block_size;
    if (!a.eviction_policy.empty()) {
      auto p = ParseCpuEvictionPolicyKind(a.eviction_policy);
      if (!p.ok()) return Bad("--eviction-policy: " + p.status().message());
      o.eviction_policy = *p;
    }
    o.store_threshold = std::max<int64_t>(a.store_threshold, 0);
    auto oc = MakeOffloadConnectorConfig(cfg, o);
    if (!oc.ok()) return Bad(OffloadFlag(oc.status().code()) + oc.status().message());
    offload = std::move(oc.value());
  } else if (scenario_offload) {
    if (offload_flags)
      return Bad(
          "the scenario's cache.offload sets the CPU tier; override it whole with "
          "--num-cpu-blocks (and the other offload flags)");
    offload = std::move(scenario_offload);
  } else if (offload_flags) {
    return Bad(
        "--offload-block-size, --eviction-policy and --store-threshold need a CPU tier: "
        "--num-cpu-blocks N");
  }
  if (offload) {
    // The tier follows the GPU side's semantics (latest: prompt blocks only; stores are of
    // prompts here anyway) and its prefix caching switch (deferral on blocks being loaded).
    offload->semantics = cfg.semantics;
    offload->enable_prefix_caching = cfg.enable_caching;
  }
  return cfg;
}

std::string Dump(const nlohmann::ordered_json& j) {
  // Trace ids and paths need not be UTF-8: replace invalid bytes instead of throwing.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace

Result<ReplayRun> RunReplayCommand(const ReplayFlags& a) {
  ReplayRun run;
  auto cfg = BuildConfig(a, run.offload);
  if (!cfg.ok()) return cfg.status();
  run.config = std::move(cfg.value());
  if (a.curve && run.offload) {
    return Bad(
        "--curve is the GPU cache alone; drop the CPU tier (--num-cpu-blocks or the "
        "scenario's cache.offload)");
  }
  if (a.curve && a.concurrency > 0) {
    return Bad(
        "--curve models the default mode (each request freed at once); drop "
        "--concurrency");
  }
  if (a.concurrency < 0) return Bad("--concurrency must be positive");
  // With a model, no prompt may exceed its context length; without one, kvsim's own bound.
  TraceLimits limits;
  if (run.config.max_model_len > 0) {
    limits.max_prompt_tokens = run.config.max_model_len;
    limits.why = "the model's max_model_len";
  }
  auto trace = RequestTrace::ReadFile(a.trace, a.skip_bad_lines, limits);
  if (!trace.ok()) return trace.status();
  run.trace = std::move(trace.value());
  // An empty file is bad input, as for `kvsim run`; a file whose every line was skipped
  // (--skip-bad-lines) reports its count instead.
  if (run.trace.size() == 0 && run.trace.skipped_lines() == 0) {
    return Status::Error("bad_trace", a.trace + ": no requests in the trace");
  }
  const int64_t sb = run.config.scheduler_block_size();
  // A model's plan may raise the block (hybrid models cover the Mamba page, page sizes are
  // unified): the replay then runs at the plan's block, which the user must hear about.
  if (sb != a.block_size) {
    run.note = fmt::format(
        "replay: the {}'s KV cache plan sets the block to {} tokens; --block-size {} is not used",
        a.model.empty() ? "scenario" : "model", sb, a.block_size);
  }
  if (a.curve) {
    const int64_t max_cap = (a.num_blocks > 0 || a.cache_tokens > 0) ? run.config.num_blocks : 0;
    auto curve = ReplayCurve(run.trace, run.config, max_cap);
    if (!curve.ok()) return curve.status();
    run.curve = std::move(curve.value());
    return run;
  }
  ReplayOptions opts;
  opts.concurrency = a.concurrency;
  opts.per_request = a.per_request;
  if (run.offload) opts.offload = &*run.offload;
  run.result = Replay(run.trace, run.config, opts);
  return run;
}

std::string ReplayJson(const ReplayRun& run) {
  const KvCacheManagerConfig& cfg = run.config;
  const int64_t sb = cfg.scheduler_block_size();
  nlohmann::ordered_json j;
  if (run.curve) {
    const CurveResult& curve = *run.curve;
    j["requests"] = run.trace.size();
    j["prompt_tokens"] = curve.prompt_tokens;
    j["block_size"] = sb;
    j["sampled"] = curve.sampled;
    j["min_capacity_blocks"] = curve.min_capacity_blocks;
    j["saturation_blocks"] = curve.saturation_blocks;
    j["skipped_lines"] = run.trace.skipped_lines();
    auto& pts = j["curve"] = nlohmann::ordered_json::array();
    for (const auto& p : curve.points)
      pts.push_back({{"capacity_blocks", p.capacity_blocks},
                     {"hit_tokens", p.hit_tokens},
                     {"hit_rate", p.hit_rate}});
    return Dump(j);
  }
  const ReplayResult& r = run.result;
  j["requests"] = r.requests;
  j["prompt_tokens"] = r.prompt_tokens;
  j["hit_tokens"] = r.hit_tokens;
  j["hit_rate"] =
      run.none_served() ? nlohmann::ordered_json() : nlohmann::ordered_json(r.hit_rate());
  j["blocks_per_s"] = r.blocks_per_s();
  j["blocks_per_cpu_s"] = r.blocks_per_cpu_s();
  j["served"] = r.served;
  j["not_served"] = r.not_served;
  j["skipped_lines"] = run.trace.skipped_lines();
  j["block_size"] = sb;
  j["num_blocks"] = cfg.num_blocks;
  j["groups"] = cfg.groups.size();
  j["vllm_semantics"] = std::string(VllmSemanticsName(cfg.semantics));
  const int64_t retention = cfg.effective_retention_interval();
  if (retention == KvCacheManagerConfig::kRetentionDense)
    j["prefix_cache_retention_interval"] = nullptr;
  else
    j["prefix_cache_retention_interval"] = retention;
  if (run.offload) {
    const OffloadConnectorConfig& offload = *run.offload;
    j["gpu_hit_tokens"] = r.hit_tokens;
    j["cpu_hit_tokens"] = r.cpu_hit_tokens;
    j["total_hit_tokens"] = r.hit_tokens + r.cpu_hit_tokens;
    j["cpu_hit_rate"] = r.cpu_hit_rate();
    j["total_hit_rate"] = r.hit_rate() + r.cpu_hit_rate();
    j["full_cpu_hits"] = r.full_cpu_hits;
    j["num_cpu_blocks"] = offload.tier.num_blocks;
    j["offload_block_size"] = offload.offloaded_block_size();
    j["eviction_policy"] = std::string(CpuEvictionPolicyKindName(offload.tier.policy));
    j["store_threshold"] = offload.tier.store_threshold;
    j["cpu_blocks_stored"] = r.cpu_blocks_stored;
    j["cpu_blocks_evicted"] = r.cpu_blocks_evicted;
    j["cpu_blocks_loaded"] = r.cpu_blocks_loaded;
    j["cpu_store_failures"] = r.cpu_store_failures;
  }
  return Dump(j);
}

std::string ReplayText(const ReplayFlags& a, const ReplayRun& run) {
  const KvCacheManagerConfig& cfg = run.config;
  std::string out;
  if (run.curve) {
    out = "capacity_blocks,hit_tokens,hit_rate\n";
    for (const auto& p : run.curve->points)
      out += fmt::format("{},{},{:.6f}\n", p.capacity_blocks, p.hit_tokens, p.hit_rate);
    return out;
  }
  const ReplayResult& r = run.result;
  const int64_t skipped = run.trace.skipped_lines();
  out += fmt::format(
      "replay {}: {} requests ({} served, {} not served{}), block {} × {} blocks ({} "
      "semantics, {} group{})\n",
      a.trace, r.requests, r.served, r.not_served,
      skipped > 0 ? fmt::format(", {} bad lines skipped", skipped) : std::string(),
      cfg.scheduler_block_size(), cfg.num_blocks, VllmSemanticsName(cfg.semantics),
      cfg.groups.size(), cfg.groups.size() == 1 ? "" : "s");
  if (run.none_served()) {
    out += fmt::format("  prompt tokens {}  hit rate n/a (no request served)\n", r.prompt_tokens);
  } else if (!run.offload) {
    out += fmt::format("  prompt tokens {}  hit tokens {}  hit rate {:.4f}\n", r.prompt_tokens,
                       r.hit_tokens, r.hit_rate());
  } else {
    const OffloadConnectorConfig& offload = *run.offload;
    out +=
        fmt::format("  CPU tier: {} blocks of {} tokens, {}{}\n", offload.tier.num_blocks,
                    offload.offloaded_block_size(), CpuEvictionPolicyKindName(offload.tier.policy),
                    offload.tier.store_threshold >= 2
                        ? fmt::format(", store_threshold {}", offload.tier.store_threshold)
                        : std::string());
    out += fmt::format(
        "  prompt tokens {}  gpu hit tokens {}  cpu hit tokens {}  total {}  hit rate gpu "
        "{:.4f} cpu {:.4f} total {:.4f}\n",
        r.prompt_tokens, r.hit_tokens, r.cpu_hit_tokens, r.hit_tokens + r.cpu_hit_tokens,
        r.hit_rate(), r.cpu_hit_rate(), r.hit_rate() + r.cpu_hit_rate());
    out += fmt::format(
        "  cpu blocks stored {}  evicted {}  loaded {}  store failures {}  full-prompt cpu "
        "hits {}\n",
        r.cpu_blocks_stored, r.cpu_blocks_evicted, r.cpu_blocks_loaded, r.cpu_store_failures,
        r.full_cpu_hits);
  }
  // The replay's speed (blocks_per_s, blocks_per_cpu_s) is in --json only: a wall-clock
  // figure would make the text output differ from run to run.
  return out;
}

std::string ReplayPerRequestJsonl(const ReplayRun& run) {
  std::string out;
  for (const auto& o : run.result.outcomes) {
    nlohmann::ordered_json j;
    j["id"] = run.trace[o.index].id;
    j["prompt_tokens"] = o.prompt_tokens;
    j["hit_tokens"] = o.hit_tokens;
    if (run.offload) j["cpu_hit_tokens"] = o.cpu_hit_tokens;
    if (!o.served) j["served"] = false;
    out += j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    out += '\n';
  }
  return out;
}

std::string ReplayNoneServedMessage(const ReplayRun& run) {
  if (!run.none_served()) return "";
  return fmt::format(
      "replay: none of the {} requests could be served: each needs more blocks than the "
      "cache's {} usable ({} blocks of {} tokens, block 0 is the null block); give more "
      "--num-blocks (or --cache-tokens)",
      run.result.requests, run.config.num_blocks - 1, run.config.num_blocks,
      run.config.scheduler_block_size());
}

}  // namespace kvsim
