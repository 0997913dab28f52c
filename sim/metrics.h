// Metrics of one simulation run: per-request latencies (TTFT, TPOT, ITL, end-to-end), the
// prefix-cache hit rate in tokens, preemptions, throughput, KV usage over time and the bytes
// the page plan loses to padding. The engine records raw events (arrival, first token, each
// token emission, finish, step ends); Summarize() turns them into a RunSummary.
//
// Percentiles of per-request values (TTFT, TPOT, E2E) are exact (nearest rank over sorted
// values). ITL — one value per token-emitting step per request, possibly tens of millions —
// goes into a log-bucketed histogram with < 0.8% relative resolution, so its percentiles are
// within 1% of the exact ones. Everything is integer ticks or derived deterministically.
#pragma once

#include <algorithm>
#include <span>
#include <cstdint>
#include <string>
#include <vector>

#include "core/types.h"
#include "sim/event.h"

namespace kvsim {

// One request's life as every deployment records it (a P/D request adds its transfer:
// sim/cluster/cluster_sim.h's PdRecord). Records are indexed by request id; an id that never
// arrived (the run stopped first) stays `arrived` = false.
struct RequestRecord {
  RequestId id;
  bool arrived = false;
  int64_t group = -1;
  int32_t turn = 0;
  Tick arrival = 0;
  Tick first_scheduled = -1;  // first step that computed it (P/D: its first prefill step)
  Tick first_token = -1;
  Tick finish = -1;
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  int64_t cached_tokens = 0;  // prefix hit at first admission (with a CPU tier: the GPU part;
                              // P/D: on the prefill instance)
  int64_t cpu_cached_tokens = 0;  // CPU-tier hit at first admission
  Tick load_start = -1;           // admitted with a CPU hit: the load started then
  int32_t preemptions = 0;
  bool rejected = false;  // could never fit (prompt ≥ max_model_len or larger than the cache)
};

struct Percentiles {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
  int64_t count = 0;
};

// Exact mean and nearest-rank percentiles of `values` (all zero when empty).
Percentiles ExactPercentiles(std::vector<double> values);

// Ticks as milliseconds.
inline double TicksToMs(Tick t) {
  return static_cast<double>(t) / static_cast<double>(kTicksPerMs);
}

// Log-bucketed histogram of non-negative tick values (< 0.8% relative resolution).
class LogHistogram {
 public:
  void Add(Tick v);
  Percentiles Summarize() const;  // in ticks

 private:
  static int Bucket(Tick v);
  static double BucketValue(int b);
  [[gnu::noinline, gnu::cold]] void Grow(size_t buckets);
  std::vector<int64_t> counts_;
  double sum_ = 0;
  int64_t n_ = 0;
  Tick max_ = 0;
};

// What every deployment reports of its requests, from their records alone: counts, tokens,
// latency percentiles (ms) and the makespan. The one summarizer: the engine's RunSummary and
// the P/D cluster's ClusterSummary both start from it.
struct RequestSummary {
  int64_t arrived = 0, finished = 0, rejected = 0, unfinished = 0;
  // Σ over finished requests.
  int64_t prompt_tokens = 0, output_tokens = 0, hit_tokens = 0, cpu_hit_tokens = 0;
  Percentiles ttft_ms, tpot_ms, e2e_ms, queue_ms, load_wait_ms;
  // From the first request's send time (the origin of its TTFT) to the last finish, or to
  // the end of the run when some request is unfinished; at least 1 tick.
  Tick span = 1;
  double makespan_s = 0;
};

class RequestSummarizer {
 public:
  void Add(const RequestRecord& r);
  // `end`: when the run stopped.
  RequestSummary Finish(Tick end) const;

 private:
  RequestSummary s_;
  std::vector<double> ttft_, tpot_, e2e_, queue_, load_wait_;
  Tick first_arrival_ = -1, last_finish_ = 0;
};

// One instance's share of a run (a DP rank, a P/D pool's member): the requests it was given,
// its steps and preemptions, its prefix-cache lookups, and its KV usage over time (sampled at
// its step ends, as Metrics::StepEnd samples the engine's; the mean is time-weighted over the
// run's makespan).
struct InstanceSummary {
  std::string name;  // "dp 1", "prefill 0"
  int64_t requests = 0, steps = 0, preemptions = 0;
  int64_t lookups = 0, query_tokens = 0, hit_tokens = 0;
  double hit_rate = 0;  // hit_tokens / query_tokens
  double kv_usage_mean = 0, kv_usage_max = 0;
};

// One instance's KV usage over time, as every deployment measures it: a sample at each of
// its step ends (after the step's tokens were applied, before finished requests free their
// blocks), held until the next; `area` is usage × ticks, so area / span is the time-weighted
// mean. The serving loop keeps one per instance, with the requests admitted to it.
struct InstanceUsage {
  int64_t requests = 0;
  double area = 0, max = 0, last = 0;
  Tick last_step_end = -1;
  void Sample(Tick now, double usage) {
    if (last_step_end >= 0) area += last * static_cast<double>(now - last_step_end);
    last_step_end = now;
    last = usage;
    max = std::max(max, usage);
  }
};

struct KvSample {
  Tick tick = 0;
  double usage = 0;  // vLLM's usage: 1 − free / (num_blocks − 1)
  int64_t running = 0;
  int64_t waiting = 0;
};

struct RunSummary {
  int64_t requests_arrived = 0;
  int64_t requests_finished = 0;
  int64_t requests_rejected = 0;
  int64_t requests_unfinished = 0;  // still queued/running when the run stopped
  int64_t prompt_tokens = 0;        // Σ over finished requests
  int64_t output_tokens = 0;
  int64_t hit_tokens = 0;           // first-admission prefix hits, finished requests
  double prefix_hit_rate = 0;       // hit_tokens / prompt_tokens
  int64_t lookups = 0, lookup_query_tokens = 0, lookup_hit_tokens = 0;  // all lookups
  int64_t preemptions = 0;
  int64_t steps = 0;
  int64_t computed_tokens = 0;      // tokens the engine computed (incl. recompute, drafts)
  double makespan_s = 0;            // first arrival → last finish
  Tick makespan_ticks = 0;          // the same in ticks (at least 1)
  double busy_fraction = 0;         // fraction of the makespan with a step in flight
  double output_throughput = 0;     // output tokens / s
  double total_throughput = 0;      // (prompt + output) tokens / s
  double request_throughput = 0;    // finished requests / s
  Percentiles ttft_ms, tpot_ms, itl_ms, e2e_ms, queue_ms;
  double kv_usage_mean = 0;         // time-weighted over the makespan (DP: the ranks' mean)
  double kv_usage_max = 0;          // DP: the highest rank's
  // Padding: bytes of the KV memory no layer's data uses (static), and their time-weighted
  // share of the blocks in use.
  int64_t kv_bytes_total = 0;
  int64_t padding_bytes_total = 0;
  double padding_bytes_in_use_mean = 0;
  double spec_acceptance = 0;       // accepted drafts / scheduled drafts
  // CPU offloading tier (zero without one): first-admission CPU hits of finished requests,
  // blocks copied each way, the tier's occupancy at step ends, and how long a request
  // admitted with a CPU hit waited for its load before its first step.
  int64_t cpu_hit_tokens = 0;
  double cpu_hit_rate = 0;          // cpu_hit_tokens / prompt_tokens
  int64_t offload_bytes_loaded = 0, offload_bytes_stored = 0;
  double cpu_tier_usage_mean = 0, cpu_tier_usage_max = 0;  // of its blocks, over steps
  Percentiles load_wait_ms;
  // Data-parallel ranks (parallel.dp > 1): each rank's share, in rank order; empty otherwise.
  std::vector<InstanceSummary> ranks;
};

class Metrics {
 public:
  explicit Metrics(Tick kv_sample_interval) : kv_interval_(kv_sample_interval) {}

  RequestRecord& Arrive(RequestId id) {
    const auto i = static_cast<size_t>(id.value());
    if (i >= records_.size()) records_.resize(i + 1);
    RequestRecord& r = records_[i];
    r.id = id;
    r.arrived = true;
    return r;
  }
  RequestRecord& record(RequestId id) { return records_[static_cast<size_t>(id.value())]; }
  const std::vector<RequestRecord>& records() const { return records_; }

  // A token emission for a request at `now` (the previous emission was at `prev`, -1 if none).
  void Emission(Tick prev, Tick now) {
    if (prev >= 0) itl_.Add(now - prev);
  }
  // After each step: the step's span (busy time) and the pool state (the KV series; the
  // time-weighted usage is the instances' InstanceUsage).
  void StepEnd(Tick start, Tick end, double usage, int64_t running, int64_t waiting);
  void SpecDrafts(int64_t scheduled, int64_t accepted) {
    drafts_scheduled_ += scheduled;
    drafts_accepted_ += accepted;
  }
  void Preemption() { ++preemptions_; }
  void Computed(int64_t tokens) { computed_tokens_ += tokens; }
  void Lookups(int64_t n, int64_t query, int64_t hit) {
    lookups_ = n, lookup_query_ = query, lookup_hit_ = hit;
  }
  // The CPU tier after a step: its occupancy (fraction of its blocks held).
  void CpuTierSample(double usage) {
    cpu_usage_sum_ += usage;
    cpu_usage_max_ = std::max(cpu_usage_max_, usage);
    ++cpu_samples_;
  }
  void OffloadBytes(int64_t loaded, int64_t stored) {
    offload_loaded_ = loaded, offload_stored_ = stored;
  }

  // `pools`: each instance's KV usage (one, or one per DP rank).
  RunSummary Summarize(Tick end, int64_t kv_bytes_total, int64_t padding_bytes_total,
                       std::span<const InstanceUsage> pools) const;
  const std::vector<KvSample>& kv_series() const { return kv_series_; }

 private:
  std::vector<RequestRecord> records_;
  LogHistogram itl_;
  Tick kv_interval_;
  Tick next_sample_ = 0;
  std::vector<KvSample> kv_series_;
  Tick busy_ = 0;
  int64_t steps_ = 0;
  int64_t preemptions_ = 0;
  int64_t computed_tokens_ = 0;
  int64_t drafts_scheduled_ = 0, drafts_accepted_ = 0;
  int64_t lookups_ = 0, lookup_query_ = 0, lookup_hit_ = 0;
  double cpu_usage_sum_ = 0, cpu_usage_max_ = 0;
  int64_t cpu_samples_ = 0;
  int64_t offload_loaded_ = 0, offload_stored_ = 0;
};

}  // namespace kvsim
