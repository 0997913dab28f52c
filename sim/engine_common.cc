#include "sim/engine_common.h"

#include <algorithm>

namespace kvsim {

int64_t VerifyDrafts(SimRequest& r, int64_t num_drafts, double acceptance_rate, Rng& rng) {
  int64_t accepted = 0;
  while (accepted < num_drafts && rng.Bernoulli(acceptance_rate)) ++accepted;
  r.num_computed_tokens -= num_drafts - accepted;
  return accepted;
}

int64_t NextStepDrafts(const SimRequest& r, int64_t num_speculative_tokens) {
  return std::max<int64_t>(
      0, std::min<int64_t>(num_speculative_tokens, r.max_output_tokens - r.num_output_tokens - 1));
}

}  // namespace kvsim
