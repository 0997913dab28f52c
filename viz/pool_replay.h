// PoolReplay: a cache-only replay of a request trace through core's KvCacheManager, one
// request at a time, so the Block pool panel can show the pool at any point of the trace (a
// time scrubber) and plot hit rate and occupancy over time.
//
// The stepping follows sim/replay's Replay() exactly (same call protocol: lookup, admit the
// whole prompt in Mamba-aligned chunks, complete the oldest live request when out of blocks
// or at the concurrency limit); Replay() only returns totals, so the loop is repeated here
// with a hook after every request. A unit test checks the totals agree with Replay().
//
// "Time" t = the pool just after request t was admitted (before it completes), so the blocks
// it holds show as in use. Seeking backwards replays from the start: traces the viewer loads
// are small (the shipped ones have 60–120 requests) and replay runs millions of blocks/s.
//
// Owns the trace copy, the manager and the per-request series. Not thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "core/kv_cache_manager.h"
#include "core/status.h"
#include "sim/trace/request_trace.h"

namespace kvsim::viz {

// What one block is at the current time.
enum class BlockState : uint8_t { kNull, kFree, kCached, kInUse };

struct PoolStep {
  int64_t prompt_tokens = 0;
  int64_t hit_tokens = 0;  // 0 when not served
  bool served = true;
  double usage = 0;           // pool usage after admitting (vLLM's 1 − free/(n−1))
  int64_t cached_blocks = 0;  // blocks with a hash
  int64_t live_requests = 0;
  double cumulative_hit_rate = 0;  // Σ hit / Σ prompt over served requests so far
};

struct PoolReplayOptions {
  int64_t concurrency = 8;   // live requests at most (0: free each right after admission)
  int64_t max_requests = 0;  // 0: the whole trace
};

class PoolReplay {
 public:
  // Runs the whole trace once to fill steps(), then rewinds to t = 0.
  static Result<std::unique_ptr<PoolReplay>> Create(RequestTrace trace,
                                                    const KvCacheManagerConfig& config,
                                                    const PoolReplayOptions& options);

  int64_t num_steps() const { return static_cast<int64_t>(steps_.size()); }
  const std::vector<PoolStep>& steps() const { return steps_; }
  const KvCacheManagerConfig& config() const { return config_; }
  int64_t total_hit_tokens() const;
  int64_t total_prompt_tokens() const;

  // Moves to time t (clamped to [0, num_steps() - 1]).
  void SeekTo(int64_t t);
  int64_t time() const { return t_; }

  // Pool state at the current time.
  const KvCacheManager& manager() const { return *m_; }
  BlockState State(BlockId b) const;
  // The trace index of the newest live request holding block b, or −1.
  int64_t Holder(BlockId b) const { return holder_[static_cast<size_t>(b)]; }
  // Whether block b was a prefix hit of the request that holds it (touched, not allocated).
  bool WasHit(BlockId b) const { return hit_[static_cast<size_t>(b)] != 0; }
  const std::deque<std::pair<int64_t, RequestHandle>>& live() const { return live_; }

 private:
  PoolReplay() = default;
  void Reset();
  // Admits request i (and completes older ones as Replay() does); returns the hit or −1.
  int64_t Step(size_t i);
  void RefreshHolders();

  RequestTrace trace_;
  KvCacheManagerConfig config_;
  PoolReplayOptions options_;
  std::unique_ptr<KvCacheManager> m_;
  std::deque<std::pair<int64_t, RequestHandle>> live_;  // (trace index, handle), oldest first
  std::vector<PoolStep> steps_;
  std::vector<int64_t> hits_;  // hit tokens per request admitted so far (current run)
  int64_t t_ = -1;             // last admitted request
  std::vector<int64_t> holder_;
  std::vector<uint8_t> hit_;
  std::vector<TokenId> tokens_;
};

// The sample traces compiled into the binaries ("scenarios/traces/...").
std::vector<std::string> EmbeddedTraceNames();
// A trace from disk, or from the embedded copies when `path` names one of them.
Result<RequestTrace> LoadTrace(const std::string& path);

// The Block pool panel's built-in demo: a trace made for the plan on show, so that it hits
// at any block size. The shipped samples share at most 512 tokens between requests (the
// Mooncake head60 one block of 512; the token samples are shorter than a block), so at the
// default plan's 1056-token block every request of them hits 0 %.
inline constexpr char kDemoTraceName[] = "demo: sessions sharing a system prompt";
// kSessions multi-turn sessions, interleaved, all opening with the same 2-block system prompt;
// turn t of a session repeats its previous turns' blocks (t of them) and adds a half block of
// its own. Every request after the first hits the system prompt; later turns hit their
// history too.
RequestTrace DemoTrace(int64_t block_tokens);

// The trace the Block pool panel replays first: `cli_trace` (--trace) when given, else the
// demo (kDemoTraceName).
std::string DefaultTrace(const std::string& cli_trace);
// The file name of a trace path ("sample_tokens.jsonl"), for boxes too narrow for the path.
std::string TraceFileName(const std::string& path);

}  // namespace kvsim::viz
