// IWorkload: where requests come from. The engine pulls open-loop arrivals one at a time
// with Next() and reports each finished request with OnFinish(), where closed-loop
// generators (multi-turn sessions, agent trees) create their follow-ups. Nothing is made
// before the simulation reaches it, and a request carries its prompt as a recipe (a few
// PromptParts), not as token ids: a 200k-request run holds only its live requests, and a
// request waiting in an overloaded queue costs bytes, not kilobytes.
//
// Contract:
//  * Next() returns requests in nondecreasing arrival order, ids in creation order;
//    nullopt ends the open-loop stream (caps on count and duration are the workload's job).
//  * OnFinish() may append follow-ups with arrival >= now; they share the id sequence.
//  * BuildPrompt() writes a request's prompt token ids; the same spec always gives the same
//    ids (the engine builds them when the request enters and drops them once the KV manager
//    has hashed them). The workload must outlive the specs it returned.
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

// One piece of a prompt, kept instead of its token ids (IWorkload::BuildPrompt makes them).
struct PromptPart {
  enum class Kind : uint8_t {
    kShared,       // the workload's shared sequence `key` (a system prompt)
    kRandom,       // ids drawn from the stream at `rng`, scaled by multiply-shift
    kRandomBelow,  // ids drawn from the stream at `rng`, modulo the vocabulary
    kOutputs,      // the first `length` output tokens of the request whose output_seed is `key`
    kRecord,       // the token ids of the workload's source record `key` (a trace line)
  };
  Kind kind = Kind::kRandom;
  int64_t length = 0;  // tokens
  uint64_t key = 0;
  Rng::State rng{};  // kRandom, kRandomBelow: the stream's state before the first draw
};

struct RequestSpec {
  RequestId id;
  Tick arrival = 0;
  int64_t num_prompt_tokens = 0;   // Σ prompt[i].length
  std::vector<PromptPart> prompt;  // the prompt, in order
  int64_t max_output_tokens = 1;
  uint64_t output_seed = 0;
  int64_t group = -1;  // session / tree id (-1: none)
  int32_t turn = 0;    // turn within a session, depth within a tree
  int32_t turns = 0;   // multi_turn: the session's number of turns

  void Add(const PromptPart& part) {
    prompt.push_back(part);
    num_prompt_tokens += part.length;
  }
  // Bytes this spec holds (for the engine's footprint counters).
  int64_t bytes() const {
    return static_cast<int64_t>(sizeof(RequestSpec) + prompt.capacity() * sizeof(PromptPart));
  }
};

// A token id in [0, vocab) from 64 random bits: the top 32 scaled by a multiply-shift (a 64-bit
// modulo per token was a division on the simulator's hottest paths).
inline TokenId ScaleToVocab(uint64_t random, uint64_t vocab) {
  return static_cast<TokenId>(((random >> 32) * vocab) >> 32);
}

// The k-th output token of a request, drawn as prompts draw theirs.
inline TokenId OutputToken(uint64_t output_seed, int64_t k, int64_t vocab) {
  return ScaleToVocab(SplitMix64(output_seed + static_cast<uint64_t>(k) * 0x9e3779b97f4a7c15ULL),
                      static_cast<uint64_t>(vocab));
}

class IWorkload {
 public:
  virtual ~IWorkload() = default;
  virtual std::optional<RequestSpec> Next() = 0;
  virtual void OnFinish(const RequestSpec& spec, int64_t num_output_tokens, Tick now,
                        std::vector<RequestSpec>& follow_ups) {}
  // Writes the prompt of `spec` into `out` (cleared first).
  void BuildPrompt(const RequestSpec& spec, std::vector<TokenId>& out) const;
  // One line for reports ("shared_prefix: 2000 requests at 20/s, ...").
  virtual std::string Describe() const = 0;
  // Vocabulary for OutputToken.
  virtual int64_t vocab_size() const = 0;

 protected:
  // Appends the ids of a kShared or kRecord part (the workload holds those sequences).
  virtual void AppendStored(const PromptPart& part, std::vector<TokenId>& out) const;
};

// A kRandom / kRandomBelow part of `length` tokens starting at `stream`'s state; advances
// `stream` past its draws, as drawing the ids would.
PromptPart RandomPart(Rng& stream, int64_t length, bool modulo = false);

// Builds the workload a scenario asks for. `seed` is the scenario seed. A missing trace file
// is an error when trace.required, else the synthetic generator is used and `note` says so.
Result<std::unique_ptr<IWorkload>> MakeWorkload(const WorkloadConfig& config, uint64_t seed,
                                                std::string* note);

// Cheap up-front check of what MakeWorkload would refuse (a required trace that is missing),
// so that commands can fail with one clear error before running any point.
Status CheckWorkload(const WorkloadConfig& config);

}  // namespace kvsim
