// The `cluster:` scenario section: pool overrides, topology and transfer keys, errors with
// file:line and did-you-mean, and the cluster setup built from it.
#include <catch2/catch_test_macros.hpp>
#include <cstdio>
#include <fstream>
#include <string>

#include "sim/cluster/cluster_setup.h"
#include "sim/config/config_tree.h"
#include "sim/scenario/scenario_loader.h"

namespace kvsim {
namespace {

const char* kBase = R"(
name: t
model:
  name: toy
  layers:
    - {type: full_attention, count: 4, num_kv_heads: 8, head_size: 128}
cache:
  num_gpu_blocks: 100
  block_size: 16
)";

Result<Scenario> Parse(const std::string& cluster) {
  auto tree = ParseYaml(std::string(kBase) + cluster, "t.yaml");
  REQUIRE(tree.ok());
  return ParseScenario(tree.value(), "t.yaml");
}

TEST_CASE("cluster sections: pools override the top-level sections") {
  auto sc = Parse(R"(cluster:
  prefill: {count: 3, parallel: {tp: 4}, cache: {block_size: 64}}
  decode: {count: 2, cache: {layout: HND}}
)");
  INFO(sc.status().ToString());
  REQUIRE(sc.ok());
  const ClusterConfig& c = sc->cluster;
  CHECK(c.enabled);
  CHECK(c.prefill.count == 3);
  CHECK(c.decode.count == 2);
  CHECK(c.prefill.scenario->cache.tp == 4);
  CHECK(c.prefill.scenario->cache.block_size == 64);
  CHECK(c.prefill.scenario->cache.num_gpu_blocks == 100);  // inherited
  CHECK(c.decode.scenario->cache.tp == 1);
  CHECK(c.decode.scenario->cache.layout == KvOrder::kLBHNC);
  CHECK(c.router.prefill == "prefix_aware");
  CHECK(c.topology.kind == "star");
  CHECK_FALSE(Parse("").value().cluster.enabled);
}

TEST_CASE("cluster sections: errors name the line and suggest the key") {
  auto bad_key = Parse("cluster:\n  decode: {cache: {blok_size: 16}}\n");
  REQUIRE_FALSE(bad_key.ok());
  CHECK(bad_key.status().message().find("t.yaml:11") != std::string::npos);
  CHECK(bad_key.status().message().find("did you mean cache.block_size") != std::string::npos);

  auto bad_node = Parse(R"(cluster:
  topology:
    kind: explicit
    switches: [sw]
    links:
      - {a: prefill0, b: sw, gbytes_per_s: 50}
      - {a: decod0, b: sw, gbytes_per_s: 50}
)");
  REQUIRE_FALSE(bad_node.ok());
  CHECK(bad_node.status().message().find("t.yaml:16") != std::string::npos);
  CHECK(bad_node.status().message().find("did you mean decode0") != std::string::npos);

  auto no_links = Parse("cluster:\n  topology: {kind: explicit}\n");
  REQUIRE_FALSE(no_links.ok());
  CHECK(no_links.status().message().find("needs links") != std::string::npos);

  auto bad_policy = Parse("cluster:\n  router: {prefill: random}\n");
  REQUIRE_FALSE(bad_policy.ok());
  CHECK(bad_policy.status().message().find("prefix_aware") != std::string::npos);
}

TEST_CASE("cluster sections: re-layout calibration from a gpu-validate YAML") {
  const std::string path = "cluster_sections_test_calib.yaml";
  {
    std::ofstream f(path);
    f << "hardware:\n  name: \"H100\"\n  move_fixed_s: 4.0e-06\n  move_bytes_per_s: 2.5e+12\n";
  }
  auto sc = Parse("cluster:\n  transfer: {relayout_calibration: " + path + "}\n");
  REQUIRE(sc.ok());
  CHECK(sc->cluster.transfer.time.relayout_launch_ns == 4000.0);
  CHECK(sc->cluster.transfer.time.relayout_bytes_per_ns == 2500.0);
  auto over = Parse("cluster:\n  transfer: {relayout_calibration: " + path +
                    ", relayout_launch_us: 7}\n");
  REQUIRE(over.ok());
  CHECK(over->cluster.transfer.time.relayout_launch_ns == 7000.0);
  CHECK(over->cluster.transfer.time.relayout_bytes_per_ns == 2500.0);
  std::remove(path.c_str());
  CHECK_FALSE(Parse("cluster:\n  transfer: {relayout_calibration: nope.yaml}\n").ok());
}

TEST_CASE("cluster setup: star topology, plans, transfer and every path") {
  auto sc = Parse(R"(cluster:
  prefill: {count: 2, parallel: {tp: 2}, cache: {layout: HND}}
  decode: {count: 3, cache: {layout: HND}}
  topology: {nic_gbytes_per_s: 25, nic_latency_us: 3}
)");
  REQUIRE(sc.ok());
  auto setup = BuildClusterSetup(sc.value());
  INFO(setup.status().ToString());
  REQUIRE(setup.ok());
  CHECK(setup->topology.num_nodes() == 1 + 2 * 5);
  CHECK(setup->prefill_plan.config.tp == 2);
  CHECK(setup->transfer.prefill_tp == 2);
  CHECK(setup->transfer.decode_tp == 1);
  REQUIRE(setup->paths.size() == 2);
  REQUIRE(setup->paths[1].size() == 3);
  const TopoPath& p = setup->path(1, 2);
  CHECK(p.nodes.size() == 5);  // prefill1 > nic > switch > nic > decode2
  CHECK(p.latency_ns == 6000);
  CHECK(p.bottleneck_bytes_per_ns == 25);
  CHECK(setup->topology.node(p.nodes.back()).name == "decode2");
  const std::string text = FormatClusterSetup(sc.value(), setup.value());
  CHECK(text.find("TP 2 -> 1") != std::string::npos);
}

TEST_CASE("cluster setup: disconnected instances are an input error") {
  auto sc = Parse(R"(cluster:
  topology:
    kind: explicit
    switches: [a, b]
    links:
      - {a: prefill0, b: a, gbytes_per_s: 50}
      - {a: decode0, b: b, gbytes_per_s: 50}
)");
  REQUIRE(sc.ok());
  auto setup = BuildClusterSetup(sc.value());
  REQUIRE_FALSE(setup.ok());
  CHECK(setup.status().code() == "no_path");
}

}  // namespace
}  // namespace kvsim
