// kvsim replay: cache-only replay of a request trace (token JSONL or Mooncake hash_ids
// JSONL) through the prefix-caching KV cache manager; prints the hit rate, or with --curve
// the hit rate at every capacity in one pass. With a CPU offloading tier (--num-cpu-blocks, or
// a --scenario with cache.offload) it reports GPU and CPU hits separately.
// The flags' checks, the replay and its texts are sim/run/replay_command.h, which the Python
// module calls too; this file parses the flags and writes the outputs.
#include <fstream>
#include <iostream>

#include "apps/kvsim/commands.h"
#include "sim/run/replay_command.h"

namespace kvsim::cli {
namespace {

// The flags (sim/run/replay_command.h), the --per-request file and --json.
struct ReplayArgs {
  ReplayFlags flags;
  std::string per_request;
  bool json = false;
};

void RunReplay(const ReplayArgs& a) {
  ReplayFlags flags = a.flags;
  flags.per_request = !a.per_request.empty();
  auto run = RunReplayCommand(flags);
  if (!run.ok()) {
    ReportError(run.status(), a.json);
    return;
  }
  if (!run->note.empty()) std::cerr << "kvsim: note: " << run->note << "\n";
  if (!a.per_request.empty()) {
    std::ofstream out(a.per_request, std::ios::binary | std::ios::trunc);
    if (!out) {
      ReportError(Status::Error("cannot_write", a.per_request + ": cannot open for writing"),
                  a.json);
      return;
    }
    out << ReplayPerRequestJsonl(run.value());
  }
  // No request fitted even alone: the hit rate would be a number about nothing. Say why on
  // stderr and exit 1, as `kvsim run` does when every request is rejected.
  if (const std::string none = ReplayNoneServedMessage(run.value()); !none.empty()) {
    std::cerr << "kvsim: error: " << none << "\n";
    ExitCode() = 1;
  }
  std::cout << (a.json ? ReplayJson(run.value()) : ReplayText(flags, run.value()));
}

}  // namespace

void RegisterReplay(CLI::App& app) {
  static ReplayArgs args;
  CLI::App* cmd = app.add_subcommand(
      "replay", "cache-only replay of a request trace: vLLM prefix-cache hit rates");
  cmd->add_option("trace", args.flags.trace,
                  "JSONL trace: {\"id\",\"tokens\":[...]} or Mooncake "
                  "{\"hash_ids\":[...],\"input_length\":n,\"block_tokens\":512}")
      ->required();
  cmd->add_option("--block-size", args.flags.block_size, "KV block size in tokens")->required();
  cmd->add_option("--num-blocks", args.flags.num_blocks,
                  "vLLM's num_gpu_blocks (block 0 is the null block)");
  cmd->add_option("--cache-tokens", args.flags.cache_tokens,
                  "capacity in tokens: num_blocks = T / block + 1");
  cmd->add_option("--concurrency", args.flags.concurrency,
                  "keep up to N requests allocated, completed first-in first-out (0, the "
                  "default: each request is freed before the next, the same as 1)");
  cmd->add_option("--hybrid", args.flags.hybrid,
                  "one full-attention group plus one of mamba-align | mamba-all | swa:W");
  cmd->add_option("--model", args.flags.model, "build the groups from a model preset's plan");
  cmd->add_option("--scenario", args.flags.scenario, "build the groups from a scenario's plan");
  cmd->add_option("--vllm-semantics", args.flags.semantics, "classic | latest (default latest)")
      ->check(CLI::IsMember({"classic", "latest"}));
  cmd->add_option("--prefix-cache-retention-interval", args.flags.retention,
                  "[latest] SWA/Mamba checkpoints kept: 0 (default) = replay boundary and "
                  "shared-prefix junctions, N = also one per N-token segment, null = dense");
  cmd->add_option("--per-request", args.per_request,
                  "write {\"id\",\"prompt_tokens\",\"hit_tokens\"} per request to this JSONL");
  cmd->add_flag("--curve", args.flags.curve,
                "print capacity_blocks,hit_tokens,hit_rate for every capacity (one pass, one "
                "full-attention group); hybrid layouts are not a stack algorithm (sparse "
                "retention, windows, Mamba states): their curve is 24 exact replays at "
                "sampled capacities");
  cmd->add_flag("--json", args.json, "print one JSON summary object");
  cmd->add_flag("--skip-bad-lines", args.flags.skip_bad_lines,
                "skip malformed trace lines (counted) instead of failing");
  cmd->add_option("--num-cpu-blocks", args.flags.num_cpu_blocks,
                  "add vLLM's CPU offloading tier of N offloaded blocks below the GPU cache. "
                  "Replay has no steps, so: each request's CPU lookup extends its GPU hit at "
                  "admission (whole offloaded blocks, may cover the whole prompt), its load "
                  "completes before it runs, and its prompt blocks are stored right after its "
                  "prefill with the copy complete before the next request arrives");
  cmd->add_option("--offload-block-size", args.flags.offload_block_size,
                  "offloaded block in tokens, a multiple of --block-size (default: equal)");
  cmd->add_option("--eviction-policy", args.flags.eviction_policy, "CPU tier policy: lru | arc")
      ->check(CLI::IsMember({"lru", "arc"}));
  cmd->add_option("--store-threshold", args.flags.store_threshold,
                  "store a CPU block only after it was looked up N times (below 2: always)");
  cmd->callback([] { RunReplay(args); });
}

}  // namespace kvsim::cli
