#include "sim/replay/replay.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <deque>
#include <utility>

#include "core/check.h"
#include "core/int_math.h"
#include "core/vllm_semantics.h"

namespace kvsim {
namespace {

// Admits request `h` whose prompt has `prompt` tokens: lookup, then allocation (in Mamba
// align chunks where needed). Returns the hit, or −1 if the first allocation failed (nothing
// changed). `retry_later_chunks` is called when a later chunk fails; it must free something
// and return false when nothing is left to free.
template <class OnPressure>
int64_t AdmitWholePrompt(KvCacheManager& m, RequestHandle h, int64_t prompt, bool mamba_align,
                         OnPressure&& on_pressure) {
  while (true) {
    const PrefixHit hit = m.GetComputedBlocks(h, 0);
    int64_t n = prompt - hit.num_tokens;
    if (mamba_align) n = m.MambaAlignedSplit(h, hit.num_tokens, n, hit.shared_prefix_tokens, INT64_MAX);
    if (m.AllocateSlots(h, 0, n, hit.num_tokens, 0, /*full_sequence_must_fit=*/true)) {
      int64_t comp = hit.num_tokens + n;
      while (comp < prompt) {
        int64_t k = m.MambaAlignedSplit(h, comp, prompt - comp, hit.shared_prefix_tokens, INT64_MAX);
        while (!m.AllocateSlots(h, comp, k)) {
          if (!on_pressure()) {
            m.Free(h);
            return -1;
          }
        }
        comp += k;
      }
      return hit.num_tokens;
    }
    if (!on_pressure()) return -1;
  }
}

// Replay with a CPU offloading tier below the GPU cache (ReplayOptions::offload). Kept apart
// from the plain loop so that loop stays as fast as it is.
ReplayResult ReplayWithOffload(const RequestTrace& trace, const KvCacheManagerConfig& config,
                               const ReplayOptions& options) {
  KvCacheManager m(config);
  OffloadConnector conn(*options.offload);
  ReplayResult res;
  res.requests = static_cast<int64_t>(trace.size());
  const int64_t sb = config.scheduler_block_size();
  const bool mamba_align = config.has_mamba_align();
  const int64_t hash_block = config.resolved_hash_block_size();
  if (options.per_request) res.outcomes.reserve(trace.size());
  std::vector<BlockHash> hashes;
  std::vector<TokenId> tail;
  std::deque<RequestHandle> live;
  // With a connector, vLLM's _connector_finished first frees the blocks that fell out of a
  // sliding window (or old Mamba states), highest first, and only then the rest of the table.
  auto finish = [&](RequestHandle h) {
    m.RemoveSkippedBlocks(h, m.num_tokens(h));
    m.RemoveRequest(h);
  };
  auto complete_oldest = [&]() {
    if (live.empty()) return false;
    finish(live.front());
    live.pop_front();
    return true;
  };
  auto no_pressure_relief = [] { return false; };

  const auto t0 = std::chrono::steady_clock::now();
  const std::clock_t c0 = std::clock();
  for (size_t i = 0; i < trace.size(); ++i) {
    const int64_t prompt = trace[i].input_length;
    res.blocks += CeilDiv(prompt, sb);
    RequestHandle h;
    if (options.materialize_tokens) {
      trace.PromptTokens(i, tail);
      h = m.AddRequest(tail);
    } else {
      trace.PromptBlockHashes(i, hash_block, hashes, tail);
      h = m.AddRequestWithHashes(hashes, tail);
    }
    OffloadRequestView view{static_cast<OffloadRequestId>(i), prompt, prompt, 0,
                            m.block_hashes(h)};
    // Admission: the GPU hit g, then the CPU lookup extending it (it touches the request's
    // CPU blocks even when the request then cannot be admitted). Every earlier store and load
    // has completed, so nothing defers.
    const int64_t g = m.GetComputedBlocks(h, 0).num_tokens;
    const CpuHit cpu = conn.Lookup(view, g);
    KVSIM_CHECK(!cpu.deferred);
    int64_t hit;
    if (options.concurrency <= 0) {
      hit = AdmitWholePrompt(m, h, prompt, mamba_align, no_pressure_relief);
    } else {
      if (static_cast<int64_t>(live.size()) >= options.concurrency) complete_oldest();
      hit = AdmitWholePrompt(m, h, prompt, mamba_align, complete_oldest);
    }
    int64_t e = 0;
    if (hit >= 0) {
      e = cpu.tokens;
      view.block_hashes = m.block_hashes(h);
      if (auto load = conn.OnAllocated(view, g, e)) {
        res.cpu_blocks_loaded += static_cast<int64_t>(load->keys.size());
        conn.CompleteJob(load->id);
      }
      if (e > 0 && g + e >= prompt) ++res.full_cpu_hits;
      // The prefill: computed from g + e (or num_tokens − 1 after a full CPU hit) to the end
      // of the prompt; its blocks are stored at the end of that step and the copy completes.
      const int64_t computed =
          e > 0 ? OffloadConnector::ComputedTokensAfterLoad(prompt, g + e) : g;
      StoreCandidate cand{view, prompt - computed, StoreCandidate::Kind::kNew, {}};
      cand.req.num_computed_tokens = computed;
      const StoreCandidate* order[] = {&cand};
      std::vector<StoreFailure> failures;
      for (const StoreJob& job : conn.BuildStoreJobs(order, &failures)) {
        res.cpu_blocks_stored += static_cast<int64_t>(job.keys.size());
        res.cpu_blocks_evicted += static_cast<int64_t>(job.evicted.size());
        conn.CompleteJob(job.id);
      }
      res.cpu_store_failures += static_cast<int64_t>(failures.size());
      ++res.served;
      res.prompt_tokens += prompt;
      res.hit_tokens += hit;
      res.cpu_hit_tokens += e;
    } else {
      ++res.not_served;
    }
    conn.RequestFinished(view.id);
    if (options.concurrency <= 0 || hit < 0) {
      finish(h);
    } else {
      live.push_back(h);
    }
    if (options.per_request) {
      RequestOutcome o{i, prompt, std::max<int64_t>(hit, 0), e, hit >= 0};
      res.outcomes.push_back(o);
    }
  }
  while (complete_oldest()) {
  }
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  res.cpu_seconds = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  return res;
}

}  // namespace

ReplayResult Replay(const RequestTrace& trace, const KvCacheManagerConfig& config,
                    const ReplayOptions& options) {
  if (options.offload != nullptr) return ReplayWithOffload(trace, config, options);
  KvCacheManager m(config);
  ReplayResult res;
  res.requests = static_cast<int64_t>(trace.size());
  const int64_t sb = config.scheduler_block_size();
  const bool mamba_align = config.has_mamba_align();
  if (options.per_request) res.outcomes.reserve(trace.size());
  const int64_t hash_block = config.resolved_hash_block_size();
  std::vector<BlockHash> hashes, next_hashes;
  std::vector<TokenId> tail, next_tail, firsts, next_firsts;
  bool have_next = false;
  std::deque<RequestHandle> live;
  auto complete_oldest = [&]() {
    if (live.empty()) return false;
    m.RemoveRequest(live.front());
    live.pop_front();
    return true;
  };
  auto no_pressure_relief = [] { return false; };

  const auto t0 = std::chrono::steady_clock::now();
  const std::clock_t c0 = std::clock();
  for (size_t i = 0; i < trace.size(); ++i) {
    // Hashes straight from the trace (hash ids are never expanded into tokens).
    const int64_t prompt = trace[i].input_length;
    res.blocks += CeilDiv(prompt, sb);
    RequestHandle h;
    if (options.materialize_tokens) {
      trace.PromptTokens(i, tail);
      h = m.AddRequest(tail);
    } else {
      if (have_next) {  // hashed together with the previous request
        std::swap(hashes, next_hashes);
        std::swap(tail, next_tail);
        have_next = false;
      } else if (hash_block == 16 && i + 1 < trace.size() &&
                 trace.PromptBlockFirstTokens(i, 16, firsts, tail) &&
                 trace.PromptBlockFirstTokens(i + 1, 16, next_firsts, next_tail)) {
        // Block 16 from hash ids: hash this request and the next one in lockstep, so their
        // two latency-bound XXH3 chains overlap. Only hashing moves; cache work stays in order.
        HashConsecutive16Pair(firsts, hashes, next_firsts, next_hashes);
        have_next = true;
      } else {
        trace.PromptBlockHashes(i, hash_block, hashes, tail);
      }
      h = m.AddRequestWithHashes(hashes, tail);
    }
    int64_t hit;
    if (options.concurrency <= 0) {
      hit = AdmitWholePrompt(m, h, prompt, mamba_align, no_pressure_relief);
      m.RemoveRequest(h);
    } else {
      if (static_cast<int64_t>(live.size()) >= options.concurrency) complete_oldest();
      hit = AdmitWholePrompt(m, h, prompt, mamba_align, complete_oldest);
      if (hit >= 0) {
        live.push_back(h);
      } else {
        m.RemoveRequest(h);
      }
    }
    if (hit >= 0) {
      ++res.served;
      res.prompt_tokens += prompt;
      res.hit_tokens += hit;
    } else {
      ++res.not_served;
    }
    if (options.per_request)
      res.outcomes.push_back({i, prompt, std::max<int64_t>(hit, 0), 0, hit >= 0});
  }
  while (complete_oldest()) {
  }
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  res.cpu_seconds = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  return res;
}

// ---- The one-pass curve ----------------------------------------------------------------

namespace {

// Fenwick tree over time stamps: marks which stamps are the latest of their item.
class Fenwick {
 public:
  explicit Fenwick(size_t n) : t_(n + 1, 0) {}
  void Add(size_t i, int32_t v) {
    for (++i; i < t_.size(); i += i & (~i + 1)) t_[i] += v;
  }
  int64_t Prefix(size_t i) const {  // Σ [0, i)
    int64_t s = 0;
    for (; i > 0; i -= i & (~i + 1)) s += t_[i];
    return s;
  }

 private:
  std::vector<int32_t> t_;
};

// Open-addressing map content hash → last stamp (+1; 0 = empty).
class StampMap {
 public:
  explicit StampMap(size_t expected) {
    size_t cap = 16;
    while (cap < 2 * expected) cap <<= 1;
    keys_.assign(cap, 0);
    vals_.assign(cap, 0);
    mask_ = cap - 1;
  }
  uint64_t* Find(BlockHash h, bool insert) {
    size_t i = static_cast<size_t>(h * 0x9e3779b97f4a7c15ULL >> 20) & mask_;
    while (true) {
      if (vals_[i] == 0) {
        if (!insert) return nullptr;
        keys_[i] = h;
        return &vals_[i];
      }
      if (keys_[i] == h) return &vals_[i];
      i = (i + 1) & mask_;
    }
  }

 private:
  std::vector<BlockHash> keys_;
  std::vector<uint64_t> vals_;
  size_t mask_;
};

}  // namespace

int64_t CurveResult::HitTokensAt(int64_t capacity_blocks) const {
  KVSIM_CHECK_MSG(!sampled, "a sampled curve holds its sampled capacities only");
  const int64_t usable = capacity_blocks - 1;
  int64_t s = 0;
  for (int64_t d = 0; d <= usable && d < static_cast<int64_t>(hist.size()); ++d)
    s += hist[static_cast<size_t>(d)];
  return s;
}

namespace {

// Hybrid layouts: one exact replay per sampled capacity.
Result<CurveResult> SampledCurve(const RequestTrace& trace, const KvCacheManagerConfig& config,
                                 int64_t max_capacity_blocks) {
  CurveResult res;
  res.sampled = true;
  // The smallest pool that serves every request alone, and the largest one worth replaying:
  // every request's blocks side by side (nothing is ever evicted beyond it).
  KvCacheManagerConfig probe = config;
  probe.num_blocks = 2;
  KvCacheManager m(probe);
  int64_t need_max = 0, need_sum = 0;
  for (size_t i = 0; i < trace.size(); ++i) {
    const int64_t need = m.BlocksNeededFresh(trace[i].input_length);
    need_max = std::max(need_max, need);
    need_sum += need;
    res.prompt_tokens += trace[i].input_length;
  }
  res.min_capacity_blocks = need_max + 1;
  res.saturation_blocks = std::max(need_sum, need_max) + 1;
  // Unless the caller asks for more, stop at kMaxSampledCapacity blocks: a pool past it costs
  // hundreds of MiB per replay.
  constexpr int64_t kMaxSampledCapacity = int64_t{1} << 21;
  int64_t hi = std::min(res.saturation_blocks,
                        std::max(kMaxSampledCapacity, res.min_capacity_blocks));
  if (max_capacity_blocks > 0) hi = std::min(res.saturation_blocks, max_capacity_blocks);
  if (hi < res.min_capacity_blocks) return res;
  std::vector<int64_t> caps;
  const double lo = static_cast<double>(res.min_capacity_blocks);
  const double ratio = std::pow(static_cast<double>(hi) / lo, 1.0 / (kSampledCurvePoints - 1));
  for (int k = 0; k < kSampledCurvePoints; ++k) {
    const auto c = static_cast<int64_t>(std::llround(lo * std::pow(ratio, k)));
    const int64_t cap = std::clamp<int64_t>(c, res.min_capacity_blocks, hi);
    if (caps.empty() || cap > caps.back()) caps.push_back(cap);
  }
  if (caps.back() != hi) caps.push_back(hi);
  for (int64_t cap : caps) {
    KvCacheManagerConfig c = config;
    c.num_blocks = cap;
    const ReplayResult r = Replay(trace, c);
    const double rate = r.prompt_tokens > 0 ? static_cast<double>(r.hit_tokens) /
                                                  static_cast<double>(r.prompt_tokens)
                                            : 0.0;
    res.points.push_back({cap, r.hit_tokens, rate});
  }
  return res;
}

}  // namespace

Result<CurveResult> ReplayCurve(const RequestTrace& trace, const KvCacheManagerConfig& config,
                                int64_t max_capacity_blocks) {
  if (!config.enable_caching)
    return Status::Error("curve_unsupported", "--curve needs prefix caching on");
  if (config.groups.size() != 1 || config.groups[0].kind != KvGroupKind::kFullAttention)
    return SampledCurve(trace, config, max_capacity_blocks);
  if (!config.enable_caching)
    return Status::Error("curve_unsupported", "--curve needs prefix caching on");
  const int64_t B = config.groups[0].block_size;
  const bool latest = config.semantics == VllmSemantics::kLatest;
  CurveResult res;
  size_t total_items = 0;
  for (size_t i = 0; i < trace.size(); ++i)
    total_items += static_cast<size_t>(CeilDiv(trace[i].input_length, B));
  Fenwick fw(total_items + 1);
  StampMap stamps(total_items + 1);
  size_t now = 0;
  int64_t marked = 0;
  int64_t max_blocks = 0;
  int64_t prev_partial = 0;
  std::vector<TokenId> tail;
  std::vector<BlockHash> hashes;
  std::vector<int64_t> hist;
  auto bump = [&](int64_t d, int64_t v) {
    if (d >= static_cast<int64_t>(hist.size())) hist.resize(static_cast<size_t>(d + 1), 0);
    hist[static_cast<size_t>(d)] += v;
  };
  for (size_t i = 0; i < trace.size(); ++i) {
    trace.PromptBlockHashes(i, B, hashes, tail);
    const int64_t P = trace[i].input_length;
    const int64_t k = static_cast<int64_t>(hashes.size());
    const int64_t partial = (P % B) != 0 ? 1 : 0;
    max_blocks = std::max(max_blocks, k + partial);
    res.prompt_tokens += P;
    const int64_t cap = (P - 1) / B;
    int64_t running = 0;
    for (int64_t j = 0; j < cap; ++j) {
      const uint64_t* s = stamps.Find(hashes[static_cast<size_t>(j)], false);
      if (s == nullptr) break;
      const int64_t depth = marked - fw.Prefix(static_cast<size_t>(*s - 1));
      running = std::max(running, depth);
      bump(running + (latest ? prev_partial : 0), B);
    }
    // Push the request's items in free order: [partial], b_k, ..., b_1.
    if (partial && !latest) {
      fw.Add(now, 1);  // a unique item, never looked up again
      ++marked;
      ++now;
    }
    for (int64_t j = k - 1; j >= 0; --j) {
      uint64_t* s = stamps.Find(hashes[static_cast<size_t>(j)], true);
      if (*s != 0) {
        fw.Add(static_cast<size_t>(*s - 1), -1);
        --marked;
      }
      *s = now + 1;
      fw.Add(now, 1);
      ++marked;
      ++now;
    }
    prev_partial = partial;
  }
  res.hist = std::move(hist);
  res.min_capacity_blocks = max_blocks + 1;
  res.saturation_blocks = std::max<int64_t>(static_cast<int64_t>(res.hist.size()), max_blocks) + 1;
  int64_t hi = res.saturation_blocks;
  if (max_capacity_blocks > 0) hi = std::min(hi, max_capacity_blocks);
  int64_t cum = 0;
  int64_t last = -1;
  for (int64_t d = 0; d + 1 <= hi; ++d) {
    if (d < static_cast<int64_t>(res.hist.size())) cum += res.hist[static_cast<size_t>(d)];
    const int64_t cap_blocks = d + 1;
    if (cap_blocks < res.min_capacity_blocks) continue;
    if (cum != last || cap_blocks == hi) {
      const double rate = res.prompt_tokens > 0
                              ? static_cast<double>(cum) / static_cast<double>(res.prompt_tokens)
                              : 0.0;
      res.points.push_back({cap_blocks, cum, rate});
      last = cum;
    }
  }
  return res;
}

}  // namespace kvsim
