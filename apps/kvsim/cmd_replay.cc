// kvsim replay: cache-only replay of a request trace (token JSONL or Mooncake hash_ids
// JSONL) through the prefix-caching KV cache manager; prints the hit rate, or with --curve
// the hit rate at every capacity in one pass. With a CPU offloading tier (--num-cpu-blocks, or
// a --scenario with cache.offload) it reports GPU and CPU hits separately.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/kvsim/commands.h"
#include "core/kv_cache_manager.h"
#include "core/offload/offload_config.h"
#include "core/vllm_semantics.h"
#include "sim/replay/replay.h"
#include "sim/instance_builder.h"
#include "sim/scenario/scenario_loader.h"
#include "sim/trace/request_trace.h"

namespace kvsim::cli {
namespace {

struct ReplayArgs {
  std::string trace;
  int64_t block_size = 0;
  int64_t num_blocks = 0;
  int64_t cache_tokens = 0;
  int64_t concurrency = 0;
  std::string hybrid;
  std::string model;
  std::string scenario;
  std::string semantics;
  std::string retention;  // --prefix-cache-retention-interval: "", "null" or an integer
  std::string per_request;
  bool curve = false;
  bool json = false;
  bool skip_bad_lines = false;
  // The CPU offloading tier (kv-offload.md); none unless --num-cpu-blocks is given or the
  // --scenario has cache.offload.
  int64_t num_cpu_blocks = 0;
  int64_t offload_block_size = 0;
  std::string eviction_policy;
  int64_t store_threshold = -1;  // −1: not given
};

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
    return Bad("--prefix-cache-retention-interval takes null or a token count ≥ 0, got '" +
               v + "'");
  return n;
}

// The GPU cache configuration; `offload` gets the CPU tier's, if one is asked for.
Result<KvCacheManagerConfig> BuildConfig(const ReplayArgs& a,
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
    return Bad("--hybrid is the cache-only shorthand; it cannot be combined with --model/--scenario");
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
      return Bad("the scenario's cache.offload sets the CPU tier; override it whole with "
                 "--num-cpu-blocks (and the other offload flags)");
    offload = std::move(scenario_offload);
  } else if (offload_flags) {
    return Bad("--offload-block-size, --eviction-policy and --store-threshold need a CPU tier: "
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

void RunReplay(const ReplayArgs& a) {
  std::optional<OffloadConnectorConfig> offload;
  auto cfg = BuildConfig(a, offload);
  if (!cfg.ok()) {
    ReportError(cfg.status(), a.json);
    return;
  }
  if (a.curve && offload) {
    ReportError(Bad("--curve is the GPU cache alone; drop the CPU tier (--num-cpu-blocks or the "
                    "scenario's cache.offload)"),
                a.json);
    return;
  }
  if (a.curve && a.concurrency > 0) {
    ReportError(Bad("--curve models the default mode (each request freed at once); drop "
                    "--concurrency"),
                a.json);
    return;
  }
  if (a.concurrency < 0) {
    ReportError(Bad("--concurrency must be positive"), a.json);
    return;
  }
  // With a model, no prompt may exceed its context length; without one, kvsim's own bound.
  TraceLimits limits;
  if (cfg->max_model_len > 0) {
    limits.max_prompt_tokens = cfg->max_model_len;
    limits.why = "the model's max_model_len";
  }
  auto trace = RequestTrace::ReadFile(a.trace, a.skip_bad_lines, limits);
  if (!trace.ok()) {
    ReportError(trace.status(), a.json);
    return;
  }
  // An empty file is bad input, as for `kvsim run`; a file whose every line was skipped
  // (--skip-bad-lines) reports its count instead.
  if (trace->size() == 0 && trace->skipped_lines() == 0) {
    ReportError(Status::Error("bad_trace", a.trace + ": no requests in the trace"), a.json);
    return;
  }
  const int64_t sb = cfg->scheduler_block_size();
  // A model's plan may raise the block (hybrid models cover the Mamba page, page sizes are
  // unified): the replay then runs at the plan's block, which the user must hear about.
  if (sb != a.block_size) {
    std::cerr << fmt::format(
        "kvsim: note: replay: the {}'s KV cache plan sets the block to {} tokens; "
        "--block-size {} is not used\n",
        a.model.empty() ? "scenario" : "model", sb, a.block_size);
  }

  if (a.curve) {
    const int64_t max_cap = (a.num_blocks > 0 || a.cache_tokens > 0) ? cfg->num_blocks : 0;
    auto curve = ReplayCurve(trace.value(), cfg.value(), max_cap);
    if (!curve.ok()) {
      ReportError(curve.status(), a.json);
      return;
    }
    if (a.json) {
      nlohmann::ordered_json j;
      j["requests"] = trace->size();
      j["prompt_tokens"] = curve->prompt_tokens;
      j["block_size"] = sb;
      j["sampled"] = curve->sampled;
      j["min_capacity_blocks"] = curve->min_capacity_blocks;
      j["saturation_blocks"] = curve->saturation_blocks;
      j["skipped_lines"] = trace->skipped_lines();
      auto& pts = j["curve"] = nlohmann::ordered_json::array();
      for (const auto& p : curve->points)
        pts.push_back({{"capacity_blocks", p.capacity_blocks},
                       {"hit_tokens", p.hit_tokens},
                       {"hit_rate", p.hit_rate}});
      std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else {
      std::cout << "capacity_blocks,hit_tokens,hit_rate\n";
      for (const auto& p : curve->points)
        std::cout << fmt::format("{},{},{:.6f}\n", p.capacity_blocks, p.hit_tokens, p.hit_rate);
    }
    return;
  }

  ReplayOptions opts;
  opts.concurrency = a.concurrency;
  opts.per_request = !a.per_request.empty();
  if (offload) opts.offload = &*offload;
  const ReplayResult r = Replay(trace.value(), cfg.value(), opts);
  if (!a.per_request.empty()) {
    std::ofstream out(a.per_request, std::ios::binary | std::ios::trunc);
    if (!out) {
      ReportError(Status::Error("cannot_write", a.per_request + ": cannot open for writing"),
                  a.json);
      return;
    }
    for (const auto& o : r.outcomes) {
      nlohmann::ordered_json j;
      j["id"] = trace.value()[o.index].id;
      j["prompt_tokens"] = o.prompt_tokens;
      j["hit_tokens"] = o.hit_tokens;
      if (offload) j["cpu_hit_tokens"] = o.cpu_hit_tokens;
      if (!o.served) j["served"] = false;
      out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    }
  }
  // No request fitted even alone: the hit rate would be a number about nothing. Say why on
  // stderr and exit 1, as `kvsim run` does when every request is rejected.
  const bool none_served = r.requests > 0 && r.served == 0;
  if (none_served) {
    std::cerr << fmt::format(
        "kvsim: error: replay: none of the {} requests could be served: each needs more blocks "
        "than the cache's {} usable ({} blocks of {} tokens, block 0 is the null block); give "
        "more --num-blocks (or --cache-tokens)\n",
        r.requests, cfg->num_blocks - 1, cfg->num_blocks, sb);
    ExitCode() = 1;
  }
  if (a.json) {
    nlohmann::ordered_json j;
    j["requests"] = r.requests;
    j["prompt_tokens"] = r.prompt_tokens;
    j["hit_tokens"] = r.hit_tokens;
    j["hit_rate"] = none_served ? nlohmann::ordered_json() : nlohmann::ordered_json(r.hit_rate());
    j["blocks_per_s"] = r.blocks_per_s();
    j["blocks_per_cpu_s"] = r.blocks_per_cpu_s();
    j["served"] = r.served;
    j["not_served"] = r.not_served;
    j["skipped_lines"] = trace->skipped_lines();
    j["block_size"] = sb;
    j["num_blocks"] = cfg->num_blocks;
    j["groups"] = cfg->groups.size();
    j["vllm_semantics"] = std::string(VllmSemanticsName(cfg->semantics));
    const int64_t retention = cfg->effective_retention_interval();
    if (retention == KvCacheManagerConfig::kRetentionDense)
      j["prefix_cache_retention_interval"] = nullptr;
    else
      j["prefix_cache_retention_interval"] = retention;
    if (offload) {
      j["gpu_hit_tokens"] = r.hit_tokens;
      j["cpu_hit_tokens"] = r.cpu_hit_tokens;
      j["total_hit_tokens"] = r.hit_tokens + r.cpu_hit_tokens;
      j["cpu_hit_rate"] = r.cpu_hit_rate();
      j["total_hit_rate"] = r.hit_rate() + r.cpu_hit_rate();
      j["full_cpu_hits"] = r.full_cpu_hits;
      j["num_cpu_blocks"] = offload->tier.num_blocks;
      j["offload_block_size"] = offload->offloaded_block_size();
      j["eviction_policy"] = std::string(CpuEvictionPolicyKindName(offload->tier.policy));
      j["store_threshold"] = offload->tier.store_threshold;
      j["cpu_blocks_stored"] = r.cpu_blocks_stored;
      j["cpu_blocks_evicted"] = r.cpu_blocks_evicted;
      j["cpu_blocks_loaded"] = r.cpu_blocks_loaded;
      j["cpu_store_failures"] = r.cpu_store_failures;
    }
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    std::cout << fmt::format(
        "replay {}: {} requests ({} served, {} not served{}), block {} × {} blocks ({} "
        "semantics, {} group{})\n",
        a.trace, r.requests, r.served, r.not_served,
        trace->skipped_lines() > 0 ? fmt::format(", {} bad lines skipped", trace->skipped_lines())
                                   : std::string(),
        sb, cfg->num_blocks, VllmSemanticsName(cfg->semantics), cfg->groups.size(),
        cfg->groups.size() == 1 ? "" : "s");
    if (none_served) {
      std::cout << fmt::format("  prompt tokens {}  hit rate n/a (no request served)\n",
                               r.prompt_tokens);
    } else if (!offload) {
      std::cout << fmt::format("  prompt tokens {}  hit tokens {}  hit rate {:.4f}\n",
                               r.prompt_tokens, r.hit_tokens, r.hit_rate());
    } else {
      std::cout << fmt::format(
          "  CPU tier: {} blocks of {} tokens, {}{}\n", offload->tier.num_blocks,
          offload->offloaded_block_size(), CpuEvictionPolicyKindName(offload->tier.policy),
          offload->tier.store_threshold >= 2
              ? fmt::format(", store_threshold {}", offload->tier.store_threshold)
              : std::string());
      std::cout << fmt::format(
          "  prompt tokens {}  gpu hit tokens {}  cpu hit tokens {}  total {}  hit rate gpu "
          "{:.4f} cpu {:.4f} total {:.4f}\n",
          r.prompt_tokens, r.hit_tokens, r.cpu_hit_tokens, r.hit_tokens + r.cpu_hit_tokens,
          r.hit_rate(), r.cpu_hit_rate(), r.hit_rate() + r.cpu_hit_rate());
      std::cout << fmt::format(
          "  cpu blocks stored {}  evicted {}  loaded {}  store failures {}  full-prompt cpu "
          "hits {}\n",
          r.cpu_blocks_stored, r.cpu_blocks_evicted, r.cpu_blocks_loaded, r.cpu_store_failures,
          r.full_cpu_hits);
    }
    // The replay's speed (blocks_per_s, blocks_per_cpu_s) is in --json only: a wall-clock
    // figure would make the text output differ from run to run.
  }
}

}  // namespace

void RegisterReplay(CLI::App& app) {
  static ReplayArgs args;
  CLI::App* cmd = app.add_subcommand(
      "replay", "cache-only replay of a request trace: vLLM prefix-cache hit rates");
  cmd->add_option("trace", args.trace,
                  "JSONL trace: {\"id\",\"tokens\":[...]} or Mooncake "
                  "{\"hash_ids\":[...],\"input_length\":n,\"block_tokens\":512}")
      ->required();
  cmd->add_option("--block-size", args.block_size, "KV block size in tokens")->required();
  cmd->add_option("--num-blocks", args.num_blocks,
                  "vLLM's num_gpu_blocks (block 0 is the null block)");
  cmd->add_option("--cache-tokens", args.cache_tokens,
                  "capacity in tokens: num_blocks = T / block + 1");
  cmd->add_option("--concurrency", args.concurrency,
                  "keep up to N requests allocated, completed first-in first-out (0, the "
                  "default: each request is freed before the next, the same as 1)");
  cmd->add_option("--hybrid", args.hybrid,
                  "one full-attention group plus one of mamba-align | mamba-all | swa:W");
  cmd->add_option("--model", args.model, "build the groups from a model preset's plan");
  cmd->add_option("--scenario", args.scenario, "build the groups from a scenario's plan");
  cmd->add_option("--vllm-semantics", args.semantics, "classic | latest (default latest)")
      ->check(CLI::IsMember({"classic", "latest"}));
  cmd->add_option("--prefix-cache-retention-interval", args.retention,
                  "[latest] SWA/Mamba checkpoints kept: 0 (default) = replay boundary and "
                  "shared-prefix junctions, N = also one per N-token segment, null = dense");
  cmd->add_option("--per-request", args.per_request,
                  "write {\"id\",\"prompt_tokens\",\"hit_tokens\"} per request to this JSONL");
  cmd->add_flag("--curve", args.curve,
                "print capacity_blocks,hit_tokens,hit_rate for every capacity (one pass, one "
                "full-attention group); hybrid layouts are not a stack algorithm (sparse "
                "retention, windows, Mamba states): their curve is 24 exact replays at "
                "sampled capacities");
  cmd->add_flag("--json", args.json, "print one JSON summary object");
  cmd->add_flag("--skip-bad-lines", args.skip_bad_lines,
                "skip malformed trace lines (counted) instead of failing");
  cmd->add_option("--num-cpu-blocks", args.num_cpu_blocks,
                  "add vLLM's CPU offloading tier of N offloaded blocks below the GPU cache. "
                  "Replay has no steps, so: each request's CPU lookup extends its GPU hit at "
                  "admission (whole offloaded blocks, may cover the whole prompt), its load "
                  "completes before it runs, and its prompt blocks are stored right after its "
                  "prefill with the copy complete before the next request arrives");
  cmd->add_option("--offload-block-size", args.offload_block_size,
                  "offloaded block in tokens, a multiple of --block-size (default: equal)");
  cmd->add_option("--eviction-policy", args.eviction_policy, "CPU tier policy: lru | arc")
      ->check(CLI::IsMember({"lru", "arc"}));
  cmd->add_option("--store-threshold", args.store_threshold,
                  "store a CPU block only after it was looked up N times (below 2: always)");
  cmd->callback([] { RunReplay(args); });
}

}  // namespace kvsim::cli
