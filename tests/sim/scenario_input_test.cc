// Scenario input that used to pass silently or never end (issue 12 §2): an unbounded
// synthetic workload, a missing trace becoming synthetic data, MLA's num_kv_heads, and a
// --set on a key the sweep varies.
#include <catch2/catch_test_macros.hpp>

#include <string>

#include "sim/config/config_tree.h"
#include "sim/scenario/scenario_loader.h"
#include "sim/sweep/sweep_spec.h"

namespace kvsim {
namespace {

Result<Scenario> Load(std::vector<std::string> sets) {
  sets.insert(sets.begin(), "sweep={}");
  return LoadScenario(LoadOptions{"", sets});
}

bool Contains(const Status& s, const std::string& what) {
  return s.message().find(what) != std::string::npos;
}

TEST_CASE("scenario: num_requests 0 needs a duration or a simulated-time limit", "[scenario]") {
  auto bad = Load({"workload.num_requests=0"});
  REQUIRE_FALSE(bad.ok());
  CHECK(Contains(bad.status(), "--set workload.num_requests: workload.num_requests: 0 (no cap)"));
  CHECK(Load({"workload.num_requests=0", "workload.duration_s=2"}).ok());
  CHECK(Load({"workload.num_requests=0", "run.max_sim_seconds=2"}).ok());
  // A trace ends with its file.
  CHECK(Load({"workload={kind: trace, num_requests: 0, "
              "trace: {path: mooncake_conversation_head60.jsonl}}"})
            .ok());
  // Open-loop load stages end with the last stage; closed-loop clients do not stop there.
  CHECK(Load({"workload.num_requests=0", "workload.stages=[{rate_per_s: 2, duration_s: 5}]"})
            .ok());
  CHECK_FALSE(Load({"workload.num_requests=0", "workload.concurrency=4",
                    "workload.stages=[{rate_per_s: 2, duration_s: 5}]"})
                  .ok());
}

TEST_CASE("scenario: trace.required defaults to true", "[scenario]") {
  auto sc = Load({"workload={kind: trace, trace: {path: x.jsonl}}"});
  REQUIRE(sc.ok());
  CHECK(sc->sim.workload.trace.required);
  auto off = Load({"workload={kind: trace, trace: {path: x.jsonl, required: false}}"});
  REQUIRE(off.ok());
  CHECK_FALSE(off->sim.workload.trace.required);
}

TEST_CASE("scenario: the model's max_model_len reaches the workload", "[scenario]") {
  auto sc = Load({"model.max_model_len=5000"});
  REQUIRE(sc.ok());
  CHECK(sc->sim.workload.max_model_len == 5000);
  // Above the default scenario's shortest prompt (2000-token system prompt + 8).
  auto cache = Load({"cache.max_model_len=3000"});
  REQUIRE(cache.ok());
  CHECK(cache->sim.workload.max_model_len == 3000);
}

TEST_CASE("scenario: an MLA layer may say num_kv_heads: 1, nothing else", "[scenario]") {
  const std::string mla = "model.layers=[{type: mla, count: 2, head_size: 576, num_kv_heads: ";
  auto one = Load({"model.preset=deepseek-v3", mla + "1}]"});
  REQUIRE(one.ok());
  auto two = Load({"model.preset=deepseek-v3", mla + "8}]"});
  REQUIRE_FALSE(two.ok());
  CHECK(Contains(two.status(), "num_kv_heads"));
  CHECK(Contains(two.status(), "one latent vector"));
}

TEST_CASE("sweep: --set on a swept key fixes that axis and says so", "[sweep]") {
  auto tree = ParseYaml(
      "sweep:\n"
      "  cache.attn_pack_size: [1, 2, 4]\n"
      "  workload.rate_per_s: [1, 2]\n"
      "  zip: [{cache.block_size: [16, 32], seed: [1, 2]}]\n",
      "s.yaml");
  REQUIRE(tree.ok());
  ConfigNode t = tree.value();
  const auto notes = FixSweptKeys(t, {"cache.attn_pack_size=2", "cache.block_size=64", "x=1"});
  REQUIRE(notes.size() == 2);
  CHECK(notes[0] == "cache.attn_pack_size is swept (3 values); --set fixes it to 2");
  CHECK(notes[1] == "cache.block_size is swept (2 values); --set fixes it to 64");
  // Left: rate (2 values) × the zip's seed (2 values) = 4 points.
  auto points = ExpandSweep(t);
  REQUIRE(points.ok());
  CHECK(points->size() == 4);
  auto keys = SweepKeys(t);
  REQUIRE(keys.ok());
  CHECK(keys.value() == std::vector<std::string>{"workload.rate_per_s", "seed"});
}

TEST_CASE("ToExactYaml reads back as the same tree", "[config]") {
  // Awkward scalars: empty, null-like, leading dash, quotes, colon-space, a newline, UTF-8.
  auto tree = ParseYaml(
      "a: ''\n"
      "b: 'null'\n"
      "c: -3\n"
      "d: \"say \\\"hi\\\": now\\nok\"\n"
      "e: [1, {x: 'a b', y: [2, 3]}, ~]\n"
      "f: {}\n"
      "g: h\u00e9llo # comment\n"
      "cache.attn_pack_size: 16GiB\n",
      "t.yaml");
  REQUIRE(tree.ok());
  const std::string once = ToExactYaml(tree.value());
  auto back = ParseYaml(once, "back.yaml");
  REQUIRE(back.ok());
  CHECK(ToExactYaml(back.value()) == once);
  CHECK(back->Find("a")->is_scalar());
  CHECK(back->Find("a")->scalar.empty());
  CHECK(back->Find("b")->scalar == "null");
  CHECK(back->Find("c")->scalar == "-3");
  CHECK(back->Find("d")->scalar == "say \"hi\": now\nok");
  CHECK(back->Find("e")->seq.size() == 3);
  CHECK(back->Find("e")->seq[1].Find("x")->scalar == "a b");
  CHECK(back->Find("e")->seq[2].is_null());
  CHECK(back->Find("f")->is_map());
  CHECK(back->Find("g")->scalar == "h\u00e9llo");
  CHECK(back->Find("cache.attn_pack_size")->scalar == "16GiB");
  // The sweep identity is computed from the tree, so a resolved file hashes the same.
  CHECK(IdentifySweep(back.value(), 1).id == IdentifySweep(tree.value(), 1).id);
}

}  // namespace
}  // namespace kvsim
