// Fuzz target: `kvsim schedule`'s REQUESTS.jsonl parser (sim/instance/step_clock.h), both
// ways. The fast path and the JSON-tree path must agree on every input: the same requests,
// or the same error. An accepted file must keep the documented contract: unique ids, 1 to
// bound prompt tokens, each in [0, 1000000), max_tokens >= 1, arrival_step >= 0.
#include <cstdint>
#include <string>
#include <unordered_set>

#include "sim/instance/step_clock.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int64_t max_model_len = (data[0] & 1) ? 64 : 0;
  const std::string text = AsText(data + 1, size - 1);
  auto fast = kvsim::ParseStepRequests(text, "fuzz.jsonl", max_model_len, /*fast=*/true);
  auto tree = kvsim::ParseStepRequests(text, "fuzz.jsonl", max_model_len, /*fast=*/false);
  ACCEPTED_INVALID(fast.ok() == tree.ok(), "the fast path and the tree disagree on validity");
  if (!fast.ok()) {
    ACCEPTED_INVALID(fast.status().message() == tree.status().message(),
                     "the two paths give different errors");
    return 0;
  }
  ACCEPTED_INVALID(fast->size() == tree->size(), "the two paths read different counts");
  std::unordered_set<std::string> ids;
  for (size_t i = 0; i < fast->size(); ++i) {
    const kvsim::StepRequest& a = (*fast)[i];
    const kvsim::StepRequest& b = (*tree)[i];
    ACCEPTED_INVALID(a.id == b.id && a.tokens == b.tokens && a.max_tokens == b.max_tokens &&
                         a.arrival_step == b.arrival_step && a.priority == b.priority,
                     "the two paths read different requests");
    ACCEPTED_INVALID(ids.insert(a.id).second, "a duplicate id");
    ACCEPTED_INVALID(!a.tokens.empty(), "an empty prompt");
    ACCEPTED_INVALID(max_model_len == 0 || static_cast<int64_t>(a.tokens.size()) < max_model_len,
                     "a prompt of max_model_len tokens or more");
    for (kvsim::TokenId t : a.tokens)
      ACCEPTED_INVALID(t >= 0 && t < kvsim::kFirstGeneratedTokenId, "a token id out of range");
    ACCEPTED_INVALID(a.max_tokens >= 1, "max_tokens < 1");
    ACCEPTED_INVALID(a.arrival_step >= 0, "a negative arrival_step");
  }
  return 0;
}
