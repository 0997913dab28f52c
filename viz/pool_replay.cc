#include "viz/pool_replay.h"

#include <algorithm>
#include <climits>

#include "sim/embedded_data.h"

namespace kvsim::viz {

std::vector<std::string> EmbeddedTraceNames() {
  std::vector<std::string> out;
  for (const auto& f : EmbeddedDataFiles()) {
    const std::string p = f.path;
    if (p.rfind("scenarios/traces/", 0) == 0 && p.size() > 6 &&
        p.substr(p.size() - 6) == ".jsonl") {
      out.push_back(p);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<RequestTrace> LoadTrace(const std::string& path) {
  if (const std::string* text = FindEmbeddedFile(path)) {
    return RequestTrace::Parse(*text, "<built-in>/" + path);
  }
  return RequestTrace::ReadFile(path);
}

RequestTrace DemoTrace(int64_t block_tokens) {
  constexpr int kSessions = 4, kTurns = 6;
  const int64_t n = std::max<int64_t>(1, block_tokens);
  RequestTrace trace;
  std::vector<TokenId> prompt;
  for (int turn = 0; turn < kTurns; ++turn) {
    for (int s = 0; s < kSessions; ++s) {
      prompt.clear();
      for (int64_t i = 0; i < 2 * n; ++i) prompt.push_back(static_cast<TokenId>(100000 + i));
      for (int64_t i = 0; i < turn * n; ++i) {  // this session's earlier turns
        prompt.push_back(static_cast<TokenId>(10000000 * (s + 1) + i));
      }
      for (int64_t i = 0; i < n / 2 + 1; ++i) {  // this turn's own question
        prompt.push_back(static_cast<TokenId>(90000000 + 1000000 * (turn * kSessions + s) + i));
      }
      trace.AddTokens("s" + std::to_string(s) + "t" + std::to_string(turn), prompt);
    }
  }
  return trace;
}

std::string DefaultTrace(const std::string& cli_trace) {
  return cli_trace.empty() ? std::string(kDemoTraceName) : cli_trace;
}

std::string TraceFileName(const std::string& path) {
  const size_t slash = path.find_last_of("/\\");
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

Result<std::unique_ptr<PoolReplay>> PoolReplay::Create(RequestTrace trace,
                                                       const KvCacheManagerConfig& config,
                                                       const PoolReplayOptions& options) {
  if (Status s = config.Validate(); !s.ok()) return s;
  if (trace.size() == 0) return Status::Error("empty_trace", "the trace has no requests");
  auto r = std::unique_ptr<PoolReplay>(new PoolReplay());
  r->trace_ = std::move(trace);
  r->config_ = config;
  r->options_ = options;
  size_t n = r->trace_.size();
  if (options.max_requests > 0) n = std::min<size_t>(n, static_cast<size_t>(options.max_requests));
  r->Reset();
  int64_t hit_sum = 0, prompt_sum = 0;
  for (size_t i = 0; i < n; ++i) {
    const int64_t hit = r->Step(i);
    PoolStep s;
    s.prompt_tokens = static_cast<int64_t>(r->tokens_.size());
    s.served = hit >= 0;
    s.hit_tokens = std::max<int64_t>(hit, 0);
    if (s.served) {
      hit_sum += s.hit_tokens;
      prompt_sum += s.prompt_tokens;
    }
    s.usage = r->m_->usage();
    s.cached_blocks = r->m_->pool().num_cached_blocks();
    s.live_requests = static_cast<int64_t>(r->live_.size());
    s.cumulative_hit_rate =
        prompt_sum > 0 ? static_cast<double>(hit_sum) / static_cast<double>(prompt_sum) : 0;
    r->steps_.push_back(s);
  }
  r->Reset();
  r->SeekTo(0);
  return r;
}

int64_t PoolReplay::total_hit_tokens() const {
  int64_t s = 0;
  for (const auto& p : steps_) s += p.hit_tokens;
  return s;
}

int64_t PoolReplay::total_prompt_tokens() const {
  int64_t s = 0;
  for (const auto& p : steps_) s += p.served ? p.prompt_tokens : 0;
  return s;
}

void PoolReplay::Reset() {
  m_ = std::make_unique<KvCacheManager>(config_);
  live_.clear();
  hits_.clear();
  t_ = -1;
}

int64_t PoolReplay::Step(size_t i) {
  KvCacheManager& m = *m_;
  trace_.PromptTokens(i, tokens_);
  const int64_t prompt = static_cast<int64_t>(tokens_.size());
  const RequestHandle h = m.AddRequest(tokens_);
  const bool mamba_align = config_.has_mamba_align();
  auto complete_oldest = [&]() {
    if (live_.empty()) return false;
    m.RemoveRequest(live_.front().second);
    live_.pop_front();
    return true;
  };
  // With concurrency 0 the request is freed when the next one arrives (Replay() frees it at
  // once; keeping it one step longer is what lets the grid show its blocks in use).
  const int64_t limit = std::max<int64_t>(1, options_.concurrency);
  if (static_cast<int64_t>(live_.size()) >= limit) complete_oldest();
  auto on_pressure = [&]() { return options_.concurrency > 0 ? complete_oldest() : false; };
  int64_t hit = -1;
  while (true) {  // as sim/replay's AdmitWholePrompt
    const PrefixHit ph = m.GetComputedBlocks(h, 0);
    int64_t n = prompt - ph.num_tokens;
    if (mamba_align)
      n = m.MambaAlignedSplit(h, ph.num_tokens, n, ph.shared_prefix_tokens, INT64_MAX);
    if (m.AllocateSlots(h, 0, n, ph.num_tokens, 0, /*full_sequence_must_fit=*/true)) {
      int64_t comp = ph.num_tokens + n;
      bool ok = true;
      while (ok && comp < prompt) {
        const int64_t k =
            m.MambaAlignedSplit(h, comp, prompt - comp, ph.shared_prefix_tokens, INT64_MAX);
        while (!m.AllocateSlots(h, comp, k)) {
          if (!on_pressure()) {
            m.Free(h);
            ok = false;
            break;
          }
        }
        comp += k;
      }
      if (ok) hit = ph.num_tokens;
      break;
    }
    if (!on_pressure()) break;
  }
  if (hit >= 0) {
    live_.push_back({static_cast<int64_t>(i), h});
  } else {
    m.RemoveRequest(h);
  }
  hits_.push_back(hit);
  t_ = static_cast<int64_t>(i);
  return hit;
}

void PoolReplay::SeekTo(int64_t t) {
  if (steps_.empty()) return;
  t = std::clamp<int64_t>(t, 0, num_steps() - 1);
  if (t < t_) Reset();
  while (t_ < t) Step(static_cast<size_t>(t_ + 1));
  RefreshHolders();
}

void PoolReplay::RefreshHolders() {
  const size_t n = static_cast<size_t>(config_.num_blocks);
  holder_.assign(n, -1);
  hit_.assign(n, 0);
  for (const auto& [idx, h] : live_) {
    const int64_t hit_tokens = hits_[static_cast<size_t>(idx)];
    for (int g = 0; g < m_->num_groups(); ++g) {
      const auto blocks = m_->blocks(h, g);
      const int64_t bs = config_.groups[static_cast<size_t>(g)].block_size;
      for (size_t k = 0; k < blocks.size(); ++k) {
        const BlockId b = blocks[k];
        if (b <= kNullBlock) continue;
        holder_[static_cast<size_t>(b)] = idx;
        if (static_cast<int64_t>(k + 1) * bs <= hit_tokens) hit_[static_cast<size_t>(b)] = 1;
      }
    }
  }
}

BlockState PoolReplay::State(BlockId b) const {
  if (b == kNullBlock) return BlockState::kNull;
  const BlockPool& p = m_->pool();
  if (p.ref_cnt(b) > 0) return BlockState::kInUse;
  return p.is_cached(b) ? BlockState::kCached : BlockState::kFree;
}

}  // namespace kvsim::viz
