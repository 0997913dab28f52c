// FlowNetwork: max-min fair sharing by progressive filling, recomputed as flows come and go.
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <cstdint>
#include <random>

#include "sim/cluster/flow_network.h"

namespace kvsim {
namespace {

using Catch::Approx;

TEST_CASE("flows: one link shared equally, then the survivor speeds up") {
  FlowNetwork net({10.0});  // 10 B/ns
  const int64_t a = net.Add({0}, 1000, 0);
  const int64_t b = net.Add({0}, 3000, 0);
  CHECK(net.rate(a) == Approx(5));
  CHECK(net.rate(b) == Approx(5));
  net.CheckInvariants();
  auto next = net.NextCompletion();
  REQUIRE(next);
  CHECK(next->first == 200);  // 1000 B at 5 B/ns
  CHECK(next->second == a);
  net.AdvanceTo(200);
  CHECK(net.Finished() == std::vector<int64_t>{a});
  net.Remove(a);
  CHECK(net.rate(b) == Approx(10));
  CHECK(net.remaining(b) == Approx(2000));
  next = net.NextCompletion();
  CHECK(next->first == 400);
  net.AdvanceTo(400);
  CHECK(net.Finished() == std::vector<int64_t>{b});
  CHECK(net.carried_bytes()[0] == Approx(4000));
}

TEST_CASE("flows: the classic max-min example (a long flow and two short ones)") {
  // Links L0 (cap 10) and L1 (cap 4). Flow A crosses both, B only L0, C only L1.
  // L1 saturates first: A = C = 2; then B takes the rest of L0: 8.
  FlowNetwork net({10.0, 4.0});
  const int64_t a = net.Add({0, 1}, 1e6, 0);
  const int64_t b = net.Add({0}, 1e6, 0);
  const int64_t c = net.Add({1}, 1e6, 0);
  CHECK(net.rate(a) == Approx(2));
  CHECK(net.rate(c) == Approx(2));
  CHECK(net.rate(b) == Approx(8));
  net.CheckInvariants();
  const auto load = net.Load();
  CHECK(load[0] == Approx(10));
  CHECK(load[1] == Approx(4));
}

TEST_CASE("flows: a rate cap frees bandwidth for the others") {
  FlowNetwork net({12.0});
  const int64_t capped = net.Add({0}, 100, 0, 2.0);
  const int64_t free1 = net.Add({0}, 100, 0);
  const int64_t free2 = net.Add({0}, 100, 0);
  CHECK(net.rate(capped) == Approx(2));
  CHECK(net.rate(free1) == Approx(5));
  CHECK(net.rate(free2) == Approx(5));
  net.CheckInvariants();
}

TEST_CASE("flows: a flow with no links finishes at once") {
  FlowNetwork net({1.0});
  const int64_t f = net.Add({}, 1e9, 0);
  auto next = net.NextCompletion();
  REQUIRE(next);
  CHECK(next->first == 0);
  CHECK(net.Finished() == std::vector<int64_t>{f});
}

TEST_CASE("flows: random networks stay max-min fair and conserve bytes") {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    const int nres = 1 + static_cast<int>(rng() % 6);
    std::vector<double> cap;
    for (int r = 0; r < nres; ++r) cap.push_back(1.0 + static_cast<double>(rng() % 50));
    FlowNetwork net(cap);
    double total_bytes = 0;
    std::vector<std::pair<int64_t, double>> flows;  // id, bytes × hops
    int64_t now = 0;
    for (int k = 0; k < 12; ++k) {
      std::vector<int> res;
      for (int r = 0; r < nres; ++r) {
        if (rng() % 2) res.push_back(r);
      }
      if (res.empty()) res.push_back(static_cast<int>(rng() % nres));
      const double bytes = 100.0 + static_cast<double>(rng() % 5000);
      total_bytes += bytes * static_cast<double>(res.size());
      flows.emplace_back(net.Add(res, bytes, now), bytes);
      net.CheckInvariants();
      now += static_cast<int64_t>(rng() % 40);
      // Drain whatever finishes before the next arrival.
      while (auto next = net.NextCompletion()) {
        if (next->first > now) break;
        net.AdvanceTo(next->first);
        for (int64_t id : net.Finished()) net.Remove(id);
        net.CheckInvariants();
      }
      net.AdvanceTo(now);
    }
    while (auto next = net.NextCompletion()) {
      net.AdvanceTo(next->first);
      const auto done = net.Finished();
      REQUIRE_FALSE(done.empty());
      for (int64_t id : done) net.Remove(id);
      net.CheckInvariants();
    }
    double carried = 0;
    for (double c : net.carried_bytes()) carried += c;
    CHECK(carried == Approx(total_bytes).epsilon(1e-6));
    CHECK(net.size() == 0);
  }
}

}  // namespace
}  // namespace kvsim
