// Routers: round robin, least loaded and prefix-aware block-hash affinity.
#include <catch2/catch_test_macros.hpp>

#include "sim/cluster/cluster_config.h"
#include "sim/cluster/router.h"

namespace kvsim {
namespace {

TEST_CASE("router: round robin cycles, without loads or hashes") {
  RoundRobinRouter r(3);
  std::vector<int> got;
  for (int i = 0; i < 7; ++i) got.push_back(r.Route({}, {}));
  CHECK(got == std::vector<int>{0, 1, 2, 0, 1, 2, 0});
  // The cluster computes neither for it; least_loaded reads loads, prefix_aware both.
  CHECK_FALSE(r.reads_loads());
  CHECK_FALSE(r.reads_hashes());
  CHECK(LeastLoadedRouter().reads_loads());
  CHECK_FALSE(LeastLoadedRouter().reads_hashes());
  const PrefixAwareRouter p(2, 10, 0);
  CHECK(p.reads_loads());
  CHECK(p.reads_hashes());
}

TEST_CASE("router: least loaded, lowest index on ties") {
  LeastLoadedRouter r;
  std::vector<InstanceLoad> loads = {{100, 1}, {50, 0}, {50, 0}};
  CHECK(r.Route({}, loads) == 1);
  loads[1].waiting_tokens = 60;
  CHECK(r.Route({}, loads) == 2);
}

TEST_CASE("router: prefix-aware follows the longest remembered prefix") {
  PrefixAwareRouter r(3, 1000, 1000000);
  std::vector<InstanceLoad> loads(3);
  const std::vector<BlockHash> sys = {11, 12, 13};
  const std::vector<BlockHash> a = {11, 12, 13, 21, 22};
  const std::vector<BlockHash> b = {11, 12, 31};
  const std::vector<BlockHash> other = {41, 42};
  // Nothing remembered: least loaded (instance 0); it now remembers a.
  CHECK(r.Route(a, loads) == 0);
  loads[0].waiting_tokens = 500;
  // b shares 2 blocks with a: goes to 0 although 1 and 2 are idle.
  CHECK(r.MatchLength(0, b) == 2);
  CHECK(r.Route(b, loads) == 0);
  // An unrelated request balances onto an idle instance.
  CHECK(r.Route(other, loads) == 1);
  CHECK(r.MatchLength(1, other) == 2);
  CHECK(r.MatchLength(1, sys) == 0);
}

TEST_CASE("router: prefix-aware gives way to balance beyond max_imbalance") {
  PrefixAwareRouter r(2, 1000, 100);
  std::vector<InstanceLoad> loads(2);
  const std::vector<BlockHash> h = {1, 2, 3};
  CHECK(r.Route(h, loads) == 0);
  loads[0].waiting_tokens = 100;  // within the slack
  CHECK(r.Route(h, loads) == 0);
  loads[0].waiting_tokens = 101;  // beyond it
  CHECK(r.Route(h, loads) == 1);
  // Now both remember h; the less loaded one wins the tie.
  CHECK(r.Route(h, loads) == 1);
}

TEST_CASE("router: prefix memory is LRU with a capacity") {
  PrefixAwareRouter r(1, 3, 0);
  std::vector<InstanceLoad> loads(1);
  r.Route(std::vector<BlockHash>{1, 2, 3}, loads);
  CHECK(r.MatchLength(0, std::vector<BlockHash>{1, 2, 3}) == 3);
  r.Route(std::vector<BlockHash>{7}, loads);  // evicts the tail block 3, keeps the prefix
  CHECK(r.MatchLength(0, std::vector<BlockHash>{1, 2, 3}) == 2);
  CHECK(r.MatchLength(0, std::vector<BlockHash>{7}) == 1);
}

TEST_CASE("router: registry") {
  CHECK(MakeRouter("round_robin", 2, 10, 0).ok());
  CHECK(MakeRouter("least_loaded", 2, 10, 0).ok());
  auto p = MakeRouter("prefix_aware", 2, 10, 0);
  REQUIRE(p.ok());
  CHECK(p.value()->name() == "prefix_aware");
  CHECK_FALSE(MakeRouter("random", 2, 10, 0).ok());
}

// The scenario loader accepts exactly RouterPolicyNames() (sim/cluster/cluster_config.h);
// every name it accepts must build a router of that name.
TEST_CASE("router: every policy name the config accepts builds that router") {
  REQUIRE(RouterPolicyNames().size() == 3);
  for (const std::string& name : RouterPolicyNames()) {
    auto r = MakeRouter(name, 2, 10, 0);
    REQUIRE(r.ok());
    CHECK(r.value()->name() == name);
  }
}

}  // namespace
}  // namespace kvsim
