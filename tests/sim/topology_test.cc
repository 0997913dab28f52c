// Topology: shortest paths on small graphs (metric, tie-breaks, parallel links, errors).
#include <catch2/catch_test_macros.hpp>
#include <cmath>

#include "sim/cluster/topology.h"

namespace kvsim {
namespace {

std::vector<std::string> Names(const Topology& t, const TopoPath& p) {
  std::vector<std::string> out;
  for (int n : p.nodes) out.push_back(t.node(n).name);
  return out;
}

// p0 - nic0 - sw - nic1 - d0, plus a slow direct "bypass" p0 - d0 with high latency.
Topology Diamond() {
  Topology t;
  REQUIRE(t.AddNode("p0", TopoNodeKind::kInstance).ok());
  REQUIRE(t.AddNode("d0", TopoNodeKind::kInstance).ok());
  REQUIRE(t.AddNode("nic0", TopoNodeKind::kNic).ok());
  REQUIRE(t.AddNode("nic1", TopoNodeKind::kNic).ok());
  REQUIRE(t.AddNode("sw", TopoNodeKind::kSwitch).ok());
  REQUIRE(t.AddLink("p0", "nic0", 50, 500).ok());
  REQUIRE(t.AddLink("nic0", "sw", 50, 1000).ok());
  REQUIRE(t.AddLink("sw", "nic1", 25, 1000).ok());
  REQUIRE(t.AddLink("nic1", "d0", 50, 500).ok());
  REQUIRE(t.AddLink("p0", "d0", 10, 10000).ok());
  return t;
}

TEST_CASE("topology: least-latency path, its latency and bottleneck") {
  Topology t = Diamond();
  auto p = t.Path(t.FindNode("p0"), t.FindNode("d0"));
  REQUIRE(p.ok());
  CHECK(Names(t, *p) == std::vector<std::string>{"p0", "nic0", "sw", "nic1", "d0"});
  CHECK(p->latency_ns == 3000);
  CHECK(p->bottleneck_bytes_per_ns == 25);
  REQUIRE(p->resources.size() == 4);
  CHECK(t.ResourceName(p->resources[0]) == "p0->nic0");
  CHECK(t.ResourceName(p->resources[2]) == "sw->nic1");
  // The reverse direction uses the other resource of each link.
  auto back = t.Path(t.FindNode("d0"), t.FindNode("p0"));
  REQUIRE(back.ok());
  CHECK(t.ResourceName(back->resources[0]) == "d0->nic1");
  CHECK(back->resources[0] != p->resources[3]);
  CHECK(back->resources[0] / 2 == p->resources[3] / 2);
}

TEST_CASE("topology: hop metric takes the direct link") {
  Topology t = Diamond();
  t.set_metric(PathMetric::kHops);
  auto p = t.Path(t.FindNode("p0"), t.FindNode("d0"));
  REQUIRE(p.ok());
  CHECK(Names(t, *p) == std::vector<std::string>{"p0", "d0"});
  CHECK(p->latency_ns == 10000);
  CHECK(p->bottleneck_bytes_per_ns == 10);
}

TEST_CASE("topology: equal latency ties go to fewer hops") {
  Topology t;
  for (const char* n : {"a", "b", "x", "y"}) REQUIRE(t.AddNode(n, TopoNodeKind::kSwitch).ok());
  REQUIRE(t.AddLink("a", "x", 10, 1000).ok());
  REQUIRE(t.AddLink("x", "y", 10, 0).ok());
  REQUIRE(t.AddLink("y", "b", 10, 1000).ok());
  REQUIRE(t.AddLink("a", "b", 10, 2000).ok());
  auto p = t.Path(t.FindNode("a"), t.FindNode("b"));
  REQUIRE(p.ok());
  CHECK(p->nodes.size() == 2);
  CHECK(p->latency_ns == 2000);
}

TEST_CASE("topology: parallel links pick the lighter one") {
  Topology t;
  REQUIRE(t.AddNode("a", TopoNodeKind::kNic).ok());
  REQUIRE(t.AddNode("b", TopoNodeKind::kNic).ok());
  REQUIRE(t.AddLink("a", "b", 10, 900).ok());
  REQUIRE(t.AddLink("a", "b", 40, 100).ok());
  auto p = t.Path(0, 1);
  REQUIRE(p.ok());
  REQUIRE(p->resources.size() == 1);
  CHECK(p->resources[0] == 2);  // link 1, forward
  CHECK(p->bottleneck_bytes_per_ns == 40);
}

TEST_CASE("topology: errors and trivial paths") {
  Topology t = Diamond();
  CHECK(t.AddNode("p0", TopoNodeKind::kInstance).status().code() == "duplicate_node");
  CHECK(t.AddLink("p0", "nope", 1, 0).code() == "unknown_node");
  CHECK(t.AddLink("p0", "sw", 0, 0).code() == "bad_value");
  CHECK(t.AddLink("p0", "p0", 1, 0).code() == "bad_value");
  REQUIRE(t.AddNode("island", TopoNodeKind::kInstance).ok());
  auto none = t.Path(t.FindNode("p0"), t.FindNode("island"));
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().code() == "no_path");
  auto self = t.Path(0, 0);
  REQUIRE(self.ok());
  CHECK(self->resources.empty());
  CHECK(self->latency_ns == 0);
  CHECK(std::isinf(self->bottleneck_bytes_per_ns));
}

}  // namespace
}  // namespace kvsim
