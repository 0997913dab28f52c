// The synthetic generators (workload.kind shared_prefix, multi_turn, agent_tree):
//   shared_prefix  single-turn requests: one of `system_prompt.count` shared system prompts
//                  (Zipf popularity) followed by a unique user message;
//   multi_turn     sessions arriving by the arrival process; turn k+1 arrives an exponential
//                  think time after turn k finishes, and its prompt is the whole conversation
//                  so far (previous prompt + reply + a new user message);
//   agent_tree     trees: a root request, and when a node finishes `branching` children
//                  arrive, each extending parent prompt + reply with its own tool output,
//                  down to `depth` levels.
// Arrivals (new requests / sessions / trees) are Poisson, gamma (with a CV), constant (evenly
// spaced), a burst at t = 0, or inference_perf; with `stages` the rate changes stage by stage
// and arrivals end after the last stage. `inference_perf` is what inference-perf's `constant`
// load type sends (its ConstantLoadTimer): ⌊rate · duration⌋ requests per stage whose gaps
// are exponential draws rescaled to sum to the stage's duration, so the count is exact, the
// last request lands at the stage's end, and the gaps have a CV near 1 (not evenly spaced).
// With `system_prompt.users` K > 0 (shared_prefix) prompts come from a fixed pool, as
// inference-perf's shared_prefix generator makes them: count × K prompts (system prompt g
// followed by its own question u), made once and shuffled once; request k of a load stage
// sends pool[k mod pool size], so after the first pass every prompt is a whole repeat. With `concurrency` N > 0
// (shared_prefix) the workload is a closed loop: N clients start by the arrival process and
// each sends its next request the moment its previous one finishes. Lengths are drawn from LengthDist. Token ids are random in [0, vocab); system prompt
// i is the same sequence everywhere in the run, so requests share it block for block.
#pragma once

#include <memory>

#include "sim/workload/i_workload.h"
#include "sim/workload/workload_config.h"

namespace kvsim {

// The run's shared system prompts: `config.count` random sequences of `config.tokens` ids in
// [0, vocab), drawn from the seed's own stream, so every workload of a seed gets the same
// ones. Empty when config.tokens is 0.
std::vector<std::vector<TokenId>> MakeSystemPrompts(const SystemPromptConfig& config, int64_t vocab,
                                                    uint64_t seed);

class SyntheticWorkload : public IWorkload {
 public:
  SyntheticWorkload(const WorkloadConfig& config, uint64_t seed);
  std::optional<RequestSpec> Next() override;
  void OnFinish(const RequestSpec& spec, int64_t num_output_tokens, Tick now,
                std::vector<RequestSpec>& follow_ups) override;
  std::string Describe() const override;
  int64_t vocab_size() const override { return config_.vocab_size; }

 private:
  bool CanCreate() const {
    return config_.num_requests == 0 || created_ < config_.num_requests;
  }
  RequestSpec NewRequest(Tick arrival, int64_t group, int32_t turn);
  // The next turn (multi_turn) or child (agent_tree) of `parent`, after an exponential think
  // time: the parent's prompt, its output tokens, then `new_tokens` fresh ones.
  RequestSpec FollowUp(const RequestSpec& parent, int64_t parent_outputs, Tick now,
                       double mean_think_s, const LengthDist& new_tokens);
  // n user tokens from the token stream (a recipe; the stream moves past them).
  void AppendRandom(RequestSpec& r, int64_t n);
  // One of the shared system prompts, by Zipf popularity.
  void AppendSystemPrompt(RequestSpec& r);
  // The prompt of a new shared_prefix request: the pool's next prompt, or a system prompt by
  // popularity and a fresh question.
  void AppendSharedPrefixPrompt(RequestSpec& r);
  // The next send time of `inference_perf` arrivals (s); false after the last stage.
  bool NextInferencePerfArrival(double& at);
  void AppendStored(const PromptPart& part, std::vector<TokenId>& out) const override;

  WorkloadConfig config_;
  Rng arrivals_;
  Rng lengths_;
  Rng tokens_;
  Rng sessions_;
  std::unique_ptr<ZipfTable> zipf_;
  std::vector<std::vector<TokenId>> system_prompts_;
  // The prompt pool (system_prompt.users > 0): questions_[slot] is slot's question, slot =
  // g · users + u for system prompt g; pool_ is the shuffled order of the slots.
  std::vector<std::vector<TokenId>> questions_;
  std::vector<int64_t> pool_;
  int64_t pool_cursor_ = 0;  // requests sent so far in this load stage
  // inference_perf arrivals: their load stages (InferencePerfStages, fixed at construction)
  // and this stage's send times (s from the run's start).
  std::vector<LoadStage> inference_perf_stages_;
  std::vector<double> stage_times_;
  size_t stage_time_index_ = 0;
  // Advances the load stage to the one holding next_arrival_s_; false after the last.
  bool EnterStage();
  double CurrentRate() const;

  double next_arrival_s_ = 0;
  size_t stage_ = 0;
  double stage_start_s_ = 0;
  double stage_end_s_ = 0;
  int64_t in_stage_ = 0;  // arrivals so far in this stage (constant arrivals: exact spacing)
  int64_t clients_started_ = 0;
  int64_t created_ = 0;
  int64_t groups_ = 0;
};

// One draw from a length distribution (clamped to [min, max], at least 1).
int64_t DrawLength(const LengthDist& d, Rng& rng);

}  // namespace kvsim
