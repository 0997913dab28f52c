// Chunked local attention (chunk C): a token reads only the tokens of its own C-token chunk,
// so every block before the current chunk is freed (null), a hit starts at the chunk holding
// its end, and a request holds at most about (C + in-flight tokens) / B blocks. The hit
// finder is a template so tests can run it on plain patterns; the policy runs it over the
// pool. Contract: core/kv_group/kv_group_policy.h.
#pragma once

#include <cstdint>

#include "core/kv_group/kv_group_policy.h"

namespace kvsim {

// Every block before the chunk holding max_length is null and free; from there, left to
// right until the first miss.
template <class Cached, class Put, class Id>
int64_t FindChunkedLocalHit(int64_t max_length, int64_t B, int64_t chunk, Cached&& cached,
                            Put&& put, Id* buf) {
  const int64_t start = max_length / chunk * chunk;
  const int64_t nmax = max_length / B;
  int64_t n = start / B;
  while (n < nmax && cached(n, buf)) {
    put(n, buf);
    ++n;
  }
  return n;
}

class ChunkedLocalPolicy final : public KvGroupPolicy {
 public:
  using KvGroupPolicy::KvGroupPolicy;

  int64_t FindHit(int64_t max_length, bool drop_eagle, const HitProbe& cached, const HitSink& put,
                  BlockId* buf) const override;
  // The tokens of every chunk before the current one.
  int64_t NumSkippedTokens(int64_t num_computed_tokens) const override {
    const int64_t c = group().attention_chunk_size;
    return num_computed_tokens / c * c;
  }
  // One chunk plus a step's tokens.
  int64_t MaxBlocksPerRequest(int64_t max_len) const override;
};

}  // namespace kvsim
