// Metrics: exact percentiles, histogram resolution, time-weighted KV usage, throughput.
#include "sim/metrics.h"

#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <vector>

namespace kvsim {
namespace {

TEST_CASE("log histogram percentiles are within 1% of the exact ones") {
  LogHistogram h;
  for (Tick v = 1; v <= 10000; ++v) h.Add(v * 1000);
  const Percentiles p = h.Summarize();
  CHECK(p.count == 10000);
  CHECK(p.mean == Catch::Approx(5000.5 * 1000));
  CHECK(p.p50 == Catch::Approx(5000 * 1000).epsilon(0.01));
  CHECK(p.p90 == Catch::Approx(9000 * 1000).epsilon(0.01));
  CHECK(p.p99 == Catch::Approx(9900 * 1000).epsilon(0.01));
  CHECK(p.max == 10000 * 1000);
}

TEST_CASE("summary: latencies, hit rate and throughput from hand-made records") {
  Metrics m(kTicksPerMs);
  // Two requests: arrive at 0 and 1 s; first token 100 ms later; 11 tokens over 1 s more.
  for (int i = 0; i < 2; ++i) {
    RequestRecord& r = m.Arrive(RequestId{i});
    r.arrival = i * kTicksPerSecond;
    r.first_scheduled = r.arrival + 10 * kTicksPerMs;
    r.first_token = r.arrival + 100 * kTicksPerMs;
    r.finish = r.first_token + kTicksPerSecond;
    r.prompt_tokens = 1000;
    r.output_tokens = 11;
    r.cached_tokens = i == 0 ? 0 : 500;
  }
  m.StepEnd(0, kTicksPerSecond, 0.5, 1, 0);
  m.StepEnd(kTicksPerSecond, 2 * kTicksPerSecond + 100 * kTicksPerMs, 0.25, 1, 0);
  InstanceUsage u;  // the instance's samples at the same step ends
  u.Sample(kTicksPerSecond, 0.5);
  u.Sample(2 * kTicksPerSecond + 100 * kTicksPerMs, 0.25);
  const RunSummary s = m.Summarize(3 * kTicksPerSecond, 1000, 100, {&u, 1});
  CHECK(s.requests_finished == 2);
  CHECK(s.ttft_ms.mean == Catch::Approx(100));
  CHECK(s.tpot_ms.mean == Catch::Approx(100));  // 1 s over 10 gaps
  CHECK(s.e2e_ms.p99 == Catch::Approx(1100));
  CHECK(s.queue_ms.mean == Catch::Approx(10));
  CHECK(s.prefix_hit_rate == Catch::Approx(0.25));
  CHECK(s.makespan_s == Catch::Approx(2.1));
  CHECK(s.output_throughput == Catch::Approx(22 / 2.1));
  // Usage 0.5 held from t=1 s to 2.1 s (the first sample has no history) over 2.1 s.
  CHECK(s.kv_usage_mean == Catch::Approx(0.5 * 1.1 / 2.1));
  CHECK(s.kv_usage_max == 0.5);
  CHECK(s.padding_bytes_in_use_mean == Catch::Approx(100 * s.kv_usage_mean));
}

TEST_CASE("DP ranks: KV usage is the ranks' mean of their time-weighted usage, max the highest") {
  Metrics m(kTicksPerMs);
  RequestRecord& r = m.Arrive(RequestId{0});
  r.arrival = 0;
  r.first_scheduled = 0;
  r.first_token = kTicksPerSecond;
  r.finish = 2 * kTicksPerSecond;  // makespan 2 s
  r.prompt_tokens = 10;
  r.output_tokens = 2;
  InstanceUsage a, b;
  a.Sample(kTicksPerSecond, 0.4);  // 0.4 held for 1 s
  a.Sample(2 * kTicksPerSecond, 0.2);
  b.Sample(kTicksPerSecond, 0.2);  // 0.2 held for 1 s
  b.Sample(2 * kTicksPerSecond, 0.6);
  const std::vector<InstanceUsage> ranks{a, b};
  const RunSummary s = m.Summarize(2 * kTicksPerSecond, 0, 0, ranks);
  CHECK(s.makespan_ticks == 2 * kTicksPerSecond);
  CHECK(s.kv_usage_mean == Catch::Approx((0.4 + 0.2) / 2 * 1.0 / 2.0));  // 0.15
  CHECK(s.kv_usage_max == 0.6);
}

TEST_CASE("unfinished and rejected requests are counted, not averaged") {
  Metrics m(kTicksPerMs);
  RequestRecord& a = m.Arrive(RequestId{0});
  a.arrival = 0;
  RequestRecord& b = m.Arrive(RequestId{1});
  b.arrival = 0;
  b.rejected = true;
  const RunSummary s = m.Summarize(kTicksPerSecond, 0, 0, {});
  CHECK(s.requests_unfinished == 1);
  CHECK(s.requests_rejected == 1);
  CHECK(s.requests_finished == 0);
  CHECK(s.ttft_ms.count == 0);
}

}  // namespace
}  // namespace kvsim
