// The shipped model presets and scenarios, loaded the way a user loads them: the numbers of
// reference §4.4/§8.20 from the preset files, every preset at TP 1/2/4/8, and every shipped
// scenario file planning without error.
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "sim/embedded_data.h"
#include "sim/scenario/scenario_loader.h"

namespace kvsim {
namespace {

KvCachePlan PlanPreset(const std::string& preset, int64_t tp, int64_t pack = 1,
                       std::vector<std::string> extra = {}) {
  LoadOptions o;  // the built-in default scenario, with the model swapped
  o.overrides = {"model.preset=" + preset, "parallel.tp=" + std::to_string(tp),
                 "cache.attn_pack_size=" + std::to_string(pack)};
  for (auto& e : extra) o.overrides.push_back(e);
  auto sc = LoadScenario(o);
  INFO(preset << " TP " << tp << ": " << sc.status().ToString());
  REQUIRE(sc.ok());
  auto plan = sc->Plan();
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  return plan.value();
}

TEST_CASE("every preset loads, and the issue's presets are there") {
  const auto names = ModelPresetNames();
  for (const char* want : {"llama-3.1-8b", "llama-3.1-70b", "qwen3-next-80b-a3b",
                           "qwen3.5-35b-a3b", "qwen3.5-397b-a17b", "deepseek-v3", "gpt-oss-120b",
                           "gemma-3-27b", "mimo-style"}) {
    CHECK(std::find(names.begin(), names.end(), want) != names.end());
  }
  for (const auto& n : names) {
    auto m = LoadModelPreset(n);
    INFO(n << ": " << m.status().ToString());
    REQUIRE(m.ok());
    CHECK(m->num_layers() > 0);
    CHECK(m->max_model_len > 0);
  }
}

TEST_CASE("preset layer counts match the models") {
  auto count = [](const std::string& n, LayerKind k) {
    auto m = LoadModelPreset(n);
    REQUIRE(m.ok());
    int c = 0;
    for (const auto& l : m->layers) c += l.kind == k;
    return c;
  };
  CHECK(count("qwen3-next-80b-a3b", LayerKind::kFullAttention) == 12);
  CHECK(count("qwen3-next-80b-a3b", LayerKind::kMamba) == 36);
  CHECK(count("qwen3.5-397b-a17b", LayerKind::kFullAttention) == 15);
  CHECK(count("qwen3.5-397b-a17b", LayerKind::kMamba) == 45);
  CHECK(count("qwen3.5-35b-a3b", LayerKind::kMamba) == 30);
  CHECK(count("llama-3.1-70b", LayerKind::kFullAttention) == 80);
  CHECK(count("deepseek-v3", LayerKind::kMla) == 61);
  CHECK(count("gpt-oss-120b", LayerKind::kSlidingWindow) == 18);
  CHECK(count("gemma-3-27b", LayerKind::kSlidingWindow) == 52);
  CHECK(count("gemma-3-27b", LayerKind::kFullAttention) == 10);
}

TEST_CASE("Qwen3.5-397B-A17B preset: 2096/2096/1056/528 at TP 1/2/4/8, 528 at TP2 pack 4") {
  CHECK(PlanPreset("qwen3.5-397b-a17b", 1).attn_block_size == 2096);
  CHECK(PlanPreset("qwen3.5-397b-a17b", 2).attn_block_size == 2096);
  CHECK(PlanPreset("qwen3.5-397b-a17b", 4).attn_block_size == 1056);
  CHECK(PlanPreset("qwen3.5-397b-a17b", 8).attn_block_size == 528);
  CHECK(PlanPreset("qwen3.5-397b-a17b", 2, 4).attn_block_size == 528);
  const KvCachePlan p = PlanPreset("qwen3.5-397b-a17b", 2);
  CHECK(p.mamba_real_page_bytes == 2134016);
  CHECK(p.mamba_padded_page_bytes == 2146304);
}

TEST_CASE("Qwen3-Next-80B preset at TP 4 plans 272; Qwen3.5-35B at TP1 1056, pack 4 → 272") {
  CHECK(PlanPreset("qwen3-next-80b-a3b", 4).attn_block_size == 272);
  CHECK(PlanPreset("qwen3-next-80b-a3b", 1).attn_block_size == 544);
  CHECK(PlanPreset("qwen3-next-80b-a3b", 8).attn_block_size == 144);
  CHECK(PlanPreset("qwen3.5-35b-a3b", 1).attn_block_size == 1056);
  CHECK(PlanPreset("qwen3.5-35b-a3b", 1, 4).attn_block_size == 272);
}

TEST_CASE("every preset plans at TP 1, 2, 4 and 8") {
  for (const auto& n : ModelPresetNames()) {
    for (int64_t tp : {1, 2, 4, 8}) {
      INFO(n << " TP " << tp);
      const KvCachePlan p = PlanPreset(n, tp);
      // The default scenario's 32 GiB per rank holds as many whole blocks as fit (vLLM's
      // available // page_size // group_size), and the tensors hold exactly those blocks.
      const int64_t budget = 32LL << 30;
      REQUIRE(p.block_bytes > 0);
      CHECK(p.num_blocks == budget / p.block_bytes);
      CHECK(p.total_bytes() == p.num_blocks * p.block_bytes);
      CHECK_FALSE(p.groups.empty());
      for (const auto& l : p.layers) CHECK(l.spec.page_bytes() > 0);
    }
  }
}

TEST_CASE("MiMo-style at TP 4 pads the DFlash-style draft page 8192 → 12288") {
  const KvCachePlan p = PlanPreset("mimo-style", 4);
  int drafts = 0;
  for (const auto& l : p.layers) {
    if (l.is_draft) {
      ++drafts;
      CHECK(l.spec.real_page_bytes() == 8192);
      CHECK(l.spec.page_size_padded == 12288);
      CHECK(l.spec.block_size == 16);
    } else {
      CHECK(l.spec.real_page_bytes() == 12288);
      CHECK(l.spec.page_size_padded == 0);
    }
  }
  CHECK(drafts == 2);
  CHECK(p.page_bytes == 12288);
  // The draft group leaves 4096 B of each of its pages unused.
  const int g = p.layers.back().group;
  CHECK(p.groups[g].real_page_bytes == 8192);
  CHECK(p.groups[g].page_bytes == 12288);
}

TEST_CASE("every shipped scenario loads and plans") {
  int n = 0;
  for (const auto& f : EmbeddedDataFiles()) {
    const std::string path = f.path;
    if (path.rfind("scenarios/", 0) != 0 || path.rfind("scenarios/models/", 0) == 0) continue;
    if (path.rfind("scenarios/hardware/", 0) == 0) continue;  // hardware presets, not scenarios
    if (path.size() < 5 || path.substr(path.size() - 5) != ".yaml") continue;
    auto sc = LoadScenario(LoadOptions{path, {}});
    INFO(path << ": " << sc.status().ToString());
    REQUIRE(sc.ok());
    auto plan = sc->Plan();
    INFO(plan.status().ToString());
    CHECK(plan.ok());
    ++n;
  }
  CHECK(n >= 3);
}

TEST_CASE("shipped scenarios: the MiMo padding study and the Llama-70B baseline") {
  auto mimo = LoadScenario(LoadOptions{"scenarios/mimo_dflash_padding.yaml", {}});
  REQUIRE(mimo.ok());
  CHECK(mimo->cache.tp == 4);
  CHECK(mimo->draft.has_value());
  CHECK(mimo->cache.kv_memory_bytes > 0);
  auto mp = mimo->Plan();
  REQUIRE(mp.ok());
  CHECK(mp->layers.back().spec.page_size_padded == 12288);

  auto llama = LoadScenario(LoadOptions{"scenarios/llama70b_baseline.yaml", {}});
  REQUIRE(llama.ok());
  auto lp = llama->Plan();
  REQUIRE(lp.ok());
  CHECK(lp->shape == PlanShape::kSingleGroup);
  CHECK(lp->page_bytes == 16 * 2 * 256 * 2);  // 2 KV heads per rank at TP 4
  CHECK(lp->num_blocks == (30LL << 30) / (80 * 16384));
}

}  // namespace
}  // namespace kvsim
