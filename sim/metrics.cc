#include "sim/metrics.h"

#include <algorithm>
#include <cmath>

namespace kvsim {
namespace {

// Buckets: the binary exponent of the value and its top kMantissaBits mantissa bits, so a
// bucket spans at most 1/2^kMantissaBits (< 0.8%) of its values. No log() per sample.
constexpr int kMantissaBits = 7;

}  // namespace

Percentiles ExactPercentiles(std::vector<double> v) {
  Percentiles p;
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  auto rank = [&](double q) {
    size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
    return v[std::min(v.size() - 1, i == 0 ? 0 : i - 1)];
  };
  p.count = static_cast<int64_t>(v.size());
  p.mean = sum / static_cast<double>(v.size());
  p.p50 = rank(0.50);
  p.p90 = rank(0.90);
  p.p99 = rank(0.99);
  p.max = v.back();
  return p;
}

inline int LogHistogram::Bucket(Tick v) {
  if (v < 1) return 0;
  const uint64_t u = static_cast<uint64_t>(v);
  const int e = 63 - __builtin_clzll(u);  // floor(log2 v)
  // The kMantissaBits bits below the leading one (exact for small values).
  const uint64_t m = e >= kMantissaBits ? (u >> (e - kMantissaBits)) & ((1u << kMantissaBits) - 1)
                                        : (u << (kMantissaBits - e)) & ((1u << kMantissaBits) - 1);
  return 1 + (e << kMantissaBits) + static_cast<int>(m);
}

double LogHistogram::BucketValue(int b) {
  if (b == 0) return 0;
  const int e = (b - 1) >> kMantissaBits;
  const int m = (b - 1) & ((1 << kMantissaBits) - 1);
  // The middle of the bucket's value range.
  return std::ldexp(1.0 + (m + 0.5) / (1 << kMantissaBits), e);
}

void LogHistogram::Grow(size_t buckets) { counts_.resize(buckets, 0); }

void LogHistogram::Add(Tick v) {
  // Called once per emitted token: the rare growth stays out of line, so the common path
  // needs no saved registers.
  const int b = Bucket(v);
  if (static_cast<size_t>(b) >= counts_.size()) [[unlikely]]
    Grow(static_cast<size_t>(b) + 1);
  ++counts_[static_cast<size_t>(b)];
  sum_ += static_cast<double>(v);
  ++n_;
  max_ = std::max(max_, v);
}

Percentiles LogHistogram::Summarize() const {
  Percentiles p;
  if (n_ == 0) return p;
  p.count = n_;
  p.mean = sum_ / static_cast<double>(n_);
  p.max = static_cast<double>(max_);
  auto q = [&](double f) {
    const int64_t target = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(f * n_)));
    int64_t acc = 0;
    for (size_t b = 0; b < counts_.size(); ++b) {
      acc += counts_[b];
      if (acc >= target) return std::min(BucketValue(static_cast<int>(b)), p.max);
    }
    return p.max;
  };
  p.p50 = q(0.5);
  p.p90 = q(0.9);
  p.p99 = q(0.99);
  return p;
}

void Metrics::StepEnd(Tick start, Tick end, double usage, int64_t running, int64_t waiting) {
  ++steps_;
  busy_ += end - start;
  if (end >= next_sample_) {
    kv_series_.push_back({end, usage, running, waiting});
    next_sample_ = (end / kv_interval_ + 1) * kv_interval_;
  }
}

void RequestSummarizer::Add(const RequestRecord& r) {
  if (!r.arrived) return;  // an id that never arrived (the run stopped first)
  ++s_.arrived;
  if (first_arrival_ < 0 || r.arrival < first_arrival_) first_arrival_ = r.arrival;
  if (r.rejected) {
    ++s_.rejected;
    return;
  }
  if (r.finish < 0) {
    ++s_.unfinished;
    return;
  }
  ++s_.finished;
  last_finish_ = std::max(last_finish_, r.finish);
  s_.prompt_tokens += r.prompt_tokens;
  s_.output_tokens += r.output_tokens;
  s_.hit_tokens += r.cached_tokens;
  s_.cpu_hit_tokens += r.cpu_cached_tokens;
  if (r.load_start >= 0) load_wait_.push_back(TicksToMs(r.first_scheduled - r.load_start));
  ttft_.push_back(TicksToMs(r.first_token - r.arrival));
  e2e_.push_back(TicksToMs(r.finish - r.arrival));
  queue_.push_back(TicksToMs(r.first_scheduled - r.arrival));
  if (r.output_tokens > 1) {
    tpot_.push_back(TicksToMs(r.finish - r.first_token) / static_cast<double>(r.output_tokens - 1));
  }
}

RequestSummary RequestSummarizer::Finish(Tick end) const {
  RequestSummary s = s_;
  s.ttft_ms = ExactPercentiles(ttft_);
  s.tpot_ms = ExactPercentiles(tpot_);
  s.e2e_ms = ExactPercentiles(e2e_);
  s.queue_ms = ExactPercentiles(queue_);
  s.load_wait_ms = ExactPercentiles(load_wait_);
  const Tick t_end = s.unfinished > 0 ? end : last_finish_;
  s.span = first_arrival_ >= 0 ? std::max<Tick>(1, t_end - first_arrival_) : 1;
  s.makespan_s = static_cast<double>(s.span) / 1e9;
  return s;
}

RunSummary Metrics::Summarize(Tick end, int64_t kv_bytes_total, int64_t padding_bytes_total,
                              std::span<const InstanceUsage> pools) const {
  RequestSummarizer summarizer;
  for (const RequestRecord& r : records_) summarizer.Add(r);
  const RequestSummary rs = summarizer.Finish(end);
  RunSummary s;
  s.requests_arrived = rs.arrived;
  s.requests_finished = rs.finished;
  s.requests_rejected = rs.rejected;
  s.requests_unfinished = rs.unfinished;
  s.prompt_tokens = rs.prompt_tokens;
  s.output_tokens = rs.output_tokens;
  s.hit_tokens = rs.hit_tokens;
  s.cpu_hit_tokens = rs.cpu_hit_tokens;
  s.ttft_ms = rs.ttft_ms;
  s.tpot_ms = rs.tpot_ms;
  s.e2e_ms = rs.e2e_ms;
  s.queue_ms = rs.queue_ms;
  s.load_wait_ms = rs.load_wait_ms;
  s.cpu_hit_rate = s.prompt_tokens > 0 ? static_cast<double>(s.cpu_hit_tokens) /
                                             static_cast<double>(s.prompt_tokens)
                                       : 0;
  s.offload_bytes_loaded = offload_loaded_;
  s.offload_bytes_stored = offload_stored_;
  s.cpu_tier_usage_mean = cpu_samples_ > 0 ? cpu_usage_sum_ / static_cast<double>(cpu_samples_) : 0;
  s.cpu_tier_usage_max = cpu_usage_max_;
  const Percentiles itl = itl_.Summarize();
  s.itl_ms = {itl.mean / 1e6, itl.p50 / 1e6, itl.p90 / 1e6,
              itl.p99 / 1e6,  itl.max / 1e6, itl.count};
  s.prefix_hit_rate =
      s.prompt_tokens > 0 ? static_cast<double>(s.hit_tokens) / static_cast<double>(s.prompt_tokens) : 0;
  s.lookups = lookups_;
  s.lookup_query_tokens = lookup_query_;
  s.lookup_hit_tokens = lookup_hit_;
  s.preemptions = preemptions_;
  s.steps = steps_;
  s.computed_tokens = computed_tokens_;
  const Tick span = rs.span;
  s.makespan_s = rs.makespan_s;
  s.makespan_ticks = span;
  s.busy_fraction = static_cast<double>(busy_) / static_cast<double>(span);
  s.output_throughput = static_cast<double>(s.output_tokens) / s.makespan_s;
  s.total_throughput = static_cast<double>(s.output_tokens + s.prompt_tokens) / s.makespan_s;
  s.request_throughput = static_cast<double>(s.requests_finished) / s.makespan_s;
  double area = 0;
  for (const InstanceUsage& u : pools) {
    area += u.area;
    s.kv_usage_max = std::max(s.kv_usage_max, u.max);
  }
  if (!pools.empty()) area /= static_cast<double>(pools.size());
  s.kv_usage_mean = area / static_cast<double>(span);
  s.kv_bytes_total = kv_bytes_total;
  s.padding_bytes_total = padding_bytes_total;
  s.padding_bytes_in_use_mean = s.kv_usage_mean * static_cast<double>(padding_bytes_total);
  s.spec_acceptance = drafts_scheduled_ > 0 ? static_cast<double>(drafts_accepted_) /
                                                  static_cast<double>(drafts_scheduled_)
                                            : 0;
  return s;
}

}  // namespace kvsim
