#include "sim/workload/i_workload.h"

#include "core/check.h"

namespace kvsim {

PromptPart RandomPart(Rng& stream, int64_t length, bool modulo) {
  PromptPart p;
  p.kind = modulo ? PromptPart::Kind::kRandomBelow : PromptPart::Kind::kRandom;
  p.length = length;
  p.rng = stream.state();
  // The stream moves on exactly as if the ids had been drawn now, so every later draw (and
  // so every output) is the one an eager generator would make.
  stream.Discard(length);
  return p;
}

void IWorkload::AppendStored(const PromptPart& part, std::vector<TokenId>& out) const {
  KVSIM_CHECK_MSG(false, "this workload has no stored prompt sequences");
}

void IWorkload::BuildPrompt(const RequestSpec& spec, std::vector<TokenId>& out) const {
  out.clear();
  out.reserve(static_cast<size_t>(spec.num_prompt_tokens));
  const int64_t vocab = vocab_size();
  const uint64_t v = static_cast<uint64_t>(vocab);
  for (const PromptPart& p : spec.prompt) {
    switch (p.kind) {
      case PromptPart::Kind::kRandom: {
        Rng r = Rng::FromState(p.rng);
        for (int64_t i = 0; i < p.length; ++i) out.push_back(ScaleToVocab(r.Next(), v));
        break;
      }
      case PromptPart::Kind::kRandomBelow: {
        Rng r = Rng::FromState(p.rng);
        for (int64_t i = 0; i < p.length; ++i) out.push_back(static_cast<TokenId>(r.Below(v)));
        break;
      }
      case PromptPart::Kind::kOutputs:
        for (int64_t k = 0; k < p.length; ++k) out.push_back(OutputToken(p.key, k, vocab));
        break;
      case PromptPart::Kind::kShared:
      case PromptPart::Kind::kRecord:
        AppendStored(p, out);
        break;
    }
  }
  KVSIM_CHECK(static_cast<int64_t>(out.size()) == spec.num_prompt_tokens);
}

}  // namespace kvsim
