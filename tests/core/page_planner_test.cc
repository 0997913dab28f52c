// The page planner against the worked examples of the vLLM reference
// (shared/reference/vllm-kv-semantics.md): §3.2/§3.3 grouping and num_blocks, §4.3 kernel
// blocks, §4.4 the Qwen3-Next / Qwen3.5 table, §8.4–8.6 hybrid configs, §8.11 attention packs,
// §8.18 capacity, §8.20 hybrid block sizes. Every number below is the reference's; the test
// names say which paragraph it comes from.
#include <catch2/catch_test_macros.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "core/page_planner.h"

namespace kvsim {
namespace {

using Names = std::vector<std::string>;

// ---------------------------------------------------------------------------------------
// Model builders. Specs in §8 use the vLLM test defaults: FullAttention(B16, H2, D64, fp32)
// (page 16384) and Mamba(shapes ((2,512),(3,32,32)), fp32) (page 16384). TP is 1, so the
// model-level head count is the per-rank one.

LayerSpec Full(int64_t heads, int64_t d, DType dt = DType::kAuto) {
  LayerSpec l;
  l.kind = LayerKind::kFullAttention;
  l.num_kv_heads = heads;
  l.head_size = d;
  l.dtype = dt;
  return l;
}

LayerSpec Swa(int64_t heads, int64_t d, int64_t window, DType dt = DType::kAuto) {
  LayerSpec l = Full(heads, d, dt);
  l.kind = LayerKind::kSlidingWindow;
  l.sliding_window = window;
  return l;
}

LayerSpec Mamba(std::vector<MambaState> states) {
  LayerSpec l;
  l.kind = LayerKind::kMamba;
  l.mamba.mixer = MambaMixer::kExplicit;
  l.mamba.explicit_states = std::move(states);
  return l;
}

// The vLLM test Mamba spec: 4096 + 12288 = 16384 B.
LayerSpec Mamba16() {
  return Mamba({{"conv", {2, 512}, DType::kFloat32}, {"ssm", {3, 32, 32}, DType::kFloat32}});
}

ModelSpec Model(std::vector<LayerSpec> layers, DType dtype = DType::kFloat32) {
  ModelSpec m;
  m.name = "test";
  m.dtype = dtype;
  m.layers = std::move(layers);
  return m;
}

std::vector<LayerSpec> Repeat(const LayerSpec& l, int n) { return std::vector<LayerSpec>(n, l); }

std::vector<LayerSpec> Concat(std::vector<LayerSpec> a, const std::vector<LayerSpec>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

PlannerConfig Config(int64_t kv_memory_bytes) {
  PlannerConfig c;
  c.kv_memory_bytes = kv_memory_bytes;
  return c;
}

KvCachePlan MustPlan(const ModelSpec& m, const PlannerConfig& c, const ModelSpec* draft = nullptr) {
  auto plan = PlanKvCache(m, draft, c);
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  return plan.value();
}

Names LayerNames(const KvCachePlan& p, const std::vector<int>& idx) {
  Names out;
  for (int i : idx) out.push_back(p.layers[i].name);
  return out;
}

std::vector<Names> GroupLayers(const KvCachePlan& p) {
  std::vector<Names> out;
  for (const auto& g : p.groups) out.push_back(LayerNames(p, g.layers));
  return out;
}

std::vector<Names> TensorLayers(const KvCachePlan& p) {
  std::vector<Names> out;
  for (const auto& t : p.tensors) out.push_back(LayerNames(p, t.shared_by));
  return out;
}

int LayerIndex(const KvCachePlan& p, const std::string& name) {
  for (size_t i = 0; i < p.layers.size(); ++i) {
    if (p.layers[i].name == name) return static_cast<int>(i);
  }
  FAIL("no layer " << name);
  return -1;
}

// Every tensor's size is page × num_blocks, and every slot's layers see one page size.
void CheckTensorsConsistent(const KvCachePlan& p) {
  for (const auto& t : p.tensors) {
    REQUIRE(!t.shared_by.empty());
    if (p.cross_layer) {
      CHECK(t.size_bytes == p.block_bytes * p.num_blocks);
      continue;
    }
    for (int li : t.shared_by) {
      CHECK(t.size_bytes == p.layers[li].spec.page_bytes() * p.num_blocks);
    }
  }
  int64_t per_block = 0;
  for (const auto& t : p.tensors) per_block += t.size_bytes / p.num_blocks;
  if (!p.cross_layer) CHECK(per_block == p.block_bytes);
}

// ---------------------------------------------------------------------------------------
// Qwen3-Next / Qwen3.5 (reference §4.4): `repeat` × (3 GDN + 1 full attention).

ModelSpec QwenHybrid(int64_t repeat, int64_t v_heads, DType ssm) {
  ModelSpec m;
  m.name = "qwen";
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
  const LayerSpec full = Full(2, 256);
  for (int64_t r = 0; r < repeat; ++r) {
    m.layers.push_back(gdn);
    m.layers.push_back(gdn);
    m.layers.push_back(gdn);
    m.layers.push_back(full);
  }
  return m;
}

ModelSpec Qwen3Next() { return QwenHybrid(12, 32, DType::kAuto); }
ModelSpec Qwen35_397B() { return QwenHybrid(15, 64, DType::kFloat32); }
ModelSpec Qwen35_35B() { return QwenHybrid(10, 32, DType::kFloat32); }

KvCachePlan QwenPlan(const ModelSpec& m, int64_t tp, int64_t pack = 1) {
  PlannerConfig c = Config(40LL << 30);
  c.tp = tp;
  c.attn_pack_size = pack;
  return MustPlan(m, c);
}

struct TableRow {
  const char* model;
  int64_t tp, conv, ssm, m, a1, m_over_a1, b_attn, attn_page, pad_centi_pct, pack2, pack4;
};

// The whole table of §4.4, column by column.
const TableRow kTable[] = {
    {"qwen3-next", 1, 49152, 1048576, 1097728, 2048, 536, 544, 1114112, 149, 272, 144},
    {"qwen3-next", 2, 24576, 524288, 548864, 1024, 536, 544, 557056, 149, 272, 144},
    {"qwen3-next", 4, 12288, 262144, 274432, 1024, 268, 272, 278528, 149, 144, 80},
    {"qwen3-next", 8, 6144, 131072, 137216, 1024, 134, 144, 147456, 746, 80, 48},
    {"qwen3.5-397b", 1, 73728, 4194304, 4268032, 2048, 2084, 2096, 4292608, 58, 1056, 528},
    {"qwen3.5-397b", 2, 36864, 2097152, 2134016, 1024, 2084, 2096, 2146304, 58, 1056, 528},
    {"qwen3.5-397b", 4, 18432, 1048576, 1067008, 1024, 1042, 1056, 1081344, 134, 528, 272},
    {"qwen3.5-397b", 8, 9216, 524288, 533504, 1024, 521, 528, 540672, 134, 272, 144},
    {"qwen3.5-35b", 1, 49152, 2097152, 2146304, 2048, 1048, 1056, 2162688, 76, 528, 272},
    {"qwen3.5-35b", 2, 24576, 1048576, 1073152, 1024, 1048, 1056, 1081344, 76, 528, 272},
    {"qwen3.5-35b", 4, 12288, 524288, 536576, 1024, 524, 528, 540672, 76, 272, 144},
};

ModelSpec TableModel(const std::string& name) {
  if (name == "qwen3-next") return Qwen3Next();
  if (name == "qwen3.5-397b") return Qwen35_397B();
  return Qwen35_35B();
}

TEST_CASE("§4.4 table: conv, SSM, M, a1, B_attn, padded page, pad %, pack 2 and 4") {
  for (const TableRow& row : kTable) {
    INFO(row.model << " TP " << row.tp);
    const ModelSpec m = TableModel(row.model);
    // conv and SSM bytes per rank, straight from the layer spec.
    auto gdn = m.layers[0].ToKvCacheSpec(row.tp, 16, DType::kAuto, m.dtype, 0);
    REQUIRE(gdn.ok());
    REQUIRE(gdn->mamba_states.size() == 2);
    CHECK(gdn->mamba_states[0].name == "conv");
    CHECK(gdn->mamba_states[0].bytes() == row.conv);
    CHECK(gdn->mamba_states[1].bytes() == row.ssm);

    const KvCachePlan p = QwenPlan(m, row.tp);
    CHECK(p.mamba_real_page_bytes == row.m);
    CHECK(p.attn_token_bytes == row.a1);
    CHECK(row.m % row.a1 == 0);
    CHECK(p.mamba_real_page_bytes / p.attn_token_bytes == row.m_over_a1);
    CHECK(p.attn_block_size == row.b_attn);
    CHECK(p.mamba_block_size == row.b_attn);  // 'align' mode: the Mamba block is the attn block
    CHECK(p.mamba_mode == MambaCacheMode::kAlign);
    CHECK(p.mamba_padded_page_bytes == row.attn_page);
    CHECK(p.page_bytes == row.attn_page);
    const double pad_pct = 100.0 * static_cast<double>(row.attn_page - row.m) /
                           static_cast<double>(row.m);
    CHECK(std::lround(pad_pct * 100) == row.pad_centi_pct);
    // Every group sees the same page; attention pages are unpadded, Mamba pages padded.
    for (const auto& g : p.groups) {
      CHECK(g.page_bytes == row.attn_page);
      CHECK(g.block_size == row.b_attn);
      CHECK(g.real_page_bytes == (g.kind == LayerKind::kMamba ? row.m : row.attn_page));
    }
    CHECK(QwenPlan(m, row.tp, 2).attn_block_size == row.pack2);
    CHECK(QwenPlan(m, row.tp, 4).attn_block_size == row.pack4);
  }
}

TEST_CASE("§4.4 reproduction of 2096: MTP=1 keeps 2096, MTP=2 gives 2112, fp8 KV gives 4176") {
  const ModelSpec m = Qwen35_397B();
  PlannerConfig c = Config(40LL << 30);
  c.tp = 2;
  {
    const KvCachePlan p = MustPlan(m, c);
    CHECK(p.attn_block_size == 2096);
    CHECK(p.attn_token_bytes == 1024);
    CHECK(p.mamba_real_page_bytes == 2134016);
    CHECK(p.mamba_padded_page_bytes - p.mamba_real_page_bytes == 12288);
  }
  {
    c.num_speculative_tokens = 1;  // conv state gains a row: 4 × 6144 × 2 B
    auto gdn = m.layers[0].ToKvCacheSpec(2, 16, DType::kAuto, m.dtype, 1);
    REQUIRE(gdn.ok());
    CHECK(gdn->mamba_states[0].shape == std::vector<int64_t>{4, 6144});
    CHECK(gdn->num_speculative_blocks == 1);
    const KvCachePlan p = MustPlan(m, c);
    CHECK(p.mamba_real_page_bytes == 2146304);
    CHECK(p.attn_block_size == 2096);
    CHECK(p.mamba_padded_page_bytes == 0);  // 2096 × 1024 == M exactly: no padding
    CHECK(p.page_bytes == 2146304);
  }
  {
    c.num_speculative_tokens = 2;
    CHECK(MustPlan(m, c).attn_block_size == 2112);
  }
  {
    c.num_speculative_tokens = 0;
    c.kv_dtype = DType::kFp8;
    const KvCachePlan p = MustPlan(m, c);
    CHECK(p.attn_token_bytes == 512);
    CHECK(p.attn_block_size == 4176);
  }
}

TEST_CASE("§8.20 hybrid attention block sizes") {
  const ModelSpec next = Qwen3Next();
  CHECK(QwenPlan(next, 1).attn_block_size == 544);
  CHECK(QwenPlan(next, 2).attn_block_size == 544);
  CHECK(QwenPlan(next, 4).attn_block_size == 272);
  CHECK(QwenPlan(next, 8).attn_block_size == 144);
  const ModelSpec big = Qwen35_397B();
  CHECK(QwenPlan(big, 1).attn_block_size == 2096);
  CHECK(QwenPlan(big, 2).attn_block_size == 2096);
  CHECK(QwenPlan(big, 4).attn_block_size == 1056);
  CHECK(QwenPlan(big, 8).attn_block_size == 528);
  const ModelSpec small = Qwen35_35B();
  CHECK(QwenPlan(small, 1).attn_block_size == 1056);
  CHECK(QwenPlan(small, 1, 4).attn_block_size == 272);
  const KvCachePlan p = QwenPlan(next, 1);
  CHECK(p.mamba_real_page_bytes == 1097728);
  CHECK(p.mamba_padded_page_bytes == 1114112);
}

TEST_CASE("§4.4 bf16 SSM for the 397B would give 1072 at TP2 (§9 caveat)") {
  PlannerConfig c = Config(40LL << 30);
  c.tp = 2;
  const KvCachePlan p = MustPlan(QwenHybrid(15, 64, DType::kAuto), c);
  CHECK(p.mamba_real_page_bytes == 1085440);
  CHECK(p.attn_block_size == 1072);
}

TEST_CASE("§4.2 a user block size is raised to B_attn, never lowered, and aligns the result") {
  const ModelSpec m = Qwen3Next();
  PlannerConfig c = Config(40LL << 30);
  c.block_size = 64;  // align = max(16, 64): 64 × cdiv(M, 64 × a1)
  CHECK(MustPlan(m, c).attn_block_size == 576);
  c.block_size = 1024;  // already covers M: kept
  const KvCachePlan p = MustPlan(m, c);
  CHECK(p.attn_block_size == 1024);
  CHECK(p.mamba_padded_page_bytes == 1024 * 2048);
}

TEST_CASE("§4.1 mamba cache modes: GDN downgrades 'all' to 'align'; no prefix caching → 'none'") {
  const ModelSpec m = Qwen3Next();
  PlannerConfig c = Config(40LL << 30);
  c.mamba_cache_mode = MambaCacheMode::kAll;
  KvCachePlan p = MustPlan(m, c);
  CHECK(p.mamba_mode == MambaCacheMode::kAlign);
  CHECK(p.attn_block_size == 544);
  CHECK_FALSE(p.warnings.empty());

  c.mamba_cache_mode = MambaCacheMode::kAlign;
  c.enable_prefix_caching = false;
  p = MustPlan(m, c);
  CHECK(p.mamba_mode == MambaCacheMode::kNone);
  CHECK(p.attn_block_size == 544);  // 'none' gives the same attention block (§4.4)
  CHECK(p.mamba_block_size == 262144);  // one state block spans max_model_len

  ModelSpec no_len = m;
  no_len.max_model_len = 0;
  auto bad = PlanKvCache(no_len, nullptr, c);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("max_model_len") != std::string::npos);
}

TEST_CASE("§4.1/4.2 'all' mode on a Mamba2 model aligns B_attn to lcm(chunk, align)") {
  LayerSpec m2;
  m2.kind = LayerKind::kMamba;
  m2.mamba.mixer = MambaMixer::kMamba2;
  m2.mamba.supports_all_mode = true;
  m2.mamba.intermediate_size = 4096;
  m2.mamba.state_size = 128;
  m2.mamba.n_groups = 8;
  m2.mamba.num_heads = 64;
  m2.mamba.head_dim = 64;
  m2.mamba.chunk_size = 256;
  ModelSpec m = Model(Concat(Repeat(m2, 3), {Full(8, 128)}), DType::kBFloat16);
  m.max_model_len = 8192;
  PlannerConfig c = Config(8LL << 30);
  c.mamba_cache_mode = MambaCacheMode::kAll;
  const KvCachePlan p = MustPlan(m, c);
  // conv (3, 4096 + 2·8·128) bf16 = 36864; ssm (64, 64, 128) bf16 = 1048576.
  CHECK(p.mamba_real_page_bytes == 36864 + 1048576);
  CHECK(p.attn_token_bytes == 8 * 256 * 2);
  // chunk = lcm(256, 16) = 256; B = 256 × cdiv(cdiv(M, a1), 256) = 256 × cdiv(265, 256) = 512
  CHECK(p.mamba_mode == MambaCacheMode::kAll);
  CHECK(p.attn_block_size == 512);
  CHECK(p.mamba_block_size == 512);
  // 'align' on the same model: 16 × cdiv(M, 16 × a1) = 16 × 17 = 272
  c.mamba_cache_mode = MambaCacheMode::kAlign;
  CHECK(MustPlan(m, c).attn_block_size == 272);
}

TEST_CASE("§3.2 Qwen3-Next groups: 3 Mamba groups of every 3rd GDN layer + 1 attention group") {
  const KvCachePlan p = QwenPlan(Qwen3Next(), 1);
  CHECK(p.shape == PlanShape::kHybrid);
  REQUIRE(p.groups.size() == 4);
  CHECK(p.group_size == 12);
  // Buckets keep first-appearance order: GDN (L1) before full attention (L4).
  CHECK(p.groups[0].kind == LayerKind::kMamba);
  CHECK(p.groups[1].kind == LayerKind::kMamba);
  CHECK(p.groups[2].kind == LayerKind::kMamba);
  CHECK(p.groups[3].kind == LayerKind::kFullAttention);
  Names g0, g1, g3;
  for (int r = 0; r < 12; ++r) {
    g0.push_back("L" + std::to_string(4 * r + 1));
    g1.push_back("L" + std::to_string(4 * r + 2));
    g3.push_back("L" + std::to_string(4 * r + 4));
  }
  CHECK(GroupLayers(p)[0] == g0);
  CHECK(GroupLayers(p)[1] == g1);
  CHECK(GroupLayers(p)[3] == g3);
  REQUIRE(p.tensors.size() == 12);
  CHECK(TensorLayers(p)[0] == Names{"L1", "L2", "L3", "L4"});
  CHECK(TensorLayers(p)[11] == Names{"L45", "L46", "L47", "L48"});
  CheckTensorsConsistent(p);
}

TEST_CASE("§3.3 Qwen3-Next TP1 with 40 GiB: num_blocks = 42949672960 // 1114112 // 12 = 3212") {
  const KvCachePlan p = QwenPlan(Qwen3Next(), 1);
  CHECK(p.page_bytes == 1114112);
  CHECK(p.group_size == 12);
  CHECK(p.block_bytes == 12 * 1114112);
  CHECK(p.num_blocks == 3212);
  CHECK(p.usable_blocks() == 3211);
  for (const auto& t : p.tensors) CHECK(t.size_bytes == 1114112LL * 3212);
}

TEST_CASE("§3.2 Qwen3-Next + one MTP layer: 13 full + 36 GDN, group_size 13, padded slot") {
  const ModelSpec m = Qwen3Next();
  ModelSpec mtp = Model({Full(2, 256)}, DType::kBFloat16);
  mtp.name = "mtp";
  PlannerConfig c = Config(40LL << 30);
  c.num_speculative_tokens = 1;
  const KvCachePlan p = MustPlan(m, c, &mtp);
  CHECK(p.group_size == 13);
  REQUIRE(p.groups.size() == 4);
  for (int g = 0; g < 3; ++g) CHECK(p.groups[g].layers.size() == 12);
  CHECK(p.groups[3].layers.size() == 13);
  CHECK(LayerNames(p, p.groups[3].layers).back() == "D1");
  REQUIRE(p.tensors.size() == 13);
  CHECK(TensorLayers(p)[12] == Names{"D1"});  // the 13th slot of each Mamba group is padding
  CHECK(p.block_bytes == 13 * p.page_bytes);
  CheckTensorsConsistent(p);
}

TEST_CASE("§4.3 kernel block selection") {
  CHECK(SelectKernelBlockSize(2096, AttentionBackend::kFlashInfer) == 16);
  CHECK(SelectKernelBlockSize(544, AttentionBackend::kFlashInfer) == 32);
  CHECK(SelectKernelBlockSize(1056, AttentionBackend::kFlashInfer) == 32);
  CHECK(SelectKernelBlockSize(64, AttentionBackend::kFlashInfer) == 64);
  CHECK(SelectKernelBlockSize(16, AttentionBackend::kFlashInfer) == 16);
  CHECK(SelectKernelBlockSize(24, AttentionBackend::kFlashInfer) == 0);
  CHECK(SelectKernelBlockSize(2096, AttentionBackend::kFlashAttn) == 2096);
  CHECK(SelectKernelBlockSize(2096, AttentionBackend::kTriton) == 2096);
  CHECK(SelectKernelBlockSize(24, AttentionBackend::kFlashAttn) == 0);

  PlannerConfig c = Config(40LL << 30);
  c.backend = AttentionBackend::kFlashInfer;
  c.tp = 2;
  const KvCachePlan p = MustPlan(Qwen35_397B(), c);
  CHECK(p.attn_block_size == 2096);
  CHECK(p.kernel_block_size == 16);
  const int attn = p.groups.back().layers[0];
  const KvLayout l = p.LayoutForLayer(attn);
  CHECK(l.kernel_split == 131);
  CHECK(l.block_tokens == 16);
  CHECK(l.num_blocks == p.num_blocks * 131);
  CHECK(l.manager_page_bytes() == p.page_bytes);
  // Mamba groups are never split.
  CHECK(p.LayoutForLayer(p.groups[0].layers[0]).kernel_split == 1);
}

TEST_CASE("§8.4 hybrid config with padding: Full D64 padded to the SWA D96 page") {
  const ModelSpec m = Model({Full(2, 64), Swa(2, 96, 1)});
  const KvCachePlan p = MustPlan(m, Config(16384 * 2 * 32));
  CHECK(p.shape == PlanShape::kHybrid);
  CHECK(p.num_blocks == 42);
  REQUIRE(p.tensors.size() == 1);
  CHECK(p.tensors[0].size_bytes == 24576 * 42);
  CHECK(TensorLayers(p)[0] == Names{"L1", "L2"});
  REQUIRE(p.groups.size() == 2);
  CHECK(GroupLayers(p) == std::vector<Names>{{"L1"}, {"L2"}});
  CHECK(p.groups[0].kind == LayerKind::kFullAttention);
  CHECK(p.groups[0].spec.page_size_padded == 24576);
  CHECK(p.groups[0].spec.block_size == 16);
  CHECK(p.groups[0].real_page_bytes == 16384);
  CHECK(p.groups[0].page_bytes == 24576);
  CHECK(p.groups[1].kind == LayerKind::kSlidingWindow);
  CHECK(p.groups[1].spec.page_size_padded == 0);
  CHECK(p.padding_bytes_per_block(0) == 8192);
  CHECK(p.padding_bytes_per_block(1) == 0);
  CheckTensorsConsistent(p);

  PlannerConfig classic = Config(16384 * 2 * 32);
  classic.semantics = VllmSemantics::kClassic;
  auto bad = PlanKvCache(m, nullptr, classic);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == "page_size_not_divisible");
}

TEST_CASE("§8.5 block-size bump: SWA D32 gets block 32 to match the Full D64 page") {
  const ModelSpec m = Model({Full(2, 64), Swa(2, 32, 1)});
  for (VllmSemantics sem : {VllmSemantics::kLatest, VllmSemantics::kClassic}) {
    PlannerConfig c = Config(16384 * 32);
    c.semantics = sem;
    const KvCachePlan p = MustPlan(m, c);
    CHECK(p.num_blocks == 32);
    REQUIRE(p.tensors.size() == 1);
    CHECK(p.tensors[0].size_bytes == 16384 * 32);
    CHECK(TensorLayers(p)[0] == Names{"L1", "L2"});
    REQUIRE(p.groups.size() == 2);
    CHECK(p.groups[0].block_size == 16);
    CHECK(p.groups[1].kind == LayerKind::kSlidingWindow);
    CHECK(p.groups[1].block_size == 32);
    CHECK(p.groups[1].spec.page_size_padded == 0);
    CHECK(p.groups[1].real_page_bytes == 16384);
    CheckTensorsConsistent(p);
  }
}

TEST_CASE("§8.6 grouping and slot sharing") {
  const LayerSpec full = Full(2, 64);
  const LayerSpec swa = Swa(2, 64, 1);

  SECTION("1 full + 1 SWA") {
    const KvCachePlan p = MustPlan(Model({full, swa}), Config(16384 * 2 * 32));
    CHECK(p.num_blocks == 64);
    REQUIRE(p.tensors.size() == 1);
    CHECK(p.tensors[0].size_bytes == 16384 * 64);
    CHECK(TensorLayers(p)[0] == Names{"L1", "L2"});
  }
  SECTION("2 full + 4 SWA") {
    const KvCachePlan p =
        MustPlan(Model(Concat(Repeat(full, 2), Repeat(swa, 4))), Config(16384 * 2 * 32));
    CHECK(p.num_blocks == 32);
    CHECK(GroupLayers(p) == std::vector<Names>{{"L1", "L2"}, {"L3", "L5"}, {"L4", "L6"}});
    CHECK(TensorLayers(p) == std::vector<Names>{{"L1", "L3", "L4"}, {"L2", "L5", "L6"}});
    CheckTensorsConsistent(p);
  }
  SECTION("3 full + 7 SWA") {
    const KvCachePlan p =
        MustPlan(Model(Concat(Repeat(full, 3), Repeat(swa, 7))), Config(16384 * 3 * 32));
    CHECK(p.num_blocks == 32);
    CHECK(p.group_size == 3);
    CHECK(GroupLayers(p) == std::vector<Names>{{"L1", "L2", "L3"},
                                               {"L4", "L7", "L10"},
                                               {"L5", "L8"},
                                               {"L6", "L9"}});
    CHECK(TensorLayers(p) ==
          std::vector<Names>{{"L1", "L4", "L5", "L6"}, {"L2", "L7", "L8", "L9"}, {"L3", "L10"}});
    // Short groups leave their slot's pages unused: that is padding.
    CHECK(p.padding_bytes_per_block(2) == 16384);
    CHECK(p.padding_bytes_per_block(0) == 0);
    CheckTensorsConsistent(p);
  }
  SECTION("6 full + 5 SWA (gpt-oss + EAGLE shape): group_size 6") {
    const KvCachePlan p =
        MustPlan(Model(Concat(Repeat(full, 6), Repeat(swa, 5))), Config(16384 * 6 * 32));
    CHECK(p.num_blocks == 32);
    CHECK(p.group_size == 6);
    CHECK(GroupLayers(p) == std::vector<Names>{{"L1", "L2", "L3", "L4", "L5", "L6"},
                                               {"L7", "L8", "L9", "L10", "L11"}});
    CHECK(TensorLayers(p) == std::vector<Names>{{"L1", "L7"},
                                                {"L2", "L8"},
                                                {"L3", "L9"},
                                                {"L4", "L10"},
                                                {"L5", "L11"},
                                                {"L6"}});
  }
  SECTION("same type, different heads: one UniformTypeKVCacheSpecs group") {
    const KvCachePlan p = MustPlan(Model({Full(2, 128), full}), Config(16384 * 3 * 32));
    CHECK(p.shape == PlanShape::kUniformType);
    REQUIRE(p.groups.size() == 1);
    CHECK(GroupLayers(p)[0] == Names{"L1", "L2"});
    CHECK(p.page_bytes == 32768 + 16384);
    CHECK(p.num_blocks == 32);
    REQUIRE(p.tensors.size() == 2);
    CHECK(p.tensors[0].size_bytes == 32768 * 32);
    CHECK(p.tensors[1].size_bytes == 16384 * 32);
    CheckTensorsConsistent(p);
  }
  SECTION("hybrid manager disabled: SWA promoted to full, one group") {
    PlannerConfig c = Config(16384 * 2 * 32);
    c.hybrid_kv_cache_manager = false;
    const KvCachePlan p = MustPlan(Model({full, swa}), c);
    CHECK(p.shape == PlanShape::kSingleGroup);
    REQUIRE(p.groups.size() == 1);
    CHECK(p.groups[0].kind == LayerKind::kFullAttention);
    CHECK(GroupLayers(p)[0] == Names{"L1", "L2"});
    CHECK(p.num_blocks == 32);
    REQUIRE(p.tensors.size() == 2);
    CHECK(p.tensors[0].size_bytes == 16384 * 32);
    // The window stays on the layer for compute; allocation is full.
    CHECK(p.layers[1].spec.kind == LayerKind::kFullAttention);
    CHECK(p.layers[1].spec.sliding_window == 1);
  }
  SECTION("hybrid manager disabled without any full-attention layer is an error") {
    PlannerConfig c = Config(16384 * 2 * 32);
    c.hybrid_kv_cache_manager = false;
    auto bad = PlanKvCache(Model({swa, Swa(2, 64, 8)}), nullptr, c);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.status().message().find("full-attention") != std::string::npos);
  }
  SECTION("num_gpu_blocks_override = 16") {
    PlannerConfig c = Config(16384 * 2 * 32);
    c.num_gpu_blocks = 16;
    const KvCachePlan p = MustPlan(Model({full, full}), c);
    CHECK(p.shape == PlanShape::kSingleGroup);
    CHECK(p.num_blocks == 16);
    REQUIRE(p.tensors.size() == 2);
    CHECK(p.tensors[0].size_bytes == 16384 * 16);
    CHECK(p.tensors[1].size_bytes == 16384 * 16);
  }
}

TEST_CASE("§3.1 uniform type: same kind and block size, per-layer pages differ") {
  SECTION("MLA and full attention are one type (MLAAttentionSpec is a FullAttentionSpec)") {
    LayerSpec mla;
    mla.kind = LayerKind::kMla;
    mla.head_size = 64;  // 16 × 64 × 4 = 4096 B
    PlannerConfig c = Config(16384 * 10);
    c.block_size = 16;
    const KvCachePlan p = MustPlan(Model({Full(2, 64), mla}), c);
    CHECK(p.shape == PlanShape::kUniformType);
    CHECK(p.page_bytes == 16384 + 4096);
  }
  SECTION("sliding windows of different sizes are different types") {
    const KvCachePlan p = MustPlan(Model({Swa(2, 64, 8), Swa(2, 32, 16)}), Config(16384 * 10));
    CHECK(p.shape == PlanShape::kHybrid);
  }
  SECTION("Mamba layers with different state shapes (same speculative blocks)") {
    const LayerSpec small = Mamba({{"conv", {2, 256}, DType::kFloat32}});
    const KvCachePlan p = MustPlan(Model({Mamba16(), small}), Config(16384 * 10));
    CHECK(p.shape == PlanShape::kUniformType);
    CHECK(p.page_bytes == 16384 + 2048);
    CHECK(p.num_blocks == 16384 * 10 / (16384 + 2048));
  }
}

TEST_CASE("§2 fallback: MLA + SWA that cannot be unified become one uniform-type group") {
  LayerSpec mla;
  mla.kind = LayerKind::kMla;
  mla.head_size = 576;  // 16 × 576 × 2 = 18432 B
  const LayerSpec swa = Swa(8, 128, 128, DType::kBFloat16);  // 16 × 8 × 256 × 2 = 65536 B
  const ModelSpec m = Model({mla, mla, swa}, DType::kBFloat16);
  PlannerConfig c = Config(1 << 26);
  c.block_size = 16;
  // Latest pads the MLA page (the backend opts in): a hybrid plan.
  CHECK(MustPlan(m, c).shape == PlanShape::kHybrid);
  // Classic cannot pad: the SWA layer is allocated as full attention, one group.
  c.semantics = VllmSemantics::kClassic;
  const KvCachePlan p = MustPlan(m, c);
  CHECK(p.shape == PlanShape::kUniformType);
  REQUIRE(p.groups.size() == 1);
  CHECK(p.page_bytes == 2 * 18432 + 65536);
  CHECK(p.layers[2].spec.kind == LayerKind::kFullAttention);
  CHECK(p.layers[2].spec.sliding_window == 128);  // compute stays windowed
  CHECK_FALSE(p.warnings.empty());
}

TEST_CASE("§8.11 attention pack (PR #35703): Full D32 pages, pack 2 = M16") {
  const LayerSpec a32 = Full(2, 32);  // 8192 B per layer
  const int64_t avail = 16384 * 2 * 10;

  SECTION("2 Mamba layers") {
    const KvCachePlan p = MustPlan(Model({Mamba16(), Mamba16()}), Config(avail));
    CHECK(p.num_blocks == 10);
    REQUIRE(p.tensors.size() == 2);
    CHECK(p.tensors[0].size_bytes == 16384 * 10);
    CHECK(p.tensors[1].size_bytes == 16384 * 10);
  }
  SECTION("1 Mamba + 1 Full(D64)") {
    const KvCachePlan p = MustPlan(Model({Mamba16(), Full(2, 64)}), Config(avail));
    CHECK(p.attn_block_size == 16);
    CHECK(p.num_blocks == 20);
    REQUIRE(p.tensors.size() == 1);
    CHECK(TensorLayers(p)[0] == Names{"L1", "L2"});
    CHECK(p.mamba_padded_page_bytes == 0);
  }
  SECTION("pack 2 with 1 Mamba + 2 Full(D32)") {
    PlannerConfig c = Config(avail);
    c.attn_pack_size = 2;
    const KvCachePlan p = MustPlan(Model({Mamba16(), a32, a32}), c);
    CHECK(p.attn_token_bytes == 1024);  // 512 B/token × pack 2
    CHECK(p.attn_block_size == 16);
    CHECK(p.num_blocks == 20);
    REQUIRE(p.tensors.size() == 1);
    CHECK(TensorLayers(p)[0] == Names{"L1", "L2", "L3"});
    CHECK(GroupLayers(p) == std::vector<Names>{{"L1"}, {"L2", "L3"}});
    CHECK(p.groups[0].kind == LayerKind::kMamba);
    CHECK(p.groups[1].spec.pack_size == 2);
    CHECK(p.groups[1].spec.real_page_bytes() == 8192);
    CHECK(p.groups[1].page_bytes == 16384);
    CHECK(p.layers[LayerIndex(p, "L2")].pack_member == 0);
    CHECK(p.layers[LayerIndex(p, "L3")].pack_member == 1);
  }
  SECTION("pack 2 with 2 Mamba + 5 Full(D32): packs L3+L4, L5+L6, L7 (short)") {
    PlannerConfig c = Config(avail);
    c.attn_pack_size = 2;
    const KvCachePlan p = MustPlan(
        Model(Concat({Mamba16(), Mamba16()}, Repeat(a32, 5))), c);
    CHECK(p.group_size == 2);  // 3 pseudo-layers < 1.5 × 2 is false
    CHECK(p.num_blocks == 10);
    CHECK(GroupLayers(p) ==
          std::vector<Names>{{"L1", "L2"}, {"L3", "L4", "L7"}, {"L5", "L6"}});
    CHECK(TensorLayers(p) ==
          std::vector<Names>{{"L1", "L3", "L4", "L5", "L6"}, {"L2", "L7"}});
    const PlannedLayer& l7 = p.layers[LayerIndex(p, "L7")];
    CHECK(l7.spec.pack_size == 2);  // a short pack keeps the pack's page
    CHECK(l7.pack_member == 0);
    CHECK(l7.slot == 1);
    CHECK(p.layers[LayerIndex(p, "L4")].pack_member == 1);
    // The short pack leaves half of its page unused.
    CHECK(p.padding_bytes_per_block(1) == 8192);
    CheckTensorsConsistent(p);
  }
  SECTION("merge_attn_layers_into_pack(2, {L1: Mamba, L2, L3, L4}) → {L1, L2+L3, L4}") {
    PlannerConfig c = Config(avail);
    c.attn_pack_size = 2;
    const KvCachePlan p = MustPlan(Model({Mamba16(), a32, a32, a32}), c);
    CHECK(GroupLayers(p) == std::vector<Names>{{"L1"}, {"L2", "L3"}, {"L4"}});
    CHECK(p.layers[LayerIndex(p, "L4")].spec.pack_size == 2);
    CHECK(p.layers[LayerIndex(p, "L4")].pack_member == 0);
    CHECK(p.layers[LayerIndex(p, "L3")].pack_member == 1);
  }
  SECTION("pack 8 plans, with vLLM's memory-waste warning") {
    PlannerConfig c = Config(avail * 8);
    c.attn_pack_size = 8;
    const KvCachePlan p = MustPlan(Model(Concat({Mamba16()}, Repeat(a32, 9))), c);
    CHECK(p.attn_token_bytes == 512 * 8);
    CHECK_FALSE(p.warnings.empty());
    CHECK(QwenPlan(Qwen35_35B(), 1, 1).warnings.empty());
  }
  SECTION("packs need a hybrid model") {
    PlannerConfig c = Config(avail);
    c.attn_pack_size = 2;
    auto bad = PlanKvCache(Model({a32, a32}), nullptr, c);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.status().message().find("cache.attn_pack_size") != std::string::npos);
  }
}

TEST_CASE("§8.18 capacity: blocks per request and max concurrency") {
  const LayerSpec full = Full(32, 128, DType::kFloat16);
  const LayerSpec swa = Swa(32, 128, 1024, DType::kFloat16);
  auto plan = [](std::vector<LayerSpec> layers, int64_t blocks) {
    ModelSpec m = Model(std::move(layers), DType::kFloat16);
    m.max_model_len = 16384;
    PlannerConfig c;
    c.num_gpu_blocks = blocks;
    c.max_num_batched_tokens = 1024;
    return MustPlan(m, c);
  };
  {
    const KvCachePlan p = plan({full}, 1536);
    CHECK(p.blocks_per_request == 1024);
    CHECK(p.max_concurrency == 1.5);
    CHECK(p.kv_cache_size_tokens == 24576);
  }
  {
    const KvCachePlan p = plan({swa}, 129 * 3);
    CHECK(p.blocks_per_request == 129);  // cdiv(1023 + 1024, 16) + 1
    CHECK(p.max_concurrency == 3.0);
  }
  {
    const KvCachePlan p = plan({full, swa}, (1024 + 129) * 3);
    CHECK(p.blocks_per_request == 1024 + 129);
    CHECK(p.max_concurrency == 3.0);
    CHECK(p.kv_cache_size_tokens == 3 * 16384);
  }
  CHECK(MaxBlocksPerRequest(MustPlan(Model({Mamba16()}), Config(1 << 20)).groups[0].spec, 16384,
                            1024, MambaCacheMode::kAlign) == 2);
}

TEST_CASE("§8.2/§7.2 latest pads a Mamba page below a draft attention page (PR #45207)") {
  // Qwen3-Next TP4 target (page 278528 after alignment) + a drafter with a page 4× the
  // target's attention page: Mamba is re-padded, target attention bumps its block size.
  const ModelSpec m = Qwen3Next();
  ModelSpec draft = Model({Full(8, 256)}, DType::kBFloat16);
  draft.name = "draft";
  PlannerConfig c = Config(40LL << 30);
  c.tp = 1;
  const KvCachePlan p = MustPlan(m, c, &draft);
  const int64_t target_attn = 544 * 2048;
  CHECK(p.page_bytes == 4 * target_attn);
  for (const auto& l : p.layers) CHECK(l.spec.page_bytes() == p.page_bytes);
  const PlannedLayer& l4 = p.layers[LayerIndex(p, "L4")];
  CHECK(l4.spec.block_size == 4 * 544);
  CHECK(l4.spec.page_size_padded == 0);
  const PlannedLayer& l1 = p.layers[LayerIndex(p, "L1")];
  CHECK(l1.spec.block_size == 544);
  CHECK(l1.spec.page_size_padded == 4 * target_attn);

  c.semantics = VllmSemantics::kClassic;
  auto bad = PlanKvCache(m, &draft, c);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == "page_size_not_divisible");
}

TEST_CASE("§8.3 via the planner: a DFlash drafter's page is padded to the target's") {
  ModelSpec target = Model({Full(1, 192), Full(1, 192)}, DType::kBFloat16);
  ModelSpec draft = Model({Swa(1, 128, 1024)}, DType::kBFloat16);
  PlannerConfig c = Config(12288 * 8);  // group_size 1: one slot tensor
  const KvCachePlan p = MustPlan(target, c, &draft);
  const PlannedLayer& d1 = p.layers[LayerIndex(p, "D1")];
  CHECK(d1.is_draft);
  CHECK(d1.spec.block_size == 16);
  CHECK(d1.spec.real_page_bytes() == 8192);
  CHECK(d1.spec.page_size_padded == 12288);
  CHECK(p.layers[0].spec.page_size_padded == 0);
  CHECK(p.num_blocks == 8);

  draft.layers[0].indexes_kv_by_block_stride = false;
  auto bad = PlanKvCache(target, &draft, c);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == "page_size_not_divisible");
  CHECK(bad.status().message().find("D1") != std::string::npos);
  CHECK(bad.status().message().find("L1") != std::string::npos);
}

TEST_CASE("planner rejects impossible configurations with a key path") {
  const ModelSpec m = Model({Full(2, 64)});
  auto expect = [&](PlannerConfig c, const std::string& key) {
    auto bad = PlanKvCache(m, nullptr, c);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.status().message().find(key) != std::string::npos);
  };
  PlannerConfig c = Config(1 << 20);
  c.tp = 0;
  expect(c, "parallel.tp");
  c = Config(1 << 20);
  c.attn_pack_size = 0;
  expect(c, "cache.attn_pack_size");
  c = Config(-1);
  expect(c, "cache.kv_memory_bytes");
  c = Config(0);
  expect(c, "cache.kv_memory_bytes");
  c = Config(1 << 20);
  c.block_size = 24;  // FlashAttention kernels need a multiple of 16
  expect(c, "cache.block_size");
  c = Config(16384);  // one block = the null block only
  auto tiny = PlanKvCache(m, nullptr, c);
  REQUIRE_FALSE(tiny.ok());
  CHECK(tiny.status().code() == "kv_memory_too_small");
}

TEST_CASE("attention-free model: no groups, only the null block") {
  const KvCachePlan p = MustPlan(Model({}), Config(1 << 20));
  CHECK(p.shape == PlanShape::kNoKv);
  CHECK(p.num_blocks == 1);
  CHECK(p.groups.empty());
}

TEST_CASE("MLA: one latent head, block 64 by default, align 128 in hybrids") {
  LayerSpec mla;
  mla.kind = LayerKind::kMla;
  mla.num_kv_heads = 128;  // ignored: MLA keeps one latent per token
  mla.head_size = 576;
  ModelSpec m = Model(Repeat(mla, 61), DType::kBFloat16);
  PlannerConfig c = Config(40LL << 30);
  c.tp = 8;
  const KvCachePlan p = MustPlan(m, c);
  CHECK(p.attn_block_size == 64);
  CHECK(p.page_bytes == 64 * 576 * 2);
  CHECK(p.layers[0].spec.num_kv_heads == 1);
  c.kv_dtype = DType::kFp8DsMla;
  CHECK(MustPlan(m, c).page_bytes == 64 * 656);

  // Hybrid MLA + Mamba: align = max(16, 64, 128) = 128.
  ModelSpec h = Model({Mamba16(), mla}, DType::kBFloat16);
  const KvCachePlan ph = MustPlan(h, Config(40LL << 30));
  CHECK(ph.attn_token_bytes == 1152);
  CHECK(ph.attn_block_size == 128);  // 128 × cdiv(16384, 128 × 1152) = 128
}

TEST_CASE("cross-layer slab (B-first layout): one tensor, per-layer offsets in each block") {
  const LayerSpec full = Full(2, 64);
  const LayerSpec swa = Swa(2, 64, 1);
  PlannerConfig c = Config(16384 * 2 * 32);
  c.layout = KvOrder::kBLNHC;
  const KvCachePlan p = MustPlan(Model(Concat(Repeat(full, 2), Repeat(swa, 4))), c);
  CHECK(p.cross_layer);
  REQUIRE(p.tensors.size() == 1);
  CHECK(p.block_bytes == 2 * 16384);  // max over groups of Σ pages
  CHECK(p.num_blocks == 32);
  CHECK(p.tensors[0].size_bytes == 2 * 16384 * 32);
  // Layers at the same position of different groups share an offset.
  CHECK(p.layers[LayerIndex(p, "L1")].slab_offset == 0);
  CHECK(p.layers[LayerIndex(p, "L2")].slab_offset == 16384);
  CHECK(p.layers[LayerIndex(p, "L3")].slab_offset == 0);
  CHECK(p.layers[LayerIndex(p, "L5")].slab_offset == 16384);
}

}  // namespace
}  // namespace kvsim
