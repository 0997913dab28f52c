// SpecConfig: how an instance's drafts are accepted (the scenario's `spec:` section). How
// many tokens are drafted per step is the cache's (cache.num_speculative_tokens), since it
// sizes the KV lookahead. The instance owns this struct; the scenario loader
// (sim/scenario/sim_sections.cc) only fills it, where each key's help text lives, and the
// instance builder (sim/instance_builder.h) turns it into the instance's drafter settings.
#pragma once

#include <string>

namespace kvsim {

struct SpecConfig {
  double acceptance_rate = 0.7;  // per-draft-token acceptance probability (i.i.d.)
  std::string method = "mtp";    // mtp | eagle | draft | dflash
  bool eagle() const { return method == "eagle" || method == "mtp"; }
};

}  // namespace kvsim
