// PlanModel: the Plan panel's knobs re-run the planner; bad combinations become readable
// errors and the last good plan is kept.
#include "viz/plan_model.h"

#include <catch2/catch_test_macros.hpp>

namespace kvsim::viz {
namespace {

PlanModel LoadDefault(std::vector<std::string> overrides = {}) {
  auto m = PlanModel::Load("", overrides);
  REQUIRE(m.ok());
  return std::move(m.value());
}

TEST_CASE("default scenario knobs come from the scenario and plan like kvsim layout") {
  PlanModel m = LoadDefault();
  CHECK(m.ok());
  CHECK(m.knobs().model_preset == "qwen3.5-35b-a3b");
  CHECK(m.knobs().tp == 2);
  CHECK(m.knobs().attn_pack_size == 1);
  CHECK(m.knobs().layout == LayoutChoice::kNhd);
  REQUIRE(m.has_plan());
  // Reference §4.2 / §7.1: hybrid Qwen3.5 attention block 1056 at pack 1.
  CHECK(m.plan().attn_block_size == 1056);
  CHECK(m.EquivalentCommand() == "kvsim layout");
}

TEST_CASE("changing a knob re-plans; unchanged knobs do not") {
  PlanModel m = LoadDefault();
  const int64_t before = m.replans();
  CHECK_FALSE(m.ReplanIfChanged());
  CHECK(m.replans() == before);
  m.mutable_knobs().attn_pack_size = 4;
  CHECK(m.ReplanIfChanged());
  CHECK(m.ok());
  // PR #35703 with pack 4: the attention block drops to 272 tokens.
  CHECK(m.plan().attn_block_size == 272);
  CHECK(m.plan().config.attn_pack_size == 4);
  CHECK(m.OverridesFor(m.knobs()) == std::vector<std::string>{"cache.attn_pack_size=4"});
  CHECK(m.EquivalentCommand() == "kvsim layout --set cache.attn_pack_size=4");
  m.mutable_knobs().layout = LayoutChoice::kHnd;
  CHECK(m.ReplanIfChanged());
  CHECK(m.plan().config.layout == KvOrder::kLBHNC);
  m.mutable_knobs().layout = LayoutChoice::kCrossLayerNhd;
  CHECK(m.ReplanIfChanged());
  CHECK(m.plan().cross_layer);
}

TEST_CASE("a planner error is text, and the last good plan stays (stale)") {
  PlanModel m = LoadDefault();
  m.mutable_knobs().tp = 3;  // does not divide the heads
  CHECK(m.ReplanIfChanged());
  CHECK_FALSE(m.ok());
  CHECK_FALSE(m.error().empty());
  REQUIRE(m.has_plan());
  CHECK(m.stale());
  CHECK(m.plan().attn_block_size == 1056);
  CHECK(m.plan().config.tp == 2);
  // Back to a good value: the error clears.
  m.mutable_knobs().tp = 2;
  CHECK(m.ReplanIfChanged());
  CHECK(m.ok());
  CHECK_FALSE(m.stale());
}

TEST_CASE("pack size on an attention-only model is refused with the planner's reason") {
  PlanModel m = LoadDefault();
  m.mutable_knobs().model_preset = "llama-3.1-8b";
  m.mutable_knobs().tp = 1;
  m.ReplanIfChanged();
  REQUIRE(m.ok());
  CHECK(m.plan().attn_block_size == 16);
  m.mutable_knobs().attn_pack_size = 4;
  m.ReplanIfChanged();
  CHECK_FALSE(m.ok());
  CHECK(m.error().find("hybrid") != std::string::npos);
}

TEST_CASE("the draft knob adds or removes the preset's draft model") {
  PlanModel m = LoadDefault({"model.preset=mimo-style", "parallel.tp=4"});
  REQUIRE(m.ok());
  CHECK(m.model_has_draft());
  CHECK(m.knobs().draft);
  auto has_layer = [&](const std::string& name) {
    for (const auto& l : m.plan().layers) {
      if (l.name == name) return true;
    }
    return false;
  };
  CHECK(has_layer("D1"));
  // The draft page (8192 B) is padded to the target's 12288 B (reference §8.3).
  CHECK(m.plan().page_bytes == 12288);
  m.mutable_knobs().draft = false;
  m.ReplanIfChanged();
  REQUIRE(m.ok());
  CHECK_FALSE(has_layer("D1"));
  CHECK(m.plan().padding_fraction() == 0.0);
}

TEST_CASE("a bad scenario fails to load with the loader's message") {
  auto m = PlanModel::Load("", {"parallel.tp=abc"});
  REQUIRE_FALSE(m.ok());
  CHECK(m.status().message().find("parallel.tp") != std::string::npos);
}

}  // namespace
}  // namespace kvsim::viz

namespace kvsim::viz {
namespace {

TEST_CASE("P/D scenario: each pool plans with its own TP, block size and layout") {
  const std::string path = std::string(KVSIM_SOURCE_DIR) + "/scenarios/pd_nhd64_tp4_hnd16_tp2.yaml";
  auto base = PlanModel::Load(path, {});
  REQUIRE(base.ok());
  CHECK(base->has_cluster());
  auto prefill = PlanModel::Load(path, {}, "prefill");
  auto decode = PlanModel::Load(path, {}, "decode");
  REQUIRE(prefill.ok());
  REQUIRE(decode.ok());
  REQUIRE(prefill->ok());
  REQUIRE(decode->ok());
  CHECK(prefill->plan().attn_block_size == 64);
  CHECK(prefill->plan().config.tp == 4);
  CHECK(prefill->plan().config.layout == KvOrder::kLBNHC);
  CHECK(decode->plan().attn_block_size == 16);
  CHECK(decode->plan().config.tp == 2);
  CHECK(decode->plan().config.layout == KvOrder::kLBHNC);
  // A knob edit on a pool becomes an override of that pool's section.
  decode->mutable_knobs().block_size = 32;
  decode->ReplanIfChanged();
  REQUIRE(decode->ok());
  CHECK(decode->plan().attn_block_size == 32);
  CHECK(decode->OverridesFor(decode->knobs()) ==
        std::vector<std::string>{"cluster.decode.cache.block_size=32"});
  CHECK(prefill->plan_stamp() != decode->plan_stamp());
  // A scenario without pools has none to pick.
  CHECK_FALSE(PlanModel::Load("", {}, "decode").ok());
  CHECK_FALSE(PlanModel::Load(path, {}, "middle").ok());
}

}  // namespace
}  // namespace kvsim::viz
