// ScriptedWorkload: a workload for hand-worked cluster and engine tests. The test lists the
// open-loop requests (arrival, prompt and output lengths, prompt content); a request may ask
// for closed-loop follow-ups, each arriving when its predecessor finishes. Prompts are
// kRecord parts whose key is the content id, so requests with equal content share every
// token (and prefix-cache hits) and the workload sees each prompt being built: a request's
// prompt is built when it enters a simulator, which lets a test check when that happened.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sim/workload/i_workload.h"

namespace kvsim {

struct ScriptedRequest {
  Tick arrival = 0;
  int64_t prompt_tokens = 1;
  int64_t output_tokens = 1;
  uint64_t content = 0;  // prompts with the same content have the same tokens
  int follow_ups = 0;    // closed-loop turns after this one (fresh content, same lengths)
};

class ScriptedWorkload : public IWorkload {
 public:
  explicit ScriptedWorkload(std::vector<ScriptedRequest> requests)
      : requests_(std::move(requests)) {}

  std::optional<RequestSpec> Next() override {
    ++next_calls;
    // Open-loop requests are pulled lazily: each one after the previous has entered.
    for (RequestId id : open_loop_ids) {
      if (!built_.count(id)) pulled_early = true;
    }
    if (next_ >= requests_.size()) return std::nullopt;
    const ScriptedRequest& s = requests_[next_++];
    RequestSpec spec = Spec(s.arrival, s.prompt_tokens, s.output_tokens, s.content);
    spec.turns = s.follow_ups;
    open_loop_ids.push_back(spec.id);
    return spec;
  }

  void OnFinish(const RequestSpec& spec, int64_t num_output_tokens, Tick now,
                std::vector<RequestSpec>& follow_ups) override {
    finished.push_back(spec.id);
    if (spec.turn >= spec.turns) return;
    RequestSpec f = Spec(now, spec.num_prompt_tokens, spec.max_output_tokens,
                         0x100000 + static_cast<uint64_t>(next_id_));
    f.turn = spec.turn + 1;
    f.turns = spec.turns;
    follow_ups.push_back(std::move(f));
  }

  std::string Describe() const override { return "scripted"; }
  int64_t vocab_size() const override { return 32000; }

  // What the test reads.
  int next_calls = 0;
  std::vector<RequestId> open_loop_ids;  // in send order
  std::vector<RequestId> finished;       // OnFinish order (finished or rejected)
  bool pulled_early = false;  // Next() ran while an earlier open-loop request had not entered

 protected:
  void AppendStored(const PromptPart& part, std::vector<TokenId>& out) const override {
    built_.insert(RequestId{static_cast<int64_t>(part.rng[0])});
    for (int64_t i = 0; i < part.length; ++i) {
      out.push_back(static_cast<TokenId>((part.key * 7919 + static_cast<uint64_t>(i)) % 32000));
    }
  }

 private:
  RequestSpec Spec(Tick arrival, int64_t prompt, int64_t output, uint64_t content) {
    RequestSpec spec;
    spec.id = RequestId{next_id_++};
    spec.arrival = arrival;
    spec.max_output_tokens = output;
    spec.output_seed = 0xabc + static_cast<uint64_t>(spec.id.value());
    PromptPart part;
    part.kind = PromptPart::Kind::kRecord;
    part.length = prompt;
    part.key = content;
    part.rng[0] = static_cast<uint64_t>(spec.id.value());  // unused by kRecord: who is being built
    spec.Add(part);
    return spec;
  }

  std::vector<ScriptedRequest> requests_;
  size_t next_ = 0;
  int64_t next_id_ = 0;
  mutable std::set<RequestId> built_;
};

}  // namespace kvsim
