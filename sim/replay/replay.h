// Cache-only replay of a request trace through the KV cache manager: the prefix-cache hit
// rate a workload gets at a given block size, capacity and hybrid layout, exactly as vLLM's
// scheduler would compute it for each request arriving with its whole prompt (issue 3):
// look up the hit (capped so at least one token is computed), allocate the rest, cache the
// full blocks, then free the request — or, with `concurrency` N > 0, keep up to N requests
// allocated and complete them first-in first-out (when an allocation fails the oldest is
// completed and the request retried; one that cannot fit alone is "not served").
// With a Mamba `align` group the prompt is allocated in the chunks the scheduler's
// block-aligned split makes (reference §6), so Mamba states are cached where chunks end.
//
// ReplayCurve computes the hit rate at every capacity in one pass with LRU stack distances
// (Mattson et al.). It is exact where vLLM's eviction is a stack algorithm; see its comment.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/kv_cache_manager.h"
#include "core/offload/offload_connector.h"
#include "core/status.h"
#include "sim/trace/request_trace.h"

namespace kvsim {

struct ReplayOptions {
  int64_t concurrency = 0;   // 0: free each request right after it is cached
  bool per_request = false;  // fill ReplayResult::outcomes
  // Tests only: materialize each prompt's tokens and hash them in the manager (the general
  // path) instead of hashing straight from the trace's hash ids.
  bool materialize_tokens = false;
  // A CPU offloading tier below the GPU cache (null = none). Replay has no steps, so each
  // request's CPU lookup extends its GPU hit at admission, its load completes before it runs,
  // and its prompt blocks are stored right after its prefill, the copy completing before the
  // next request arrives (vLLM's earliest timing: a block stored by one request is visible to
  // every later one).
  const OffloadConnectorConfig* offload = nullptr;
};

struct RequestOutcome {
  size_t index = 0;  // into the trace
  int64_t prompt_tokens = 0;
  int64_t hit_tokens = 0;      // from the GPU prefix cache
  int64_t cpu_hit_tokens = 0;  // loaded from the CPU tier (vLLM's external hit e)
  bool served = true;
};

struct ReplayResult {
  int64_t requests = 0;      // requests in the trace
  int64_t served = 0;
  int64_t not_served = 0;    // could not fit even alone
  int64_t prompt_tokens = 0; // Σ over served requests
  int64_t hit_tokens = 0;    // Σ over served requests (GPU prefix-cache hits)
  // With a CPU tier (ReplayOptions::offload): Σ CPU hits over served requests; requests whose
  // whole prompt came from the CPU (vLLM still recomputes their last token); CPU blocks
  // stored, evicted to make room, loaded; stores that found no room (retried never: replay
  // has no next step for a request).
  int64_t cpu_hit_tokens = 0;
  int64_t full_cpu_hits = 0;
  int64_t cpu_blocks_stored = 0;
  int64_t cpu_blocks_evicted = 0;
  int64_t cpu_blocks_loaded = 0;
  int64_t cpu_store_failures = 0;
  int64_t blocks = 0;        // Σ cdiv(prompt, block) over all requests (scheduler block)
  double seconds = 0;        // wall time of the replay loop (hashing and cache ops; the
                             // trace is parsed before)
  double cpu_seconds = 0;    // CPU time of the same loop (robust on a loaded machine)
  std::vector<RequestOutcome> outcomes;

  double cpu_hit_rate() const {
    return prompt_tokens > 0
               ? static_cast<double>(cpu_hit_tokens) / static_cast<double>(prompt_tokens)
               : 0.0;
  }
  double hit_rate() const {
    return prompt_tokens > 0 ? static_cast<double>(hit_tokens) / static_cast<double>(prompt_tokens)
                             : 0.0;
  }
  double blocks_per_s() const { return seconds > 0 ? static_cast<double>(blocks) / seconds : 0; }
  double blocks_per_cpu_s() const {
    return cpu_seconds > 0 ? static_cast<double>(blocks) / cpu_seconds : 0;
  }
};

ReplayResult Replay(const RequestTrace& trace, const KvCacheManagerConfig& config,
                    const ReplayOptions& options = {});

// One row of the hit-rate-vs-capacity curve. capacity_blocks is vLLM's num_gpu_blocks
// (including the null block).
struct CurvePoint {
  int64_t capacity_blocks = 0;
  int64_t hit_tokens = 0;
  double hit_rate = 0;
};

struct CurveResult {
  // false: the one-pass stack curve (a point wherever the value changes); true: separate
  // replays at sampled capacities (hybrid layouts), exact at those capacities only.
  bool sampled = false;
  int64_t prompt_tokens = 0;
  int64_t min_capacity_blocks = 0;  // smallest num_blocks at which every request fits
  int64_t saturation_blocks = 0;    // from here on the hit no longer grows
  // One point per capacity at which hit_tokens changes, from min_capacity_blocks up to
  // min(max_capacity_blocks, saturation); between points the value of the previous point holds.
  std::vector<CurvePoint> points;
  // Hit tokens at any capacity (num_blocks ≥ min_capacity_blocks).
  int64_t HitTokensAt(int64_t capacity_blocks) const;
  std::vector<int64_t> hist;  // hit tokens by effective usable capacity needed
};

// The curve for a single full-attention group (the default replay mode, concurrency off).
//
// Why this is exact: with requests freed one at a time, every block of a request is touched
// or allocated and then freed in reverse order, so the free queue orders block *contents* by
// recency — an LRU stack — and a chain's ancestors are always more recent than its
// descendants, so the hit at capacity U is the longest prefix whose blocks all have stack
// depth ≤ U. [classic] the partial last block of each request is a unique item in the
// stack; [latest] it goes to the head and costs exactly one slot while it is the newest
// unhashed block. Where vLLM is not a stack algorithm: a prompt of exactly k·B tokens
// recomputes its last block even when it is cached (the hit cap), which leaves a second
// physical copy ("ghost") in the queue taking one slot until evicted. With g ghosts alive a
// replay at U sees exactly the stack's top U − g items, so
//     curve(U − D) ≤ replay(U) ≤ curve(U),  D = number of such duplicate recomputes,
// which tests check; with no block-aligned repeat prompts the two agree exactly.
// Capacities below min_capacity_blocks (where some request cannot be served) are not
// reported, because unserved requests would change the stack differently per capacity.
//
// Hybrid layouts (several groups, sliding window, Mamba) are not a stack algorithm: a Mamba
// hit touches one state block while a shorter hit recomputes others, and under [latest]
// sparse retention the blocks kept depend on the junctions found. For them the curve is
// `kSampledCurvePoints` separate replays at capacities spaced geometrically from
// min_capacity_blocks to max_capacity_blocks (default: the capacity at which nothing is ever
// evicted, at most 2^21 blocks), each exact; `sampled` is set and HitTokensAt is not
// available.
inline constexpr int kSampledCurvePoints = 24;
Result<CurveResult> ReplayCurve(const RequestTrace& trace, const KvCacheManagerConfig& config,
                                int64_t max_capacity_blocks = 0);

}  // namespace kvsim
