// The block pool's eviction policy: which free block is reused next. A pool keeps its free
// blocks in one queue in eviction order (core/free_block_queue.h) and always hands out blocks
// from the head, so a policy is entirely its placement rule: where a block whose last
// reference was just dropped joins the queue.
//
// Contract (BlockEvictionPolicy): `Placement(hashed)` returns the end a released block joins,
// given whether it still carries a hash (a later prefix hit may reuse it) — kTail: it waits
// behind every free block (evicted last); kHead: it is reused first. When one release frees
// several blocks, the pool visits them in release order, appends the kTail ones in that order,
// and puts the kHead ones before the head as one run in that same order (the first released
// becomes the head). A policy is a small value, decided at construction; it owns no blocks.
//
// VllmEvictionPolicy is vLLM v1's (reference §5.2): [classic] every released block at the
// tail (LRU by release time); [latest] hashed blocks at the tail, unhashed ones (no hit can
// reuse them) at the head. With prefix caching off nothing is hashed, so in latest every
// released block goes to the head.
#pragma once

#include <concepts>
#include <cstdint>

#include "core/vllm_semantics.h"

namespace kvsim {

enum class FreeQueueEnd : uint8_t { kHead, kTail };

template <class P>
concept BlockEvictionPolicy = requires(const P p, bool hashed) {
  { p.Placement(hashed) } -> std::same_as<FreeQueueEnd>;
};

class VllmEvictionPolicy {
 public:
  explicit VllmEvictionPolicy(VllmSemantics semantics)
      : unhashed_to_head_(semantics == VllmSemantics::kLatest) {}

  FreeQueueEnd Placement(bool hashed) const {
    return unhashed_to_head_ && !hashed ? FreeQueueEnd::kHead : FreeQueueEnd::kTail;
  }

 private:
  bool unhashed_to_head_;
};
static_assert(BlockEvictionPolicy<VllmEvictionPolicy>);

}  // namespace kvsim
