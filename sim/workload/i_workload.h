// IWorkload: where requests come from. The engine pulls open-loop arrivals one at a time
// with Next() (so a 100k-request run never holds more than the live requests in memory) and
// reports each finished request with OnFinish(), where closed-loop generators (multi-turn
// sessions, agent trees) create their follow-ups.
//
// Contract:
//  * Next() returns requests in nondecreasing arrival order, ids in creation order;
//    nullopt ends the open-loop stream (caps on count and duration are the workload's job).
//  * OnFinish() may append follow-ups with arrival >= now; they share the id sequence.
//  * Output token ids are a pure function of (output_seed, index): OutputToken() below. The
//    engine appends them to the KV manager as they are generated, and a multi-turn follow-up
//    rebuilds the same ids into its prompt, so a session's next turn can hit its own cache.
//  * All randomness comes from the seed given at construction.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/block_hash.h"
#include "core/status.h"
#include "sim/event.h"
#include "sim/scheduler/sim_request.h"
#include "sim/workload/rng.h"

namespace kvsim {

struct WorkloadConfig;

struct RequestSpec {
  RequestId id = 0;
  Tick arrival = 0;
  std::vector<TokenId> prompt;
  int64_t max_output_tokens = 1;
  uint64_t output_seed = 0;
  int64_t group = -1;  // session / tree id (-1: none)
  int32_t turn = 0;    // turn within a session, depth within a tree
};

// The k-th output token of a request.
inline TokenId OutputToken(uint64_t output_seed, int64_t k, int64_t vocab) {
  return static_cast<TokenId>(SplitMix64(output_seed + static_cast<uint64_t>(k) *
                                                           0x9e3779b97f4a7c15ULL) %
                              static_cast<uint64_t>(vocab));
}

class IWorkload {
 public:
  virtual ~IWorkload() = default;
  virtual std::optional<RequestSpec> Next() = 0;
  virtual void OnFinish(const RequestSpec& spec, int64_t num_output_tokens, Tick now,
                        std::vector<RequestSpec>& follow_ups) {}
  // One line for reports ("shared_prefix: 2000 requests at 20/s, ...").
  virtual std::string Describe() const = 0;
  // Vocabulary for OutputToken.
  virtual int64_t vocab_size() const = 0;
};

// Builds the workload a scenario asks for. `seed` is the scenario seed. A missing trace file
// is an error when trace.required, else the synthetic generator is used and `note` says so.
Result<std::unique_ptr<IWorkload>> MakeWorkload(const WorkloadConfig& config, uint64_t seed,
                                                std::string* note);

// Cheap up-front check of what MakeWorkload would refuse (a required trace that is missing),
// so that commands can fail with one clear error before running any point.
Status CheckWorkload(const WorkloadConfig& config);

}  // namespace kvsim
