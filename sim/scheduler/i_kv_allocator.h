// IKvAllocator: what the scheduler needs from the KV cache manager, and nothing more. It is
// the seam that keeps the scheduler a pure step function: tests drive the scheduler with a
// small block-counting allocator (tests/sim/fake_kv_allocator.h) and the engine plugs in the
// real prefix-caching manager (sim/kv_adapter.h over core/kv_cache_manager.h).
//
// Contract (vLLM v1 `KVCacheManager`, reference §5.3 and §5.6):
//  * FindPrefixHit is called only for a request with num_computed_tokens == 0. It returns the
//    number of prompt tokens found in the prefix cache (block-aligned, at most num_tokens − 1)
//    and remembers the hit blocks for the AllocateSlots call that may follow. It must not
//    change anything another request can observe (no touch, no eviction).
//  * AllocateSlots either reserves every block the request needs for `num_new_tokens` more
//    tokens (after `num_new_computed_tokens` hit tokens, plus `num_lookahead_tokens` slots)
//    and returns true, or changes nothing and returns false ("out of blocks" is a normal
//    answer, not an error). `full_sequence_must_fit` first checks that the whole prompt fits;
//    `apply_watermark` is set for waiting requests when others are already running.
//  * AlignChunk trims a prefill chunk of `n` tokens starting at `start` (computed + hit) so
//    that it ends where the allocator can cache a state (the Mamba `align` split, §6);
//    `shared_prefix_tokens` is the hit's junction ([latest]) and `chunk_limit` the most a step
//    could give the request. Allocators without Mamba `align` groups return `n`.
//  * Free releases all of the request's blocks (in reverse order); called on preemption and
//    when a request finishes.
//  * External (connector) tokens: AllocateSlots with num_external_computed_tokens = e > 0
//    reserves slots for hit + e tokens (plus the chunk); delay_cache_blocks leaves them
//    uncached until CacheBlocks is called once the load is done.
// The scheduler calls these in vLLM's order and never looks at blocks itself.
#pragma once

#include <cstdint>

#include "sim/scheduler/sim_request.h"

namespace kvsim {

struct AllocateArgs {
  int64_t num_new_tokens = 0;
  int64_t num_new_computed_tokens = 0;  // prefix-hit tokens being added (new admissions)
  int64_t num_lookahead_tokens = 0;     // spec-decode slots beyond the scheduled tokens
  // A connector's hit beyond the GPU hit (tokens to be loaded): slots are allocated for them
  // too; with delay_cache_blocks nothing is cached until the load is done (CacheBlocks).
  int64_t num_external_computed_tokens = 0;
  bool delay_cache_blocks = false;
  int64_t reserved_blocks = 0;          // [latest] free blocks this allocation must leave alone
  bool full_sequence_must_fit = false;
  bool apply_watermark = false;
};

struct PrefixHitInfo {
  int64_t tokens = 0;                // hit tokens
  int64_t shared_prefix_tokens = 0;  // [latest] junction: longest single-group hit (≥ tokens)
};

class IKvAllocator {
 public:
  virtual ~IKvAllocator() = default;
  virtual PrefixHitInfo FindPrefixHit(const SimRequest& req) = 0;
  virtual int64_t AlignChunk(const SimRequest& req, int64_t start, int64_t n,
                             int64_t shared_prefix_tokens, int64_t chunk_limit) = 0;
  virtual bool AllocateSlots(const SimRequest& req, const AllocateArgs& args) = 0;
  virtual void Free(const SimRequest& req) = 0;
  // cache_blocks(request, num_tokens): caches the request's full blocks up to num_tokens (a
  // request promoted after its connector load). Allocators without a prefix cache ignore it.
  virtual void CacheBlocks(const SimRequest& req, int64_t num_tokens) {
    (void)req;
    (void)num_tokens;
  }
  // Blocks the request still needs, beyond those it holds, for its whole known sequence
  // ([latest] _request_remaining_blocks, for the async-load reservation).
  virtual int64_t RemainingBlocks(const SimRequest& req) {
    (void)req;
    return 0;
  }
};

}  // namespace kvsim
