// The per-type longest-prefix-hit finders of vLLM's single-type managers (reference §5.4),
// as templates over how a block is looked up, so the KV cache manager runs them against the
// BlockPool and tests run them against plain cached/not-cached patterns (§8.12, §8.14).
//
// Every finder works in blocks of the group's own size B and returns the hit length in
// blocks n (the hit is n·B tokens). Positions it found cached are reported through
// `put(j, blocks)`; positions below n that were never put are null blocks (skipped). Callers
// must truncate their list to n afterwards (a finder may have put positions it later drops).
//   cached(j, out) -> bool : is coarse block j cached (in every group of the lookup unit)?
//                            If so and `out` is non-null, writes one block id per group.
//   put(j, blocks)         : record the blocks of position j.
// `max_length` is in tokens; `alignment` is the scheduler block size (hits must end on it).
#pragma once

#include <cstdint>

namespace kvsim {

// Full attention: scan left to right, stop at the first miss; EAGLE drops one block; then
// round down to the alignment.
template <class Cached, class Put, class Id>
int64_t FindFullAttentionHit(int64_t max_length, int64_t B, int64_t alignment, bool use_eagle,
                             Cached&& cached, Put&& put, Id* buf) {
  const int64_t nmax = max_length / B;
  int64_t n = 0;
  while (n < nmax && cached(n, buf)) {
    put(n, buf);
    ++n;
  }
  if (use_eagle && n > 0) --n;
  while (B != alignment && n > 0 && (n * B) % alignment != 0) --n;
  return n;
}

// Sliding window W: the hit needs c = cdiv(W − 1, B) consecutive cached blocks ending at the
// boundary (c + 1 with EAGLE, then one dropped). Scan right to left; a run may only start
// (at its right end) on an aligned boundary. Without a full run, the leading run from block 0.
template <class Cached, class Put, class Id>
int64_t FindSlidingWindowHit(int64_t max_length, int64_t B, int64_t window, int64_t alignment,
                             bool use_eagle, Cached&& cached, Put&& put, Id* buf) {
  int64_t need = (window - 1 + B - 1) / B;
  if (use_eagle) ++need;
  const int64_t nmax = max_length / B;
  int64_t run = 0;
  int64_t n = -1;
  for (int64_t i = nmax - 1; i >= 0; --i) {
    if (cached(i, buf)) {
      if (run == 0 && B != alignment && ((i + 1) * B) % alignment != 0) continue;
      put(i, buf);
      ++run;
      if (run >= need) {
        n = i + run;
        break;
      }
    } else {
      run = 0;
    }
  }
  if (n < 0) {
    n = run;  // the leading run from block 0 (possibly 0)
    while (B != alignment && n > 0 && (n * B) % alignment != 0) --n;
  }
  if (use_eagle && n > 0) --n;
  return n;
}

// Chunked local attention C: every block before the chunk holding max_length is null and
// free; from there, left to right until the first miss.
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

// Mamba: the largest i ≤ max_length/B − 1 whose block is cached and whose end (i+1)·B is
// aligned; the hit is [null × i, block_i].
template <class Cached, class Put, class Id>
int64_t FindMambaHit(int64_t max_length, int64_t B, int64_t alignment, Cached&& cached,
                     Put&& put, Id* buf) {
  const int64_t nmax = max_length / B;
  for (int64_t i = nmax - 1; i >= 0; --i) {
    if (B != alignment && ((i + 1) * B) % alignment != 0) continue;
    if (cached(i, buf)) {
      put(i, buf);
      return i + 1;
    }
  }
  return 0;
}

}  // namespace kvsim
