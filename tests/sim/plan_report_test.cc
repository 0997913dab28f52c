// What `kvsim layout` tells a newcomer about a page: byte ranges of Mamba states, padding
// and pack members, and the JSON fields scripts read.
#include <catch2/catch_test_macros.hpp>
#include <nlohmann/json.hpp>

#include <string>

#include "sim/report/plan_report.h"
#include "sim/scenario/scenario_loader.h"

namespace kvsim {
namespace {

struct Loaded {
  Scenario sc;
  KvCachePlan plan;
};

Loaded Load(std::vector<std::string> sets) {
  auto sc = LoadScenario(LoadOptions{"", std::move(sets)});
  REQUIRE(sc.ok());
  auto plan = sc->Plan();
  REQUIRE(plan.ok());
  return {sc.value(), plan.value()};
}

bool Has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST_CASE("page description: Mamba states back to back, padding at the end") {
  const Loaded l = Load({"model.preset=qwen3.5-397b-a17b", "parallel.tp=2"});
  const std::string d = DescribePage(l.plan, 0);  // L1 is a GDN layer
  INFO(d);
  CHECK(Has(d, "2,146,304 B"));
  CHECK(Has(d, "conv 3×6144 bf16 [0, 36,864)"));
  CHECK(Has(d, "ssm 32×128×128 fp32 [36,864, 2,134,016)"));
  CHECK(Has(d, "padding [2,134,016, 2,146,304)"));
}

TEST_CASE("page description: a padded drafter page and pack members") {
  const Loaded mimo = Load({"model.preset=mimo-style", "parallel.tp=4"});
  const std::string d = DescribePage(mimo.plan, static_cast<int>(mimo.plan.layers.size()) - 1);
  INFO(d);
  CHECK(Has(d, "K/V [0, 8,192) | padding [8,192, 12,288)"));

  const Loaded pack = Load({"model.preset=qwen3.5-35b-a3b", "parallel.tp=1",
                            "cache.attn_pack_size=4"});
  const std::string p = DescribePage(pack.plan, 3);  // L4, the first full-attention layer
  INFO(p);
  CHECK(Has(p, "pack member 0 [0, 557,056)"));
  CHECK(Has(p, "pack member 3 [1,671,168, 2,228,224)"));
}

TEST_CASE("plan text and JSON name every group with its pages") {
  const Loaded l = Load({});
  const std::string text = FormatPlan(l.sc, l.plan);
  CHECK(Has(text, "attention block:  1056 tokens"));
  CHECK(Has(text, "groups 0–2 (mamba"));
  const auto j = PlanToJson(l.sc, l.plan);
  CHECK(j["attn_block_size"] == 1056);
  REQUIRE(j["groups"].size() == 4);
  CHECK(j["groups"][0]["kind"] == "mamba");
  CHECK(j["groups"][0]["states"][1]["offset"] == 24576);
  CHECK(j["groups"][3]["kind"] == "full_attention");
  CHECK(j["groups"][3]["real_page_bytes"] == j["groups"][3]["page_bytes"]);
}

}  // namespace
}  // namespace kvsim
