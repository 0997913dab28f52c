// ClusterSim: P/D request flow properties — every request's KV moves exactly once, the bytes
// on the links add up to the bytes the transfer math says, the TTFT parts add up, runs are
// deterministic, and the network and the decoder's prefix cache change what they should.
#include <catch2/catch_test_macros.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "sim/cluster/cluster_sim.h"
#include "sim/config/config_tree.h"
#include "sim/scenario/scenario_loader.h"
#include "tests/sim/load_scenario.h"

namespace kvsim {
namespace {

// A small dense model; prefill NHD/64/TP2 → decode HND/16/TP1 needs the save-side split and
// permute (prefill prefix caching off), over a star of 400 Gb/s NICs.
std::string Yaml(const std::string& extra = "") {
  return R"(
name: pd_test
seed: 3
model:
  name: toy
  max_model_len: 8192
  layers:
    - {type: full_attention, count: 8, num_kv_heads: 8, head_size: 128}
  compute: {hidden_size: 4096, num_attention_heads: 32, num_params: 2000000000,
            num_active_params: 2000000000, vocab_size: 32000}
cache:
  num_gpu_blocks: 4000
scheduler:
  max_num_batched_tokens: 2048
  max_num_seqs: 64
workload:
  kind: shared_prefix
  num_requests: 60
  rate_per_s: 40
  prompt_tokens: {dist: uniform, mean: 600, min: 200, max: 1000}
  output_tokens: {dist: fixed, mean: 6}
  system_prompt: {tokens: 256, count: 2}
cluster:
  prefill:
    count: 2
    parallel: {tp: 2}
    cache: {block_size: 64, layout: NHD, enable_prefix_caching: false}
  decode:
    count: 2
    cache: {block_size: 16, layout: HND}
  router: {prefill: round_robin, decode: prefix_aware}
  transfer: {save_side_postprocess: true}
)" + extra;
}

Scenario Load(const std::string& text) { return LoadScenarioText(text, "pd_test.yaml"); }

std::unique_ptr<ClusterSim> RunOf(const Scenario& sc) {
  auto sim = ClusterSim::Create(sc);
  INFO(sim.status().ToString());
  REQUIRE(sim.ok());
  sim.value()->Run();
  sim.value()->CheckInvariants();
  return std::move(sim.value());
}

TEST_CASE("cluster: every request's KV moves once and the bytes add up") {
  const Scenario sc = Load(Yaml());
  auto sim = RunOf(sc);
  const ClusterSummary s = sim->Summary();
  CHECK(s.finished == 60);
  CHECK(s.rejected == 0);
  CHECK(s.transferred_requests == 60);
  int64_t bytes = 0;
  for (const PdRecord& r : sim->records()) {
    if (!r.arrived) continue;
    CHECK(r.transfers == 1);
    // The record's transfer is exactly the math's for the decoder's own hit.
    const KvTransferCost c = sim->setup().transfer.ForRequest(r.decode_hit_tokens, r.prompt_tokens);
    CHECK(r.bytes == c.bytes);
    CHECK(r.descriptors == c.descriptors);
    CHECK(r.transfer_tokens == r.prompt_tokens - r.decode_hit_tokens);
    CHECK(r.output_tokens == 6);
    bytes += r.bytes;
  }
  CHECK(bytes == s.bytes);
  // In the star every transfer leaves through exactly one prefill instance's link and enters
  // through one decode instance's link: each side carries every byte once.
  double out_of_prefill = 0, into_decode = 0;
  for (const LinkSummary& l : s.links) {
    if (l.name.rfind("prefill", 0) == 0) out_of_prefill += l.bytes;
    if (l.name.find("->decode") != std::string::npos) into_decode += l.bytes;
  }
  CHECK(out_of_prefill == static_cast<double>(bytes));
  CHECK(into_decode == static_cast<double>(bytes));
}

TEST_CASE("cluster: TTFT = queue + prefill + transfer + first decode, in order") {
  auto sim = RunOf(Load(Yaml()));
  for (const PdRecord& r : sim->records()) {
    if (!r.arrived) continue;
    REQUIRE(r.finish >= 0);
    CHECK(r.arrival <= r.first_scheduled);
    CHECK(r.first_scheduled < r.prefill_end);
    CHECK(r.prefill_end <= r.reserved);
    CHECK(r.reserved <= r.wire_start);
    CHECK(r.wire_start <= r.wire_end);
    CHECK(r.wire_end < r.kv_ready);  // path latency > 0
    CHECK(r.kv_ready < r.first_token);
    CHECK(r.first_token <= r.finish);
    const Tick parts = (r.first_scheduled - r.arrival) + (r.prefill_end - r.first_scheduled) +
                       (r.kv_ready - r.prefill_end) + (r.first_token - r.kv_ready);
    CHECK(parts == r.first_token - r.arrival);
  }
}

TEST_CASE("cluster: same scenario and seed, same outputs") {
  const Scenario sc = Load(Yaml());
  const std::string a = ClusterSummaryToJson(RunOf(sc)->Summary()).dump();
  const std::string b = ClusterSummaryToJson(RunOf(sc)->Summary()).dump();
  CHECK(a == b);
}

TEST_CASE("cluster: a slower network makes the wire slower, nothing else moves bytes") {
  const ClusterSummary fast = RunOf(Load(Yaml()))->Summary();
  const ClusterSummary slow =
      RunOf(Load(Yaml("  topology: {nic_gbytes_per_s: 2}\n")))->Summary();
  CHECK(slow.bytes == fast.bytes);
  CHECK(slow.wire.mean > 5 * fast.wire.mean);
  CHECK(slow.transfer.mean > fast.transfer.mean);
}

TEST_CASE("cluster: the decoder's prefix cache shortens transfers") {
  auto sim = RunOf(Load(Yaml()));
  const ClusterSummary s = sim->Summary();
  // Two 256-token system prompts, prefix-aware decode routing: later requests find them.
  CHECK(s.decode_hit_tokens > 0);
  CHECK(s.decode_pool.hit_tokens > 0);
  int64_t shorter = 0;
  for (const PdRecord& r : sim->records()) {
    if (r.arrived && r.decode_hit_tokens > 0) {
      ++shorter;
      CHECK(r.bytes < sim->setup().transfer.ForRequest(0, r.prompt_tokens).bytes);
    }
  }
  CHECK(shorter > 0);
}

TEST_CASE("cluster: refused heterogeneity is an input error naming the reason") {
  auto tree = ParseYaml(Yaml(), "pd_test.yaml");
  REQUIRE(tree.ok());
  REQUIRE(ApplyOverride(tree.value(), "cluster.transfer.save_side_postprocess=false").ok());
  auto parsed = ParseScenario(tree.value(), "pd_test.yaml");
  REQUIRE(parsed.ok());
  auto sim = ClusterSim::Create(parsed.value());
  REQUIRE_FALSE(sim.ok());
  CHECK(sim.status().code() == "pd_unsupported");
  CHECK(sim.status().message().find("30448") != std::string::npos);
}

}  // namespace
}  // namespace kvsim
