#include "sim/workload/synthetic_workload.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/check.h"

namespace kvsim {

int64_t DrawLength(const LengthDist& d, Rng& rng) {
  double v = d.mean;
  if (d.dist == "uniform") {
    v = static_cast<double>(d.min) + rng.Uniform() * static_cast<double>(d.max - d.min + 1);
  } else if (d.dist == "exponential") {
    v = rng.Exponential(d.mean);
  } else if (d.dist == "lognormal") {
    v = d.cv > 0 ? rng.LogNormal(d.mean, d.cv) : d.mean;
  } else if (d.dist == "normal") {
    v = d.mean + d.cv * d.mean * rng.Normal();
  }
  int64_t n = static_cast<int64_t>(std::floor(v));
  n = std::clamp<int64_t>(n, std::max<int64_t>(1, d.min), std::max<int64_t>(1, d.max));
  return n;
}

namespace {

// `n` token ids drawn from `stream` in [0, vocab).
std::vector<TokenId> RandomIds(Rng& stream, int64_t n, int64_t vocab) {
  std::vector<TokenId> ids(static_cast<size_t>(n));
  for (TokenId& t : ids) t = static_cast<TokenId>(stream.Below(static_cast<uint64_t>(vocab)));
  return ids;
}

}  // namespace

std::vector<std::vector<TokenId>> MakeSystemPrompts(const SystemPromptConfig& config, int64_t vocab,
                                                    uint64_t seed) {
  std::vector<std::vector<TokenId>> prompts;
  if (config.tokens <= 0) return prompts;
  Rng sys = Rng(seed).Fork(5);
  prompts.resize(static_cast<size_t>(config.count));
  for (auto& p : prompts) p = RandomIds(sys, config.tokens, vocab);
  return prompts;
}

SyntheticWorkload::SyntheticWorkload(const WorkloadConfig& config, uint64_t seed)
    : config_(config),
      arrivals_(Rng(seed).Fork(1)),
      lengths_(Rng(seed).Fork(2)),
      tokens_(Rng(seed).Fork(3)),
      sessions_(Rng(seed).Fork(4)) {
  const SystemPromptConfig& sp = config_.system_prompt;
  if (sp.tokens > 0) {
    system_prompts_ = MakeSystemPrompts(sp, config_.vocab_size, seed);
    zipf_ = std::make_unique<ZipfTable>(sp.count, sp.zipf_s);
  }
  if (config_.arrival == "inference_perf") inference_perf_stages_ = InferencePerfStages(config_);
  if (sp.users > 0 && config_.kind == "shared_prefix") {
    // The pool is made once from its own streams, so its prompts do not depend on how many
    // requests the run sends; the scenario loader bounds its size (kMaxPromptPoolTokens).
    Rng pool_lengths = Rng(seed).Fork(6);
    Rng pool_tokens = Rng(seed).Fork(7);
    const int64_t slots = std::max<int64_t>(1, sp.count) * sp.users;
    questions_.resize(static_cast<size_t>(slots));
    for (auto& q : questions_) {
      q = RandomIds(pool_tokens, DrawLength(config_.prompt_tokens, pool_lengths),
                    config_.vocab_size);
    }
    pool_.resize(static_cast<size_t>(slots));
    for (int64_t i = 0; i < slots; ++i) pool_[static_cast<size_t>(i)] = i;
    Rng shuffle = Rng(seed).Fork(8);
    for (int64_t i = slots - 1; i > 0; --i) {  // Fisher-Yates, once
      const auto j = static_cast<int64_t>(shuffle.Below(static_cast<uint64_t>(i + 1)));
      std::swap(pool_[static_cast<size_t>(i)], pool_[static_cast<size_t>(j)]);
    }
  }
}

void SyntheticWorkload::AppendRandom(RequestSpec& r, int64_t n) { r.Add(RandomPart(tokens_, n)); }

void SyntheticWorkload::AppendSystemPrompt(RequestSpec& r) {
  if (system_prompts_.empty()) return;
  const int64_t i = zipf_->Draw(sessions_);
  r.Add({PromptPart::Kind::kShared, config_.system_prompt.tokens, static_cast<uint64_t>(i), {}});
}

void SyntheticWorkload::AppendSharedPrefixPrompt(RequestSpec& r) {
  if (pool_.empty()) {
    AppendSystemPrompt(r);
    AppendRandom(r, DrawLength(config_.prompt_tokens, lengths_));
    return;
  }
  const int64_t slot = pool_[static_cast<size_t>(pool_cursor_++ % static_cast<int64_t>(pool_.size()))];
  const int64_t users = config_.system_prompt.users;
  if (!system_prompts_.empty()) {
    r.Add({PromptPart::Kind::kShared, config_.system_prompt.tokens,
           static_cast<uint64_t>(slot / users), {}});
  }
  // Questions are stored after the system prompts: key = count + slot.
  r.Add({PromptPart::Kind::kShared,
         static_cast<int64_t>(questions_[static_cast<size_t>(slot)].size()),
         system_prompts_.size() + static_cast<uint64_t>(slot), {}});
}

void SyntheticWorkload::AppendStored(const PromptPart& part, std::vector<TokenId>& out) const {
  KVSIM_CHECK(part.kind == PromptPart::Kind::kShared &&
              part.key < system_prompts_.size() + questions_.size());
  const auto& p = part.key < system_prompts_.size()
                      ? system_prompts_[static_cast<size_t>(part.key)]
                      : questions_[static_cast<size_t>(part.key - system_prompts_.size())];
  out.insert(out.end(), p.begin(), p.end());
}

RequestSpec SyntheticWorkload::NewRequest(Tick arrival, int64_t group, int32_t turn) {
  RequestSpec r;
  r.id = RequestId{created_++};
  r.arrival = arrival;
  r.group = group;
  r.turn = turn;
  r.max_output_tokens = DrawLength(config_.output_tokens, lengths_);
  r.output_seed = tokens_.Next();
  return r;
}

RequestSpec SyntheticWorkload::FollowUp(const RequestSpec& parent, int64_t parent_outputs, Tick now,
                                        double mean_think_s, const LengthDist& new_tokens) {
  const double think = sessions_.Exponential(mean_think_s);
  RequestSpec r =
      NewRequest(now + static_cast<Tick>(std::llround(think * 1e9)), parent.group, parent.turn + 1);
  r.turns = parent.turns;
  r.prompt.reserve(parent.prompt.size() + 2);
  for (const PromptPart& p : parent.prompt) r.Add(p);
  if (parent_outputs > 0) {
    r.Add({PromptPart::Kind::kOutputs, parent_outputs, parent.output_seed, {}});
  }
  AppendRandom(r, DrawLength(new_tokens, lengths_));
  return r;
}

bool SyntheticWorkload::EnterStage() {
  if (config_.stages.empty()) return true;
  if (stage_ == 0 && stage_end_s_ == 0) stage_end_s_ = config_.stages[0].duration_s;
  // Half a nanosecond of slack: arrival i of a stage is at start + i / rate, and that sum
  // must not spill a rounding error's arrival past the stage's end.
  while (next_arrival_s_ >= stage_end_s_ - 0.5e-9) {
    // The next stage starts at the previous one's end, whatever the last gap was.
    next_arrival_s_ = stage_start_s_ = stage_end_s_;
    in_stage_ = 0;
    pool_cursor_ = 0;
    if (++stage_ >= config_.stages.size()) return false;
    stage_end_s_ += config_.stages[stage_].duration_s;
  }
  return true;
}

double SyntheticWorkload::CurrentRate() const {
  return config_.stages.empty() ? config_.rate_per_s : config_.stages[stage_].rate_per_s;
}

bool SyntheticWorkload::NextInferencePerfArrival(double& at) {
  const std::vector<LoadStage>& stages = inference_perf_stages_;
  while (stage_time_index_ >= stage_times_.size()) {
    if (stage_ >= stages.size()) return false;
    const LoadStage& st = stages[stage_];
    const auto n = static_cast<int64_t>(std::floor(st.rate_per_s * st.duration_s));
    stage_times_.assign(static_cast<size_t>(std::max<int64_t>(0, n)), 0.0);
    double sum = 0;
    for (double& t : stage_times_) t = sum += arrivals_.Exponential(1.0 / st.rate_per_s);
    for (double& t : stage_times_) t = stage_start_s_ + t / sum * st.duration_s;
    if (!stage_times_.empty()) stage_times_.back() = stage_start_s_ + st.duration_s;
    stage_time_index_ = 0;
    stage_start_s_ += st.duration_s;
    ++stage_;
    pool_cursor_ = 0;
  }
  at = stage_times_[stage_time_index_++];
  return true;
}

std::optional<RequestSpec> SyntheticWorkload::Next() {
  if (!CanCreate()) return std::nullopt;
  if (config_.concurrency > 0 && clients_started_ >= config_.concurrency) return std::nullopt;
  if (config_.arrival == "inference_perf") {
    // The stages (or rate_per_s × duration_s) bound these arrivals themselves.
    if (!NextInferencePerfArrival(next_arrival_s_)) return std::nullopt;
  } else {
    if (config_.duration_s > 0 && next_arrival_s_ > config_.duration_s) return std::nullopt;
    if (!EnterStage()) return std::nullopt;
  }
  const Tick arrival = static_cast<Tick>(std::llround(next_arrival_s_ * 1e9));
  ++clients_started_;
  // The next open-loop arrival (inference_perf draws a stage at a time above; burst sends
  // everything at t = 0).
  if (config_.arrival == "poisson") {
    next_arrival_s_ += arrivals_.Exponential(1.0 / CurrentRate());
  } else if (config_.arrival == "gamma") {
    const double k = 1.0 / (config_.gamma_cv * config_.gamma_cv);
    next_arrival_s_ += arrivals_.Gamma(k, 1.0 / (CurrentRate() * k));
  } else if (config_.arrival == "constant") {
    next_arrival_s_ = stage_start_s_ + static_cast<double>(++in_stage_) / CurrentRate();
  }
  const int64_t group = config_.kind == "shared_prefix" ? -1 : groups_++;
  RequestSpec r = NewRequest(arrival, group, 0);
  if (config_.kind == "shared_prefix") {
    AppendSharedPrefixPrompt(r);
  } else {
    AppendSystemPrompt(r);
    AppendRandom(r, DrawLength(config_.prompt_tokens, lengths_));
  }
  if (config_.kind == "multi_turn") {
    // The session's length travels with its requests: the workload keeps no per-session state.
    r.turns = static_cast<int32_t>(DrawLength(config_.multi_turn.turns, sessions_));
  }
  return r;
}

void SyntheticWorkload::OnFinish(const RequestSpec& spec, int64_t num_output_tokens, Tick now,
                                 std::vector<RequestSpec>& follow_ups) {
  if (config_.concurrency > 0 && config_.kind == "shared_prefix") {
    // Closed loop: the client sends its next request as soon as this one is answered.
    if (!CanCreate()) return;
    if (config_.duration_s > 0 && static_cast<double>(now) * 1e-9 > config_.duration_s) return;
    RequestSpec r = NewRequest(now, -1, 0);
    AppendSharedPrefixPrompt(r);
    follow_ups.push_back(std::move(r));
    return;
  }
  if (config_.kind == "multi_turn") {
    if (spec.turn + 1 >= spec.turns || !CanCreate()) return;
    follow_ups.push_back(FollowUp(spec, num_output_tokens, now, config_.multi_turn.think_time_s,
                                  config_.prompt_tokens));
  } else if (config_.kind == "agent_tree") {
    if (spec.turn >= config_.agent_tree.depth) return;
    for (int64_t c = 0; c < config_.agent_tree.branching && CanCreate(); ++c) {
      follow_ups.push_back(FollowUp(spec, num_output_tokens, now, config_.agent_tree.think_time_s,
                                    config_.agent_tree.tool_tokens));
    }
  }
}

std::string SyntheticWorkload::Describe() const {
  std::ostringstream s;
  s << config_.kind << ": ";
  if (config_.num_requests > 0) s << config_.num_requests << " requests, ";
  if (config_.concurrency > 0) s << config_.concurrency << " closed-loop clients, ";
  s << config_.arrival;
  if (!config_.stages.empty()) {
    s << " stages";
    for (const LoadStage& st : config_.stages) s << " " << st.rate_per_s << "/s×" << st.duration_s << "s";
  } else if (config_.arrival != "burst") {
    s << " " << config_.rate_per_s << "/s";
  }
  if (config_.system_prompt.tokens > 0) {
    s << ", " << config_.system_prompt.count << " system prompt(s) of "
      << config_.system_prompt.tokens << " tokens";
  }
  if (!pool_.empty()) s << ", a pool of " << pool_.size() << " prompts re-sent in turn";
  s << ", prompt " << config_.prompt_tokens.dist << " mean " << config_.prompt_tokens.mean
    << ", output " << config_.output_tokens.dist << " mean " << config_.output_tokens.mean;
  return s.str();
}

}  // namespace kvsim
