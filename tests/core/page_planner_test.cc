// The page planner against the worked examples of the vLLM reference (§4.4, §8.20).
#include <catch2/catch_test_macros.hpp>

#include "core/page_planner.h"

namespace kvsim {
namespace {

// A Qwen3.5/Qwen3-Next-shaped hybrid: `repeat` × (3 GDN + 1 full attention).
ModelSpec QwenHybrid(int64_t repeat, int64_t v_heads, DType ssm) {
  ModelSpec m;
  m.dtype = DType::kBFloat16;
  m.max_model_len = 262144;
  LayerSpec gdn;
  gdn.kind = LayerKind::kMamba;
  gdn.mamba.mixer = MambaMixer::kGatedDeltaNet;
  gdn.mamba.conv_kernel = 4;
  gdn.mamba.num_k_heads = 16;
  gdn.mamba.num_v_heads = v_heads;
  gdn.mamba.head_k_dim = 128;
  gdn.mamba.head_v_dim = 128;
  gdn.mamba.ssm_dtype = ssm;
  LayerSpec full;
  full.kind = LayerKind::kFullAttention;
  full.num_kv_heads = 2;
  full.head_size = 256;
  for (int64_t r = 0; r < repeat; ++r) {
    m.layers.push_back(gdn);
    m.layers.push_back(gdn);
    m.layers.push_back(gdn);
    m.layers.push_back(full);
  }
  return m;
}

int64_t AttnBlock(const ModelSpec& m, int64_t tp, int64_t pack) {
  PlannerConfig c;
  c.tp = tp;
  c.attn_pack_size = pack;
  c.kv_memory_bytes = 40LL << 30;
  auto plan = PlanKvCache(m, nullptr, c);
  REQUIRE(plan.ok());
  return plan->attn_block_size;
}

TEST_CASE("Qwen3.5-397B attention block sizes (reference 4.4)") {
  const ModelSpec m = QwenHybrid(15, 64, DType::kFloat32);
  CHECK(AttnBlock(m, 1, 1) == 2096);
  CHECK(AttnBlock(m, 2, 1) == 2096);
  CHECK(AttnBlock(m, 4, 1) == 1056);
  CHECK(AttnBlock(m, 8, 1) == 528);
  CHECK(AttnBlock(m, 2, 2) == 1056);
  CHECK(AttnBlock(m, 2, 4) == 528);
}

TEST_CASE("Qwen3-Next-80B attention block sizes (reference 4.4)") {
  const ModelSpec m = QwenHybrid(12, 32, DType::kAuto);
  CHECK(AttnBlock(m, 1, 1) == 544);
  CHECK(AttnBlock(m, 2, 1) == 544);
  CHECK(AttnBlock(m, 4, 1) == 272);
  CHECK(AttnBlock(m, 8, 1) == 144);
  CHECK(AttnBlock(m, 1, 2) == 272);
  CHECK(AttnBlock(m, 1, 4) == 144);
}

}  // namespace
}  // namespace kvsim
