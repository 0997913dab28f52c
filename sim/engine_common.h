// How a decode step's speculative drafts are verified, the same for every instance
// (sim/instance/engine_instance.h). The caller owns the acceptance stream; these functions
// update or read only the one request they are given. (How a scenario becomes an instance's
// config is sim/instance_builder.h.)
#pragma once

#include <cstdint>

#include "core/kv_cache_manager.h"
#include "core/page_planner.h"
#include "core/status.h"
#include "sim/scheduler/scheduler.h"
#include "sim/workload/rng.h"

namespace kvsim {

// Verifies the `num_drafts` drafts a request just computed: each is accepted with
// `acceptance_rate`, left to right until the first rejection, and the rejected ones are
// rolled back from r.num_computed_tokens. Returns how many were accepted.
int64_t VerifyDrafts(SimRequest& r, int64_t num_drafts, double acceptance_rate, Rng& rng);

// The drafts a running request's next step carries: num_speculative_tokens, but none that
// would go past its max_output_tokens.
int64_t NextStepDrafts(const SimRequest& r, int64_t num_speculative_tokens);

}  // namespace kvsim
