// LayerSpec::ToKvCacheSpec: KV heads per rank, MLA, and Mamba state shapes per TP rank
// (reference §1.1, §1.3, §4.4).
#include <catch2/catch_test_macros.hpp>

#include <vector>

#include "core/model_spec.h"

namespace kvsim {
namespace {

LayerSpec Attn(int64_t heads, int64_t d) {
  LayerSpec l;
  l.kind = LayerKind::kFullAttention;
  l.num_kv_heads = heads;
  l.head_size = d;
  return l;
}

KvCacheSpec Must(const LayerSpec& l, int64_t tp, int64_t nspec = 0,
                 DType kv = DType::kAuto, DType model = DType::kBFloat16) {
  auto s = l.ToKvCacheSpec(tp, 16, kv, model, nspec);
  INFO(s.status().ToString());
  REQUIRE(s.ok());
  return s.value();
}

TEST_CASE("§1.1 KV heads per rank: heads / TP, replicated to 1 when TP exceeds them") {
  const LayerSpec l = Attn(8, 128);
  CHECK(Must(l, 1).num_kv_heads == 8);
  CHECK(Must(l, 2).num_kv_heads == 4);
  CHECK(Must(l, 8).num_kv_heads == 1);
  CHECK(Must(l, 16).num_kv_heads == 1);
  CHECK(Must(Attn(2, 256), 4).num_kv_heads == 1);
  CHECK(Must(l, 1).head_size_v == 128);  // Dv defaults to D
}

TEST_CASE("§1.1 KV heads must split evenly over TP (or TP over the heads)") {
  const LayerSpec l = Attn(8, 128);
  auto bad = l.ToKvCacheSpec(3, 16, DType::kAuto, DType::kBFloat16, 0);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == "tp_not_divisible");
  auto bad2 = Attn(2, 256).ToKvCacheSpec(3, 16, DType::kAuto, DType::kBFloat16, 0);
  REQUIRE_FALSE(bad2.ok());
}

TEST_CASE("KV dtype resolution: layer dtype, then cache.kv_dtype, then the model dtype") {
  LayerSpec l = Attn(8, 128);
  CHECK(Must(l, 1).dtype == DType::kBFloat16);
  CHECK(Must(l, 1, 0, DType::kFp8).dtype == DType::kFp8);
  l.dtype = DType::kFloat32;
  CHECK(Must(l, 1, 0, DType::kFp8).dtype == DType::kFloat32);
}

TEST_CASE("MLA keeps one latent head and no V") {
  LayerSpec l;
  l.kind = LayerKind::kMla;
  l.num_kv_heads = 128;
  l.head_size = 576;
  const KvCacheSpec s = Must(l, 8);
  CHECK(s.num_kv_heads == 1);
  CHECK(s.head_size_v == 0);
  CHECK(s.real_page_bytes() == 16 * 576 * 2);
}

LayerSpec Gdn(int64_t v_heads, DType ssm) {
  LayerSpec l;
  l.kind = LayerKind::kMamba;
  l.mamba.mixer = MambaMixer::kGatedDeltaNet;
  l.mamba.conv_kernel = 4;
  l.mamba.num_k_heads = 16;
  l.mamba.num_v_heads = v_heads;
  l.mamba.head_k_dim = 128;
  l.mamba.head_v_dim = 128;
  l.mamba.ssm_dtype = ssm;
  return l;
}

TEST_CASE("§1.3 Gated DeltaNet states per rank: conv (K−1+nspec, (2·kh·kd + vh·vd)/TP)") {
  // Qwen3.5-397B at TP2 (§4.4 reproduction): 6144 channels × 3 rows × 2 B; SSM fp32.
  const KvCacheSpec s = Must(Gdn(64, DType::kFloat32), 2);
  REQUIRE(s.mamba_states.size() == 2);
  CHECK(s.mamba_states[0].shape == std::vector<int64_t>{3, 6144});
  CHECK(s.mamba_states[0].dtype == DType::kBFloat16);
  CHECK(s.mamba_states[0].bytes() == 36864);
  CHECK(s.mamba_states[1].shape == std::vector<int64_t>{32, 128, 128});
  CHECK(s.mamba_states[1].dtype == DType::kFloat32);
  CHECK(s.mamba_states[1].bytes() == 2097152);
  CHECK(s.real_page_bytes() == 2134016);
  // Qwen3-Next: no mamba_ssm_dtype → SSM takes the conv dtype (bf16).
  const KvCacheSpec n = Must(Gdn(32, DType::kAuto), 1);
  CHECK(n.mamba_states[1].dtype == DType::kBFloat16);
  CHECK(n.real_page_bytes() == 1097728);
  // Speculative tokens add conv rows and state blocks.
  const KvCacheSpec mtp = Must(Gdn(64, DType::kFloat32), 2, 2);
  CHECK(mtp.mamba_states[0].shape == std::vector<int64_t>{5, 6144});
  CHECK(mtp.num_speculative_blocks == 2);
}

TEST_CASE("§1.3 GDN TP divisions must be exact") {
  auto bad = Gdn(32, DType::kAuto).ToKvCacheSpec(64, 16, DType::kAuto, DType::kBFloat16, 0);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == "tp_not_divisible");
  auto bad3 = Gdn(32, DType::kAuto).ToKvCacheSpec(3, 16, DType::kAuto, DType::kBFloat16, 0);
  REQUIRE_FALSE(bad3.ok());
}

TEST_CASE("§1.3 Mamba2: groups replicated to TP when G % TP != 0") {
  LayerSpec l;
  l.kind = LayerKind::kMamba;
  l.mamba.mixer = MambaMixer::kMamba2;
  l.mamba.conv_kernel = 4;
  l.mamba.intermediate_size = 8192;
  l.mamba.state_size = 128;
  l.mamba.n_groups = 1;
  l.mamba.num_heads = 128;
  l.mamba.head_dim = 64;
  // TP2, G=1: G' = 1 + (2 − 1) = 2; channels = 8192 + 2·2·128 = 8704 → 4352 per rank.
  const KvCacheSpec s = Must(l, 2);
  CHECK(s.mamba_states[0].shape == std::vector<int64_t>{3, 4352});
  CHECK(s.mamba_states[1].shape == std::vector<int64_t>{64, 64, 128});
  // G=8 divides TP2: channels = 8192 + 2·8·128 = 10240 → 5120.
  l.mamba.n_groups = 8;
  CHECK(Must(l, 2).mamba_states[0].shape == std::vector<int64_t>{3, 5120});
  // nspec adds conv rows for Mamba2.
  CHECK(Must(l, 2, 1).mamba_states[0].shape == std::vector<int64_t>{4, 5120});
}

TEST_CASE("§1.3 Mamba1: conv (K−1, I/TP), SSM (I/TP, N); no speculative rows") {
  LayerSpec l;
  l.kind = LayerKind::kMamba;
  l.mamba.mixer = MambaMixer::kMamba1;
  l.mamba.conv_kernel = 4;
  l.mamba.intermediate_size = 4096;
  l.mamba.state_size = 16;
  l.mamba.conv_dtype = DType::kFloat32;
  const KvCacheSpec s = Must(l, 2, 1);
  CHECK(s.mamba_states[0].shape == std::vector<int64_t>{3, 2048});
  CHECK(s.mamba_states[1].shape == std::vector<int64_t>{2048, 16});
  CHECK(s.mamba_states[1].dtype == DType::kFloat32);  // SSM auto → conv dtype
  CHECK(s.real_page_bytes() == (3 * 2048 + 2048 * 16) * 4);
}

TEST_CASE("explicit Mamba states are taken per rank as given") {
  LayerSpec l;
  l.kind = LayerKind::kMamba;
  l.mamba.explicit_states = {{"conv", {2, 512}, DType::kFloat32},
                             {"ssm", {3, 32, 32}, DType::kFloat32}};
  CHECK(Must(l, 4).real_page_bytes() == 16384);
}

TEST_CASE("ModelSpec kind queries") {
  ModelSpec m;
  m.layers = {Attn(8, 128)};
  CHECK(m.has_attention());
  CHECK_FALSE(m.has_mamba());
  m.layers.push_back(Gdn(32, DType::kAuto));
  CHECK(m.has_mamba());
  CHECK(m.num_layers() == 2);
}

}  // namespace
}  // namespace kvsim
