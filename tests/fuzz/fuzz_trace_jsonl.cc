// libFuzzer target: token / Mooncake JSONL traces (sim/trace/request_trace.h). The first byte
// picks --skip-bad-lines. An accepted trace must satisfy the format's contract, and every
// prompt accessor must work on it.
#include <cmath>
#include <cstdint>
#include <vector>

#include "sim/trace/request_trace.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  kvsim::TraceLimits limits;
  limits.max_prompt_tokens = 1 << 16;  // small, so one input stays fast
  limits.why = "fuzz bound";
  auto t = kvsim::RequestTrace::Parse(AsText(data + 1, size - 1), "fuzz.jsonl", data[0] & 1,
                                      limits);
  if (!t.ok()) return 0;
  std::vector<kvsim::TokenId> tokens, tail, firsts;
  std::vector<kvsim::BlockHash> hashes;
  for (size_t i = 0; i < t->size(); ++i) {
    const kvsim::TraceRecord& r = (*t)[i];
    ACCEPTED_INVALID(r.input_length >= 1 && r.input_length <= limits.max_prompt_tokens,
                     "a prompt length outside [1, limit]");
    ACCEPTED_INVALID(r.timestamp >= 0 && std::isfinite(r.timestamp), "a bad timestamp");
    ACCEPTED_INVALID(r.output_length >= 0, "a negative output_length");
    if (t->has_hash_ids(i)) {
      const int64_t want = (r.input_length + r.block_tokens - 1) / r.block_tokens;
      ACCEPTED_INVALID(static_cast<int64_t>(r.count) == want, "len(hash_ids) != ceil(n / bt)");
    } else {
      ACCEPTED_INVALID(static_cast<int64_t>(r.count) == r.input_length, "token count");
    }
    t->PromptTokens(i, tokens);
    ACCEPTED_INVALID(static_cast<int64_t>(tokens.size()) == r.input_length, "prompt size");
    for (int64_t bs : {1, 16, 512}) {
      t->PromptBlockHashes(i, bs, hashes, tail);
      ACCEPTED_INVALID(static_cast<int64_t>(hashes.size()) == r.input_length / bs,
                       "full-block hashes");
      (void)t->PromptBlockFirstTokens(i, bs, firsts, tail);
    }
  }
  return 0;
}
