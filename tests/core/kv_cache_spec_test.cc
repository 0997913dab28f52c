// KvCacheSpec page sizes (reference §1.2, §1.3, §1.5, §8.1) and page-size unification on its
// own (§2, §8.2, §8.3), in both vLLM profiles where they differ.
#include <catch2/catch_test_macros.hpp>

#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/kv_cache_spec.h"
#include "core/page_planner.h"

namespace kvsim {
namespace {

KvCacheSpec Attn(int64_t b, int64_t h, int64_t d, DType dt, LayerKind kind = LayerKind::kFullAttention) {
  KvCacheSpec s;
  s.kind = kind;
  s.block_size = b;
  s.num_kv_heads = h;
  s.head_size = d;
  s.head_size_v = kind == LayerKind::kMla ? 0 : d;
  s.dtype = dt;
  if (kind == LayerKind::kSlidingWindow) s.sliding_window = 1024;
  return s;
}

// vLLM's test default: FullAttention(B16, H2, D64, fp32) = 16384 B.
KvCacheSpec Default() { return Attn(16, 2, 64, DType::kFloat32); }

KvCacheSpec MambaSpec(std::vector<MambaState> states, int64_t padded = 0) {
  KvCacheSpec s;
  s.kind = LayerKind::kMamba;
  s.block_size = 16;
  s.mamba_states = std::move(states);
  s.page_size_padded = padded;
  return s;
}

KvCacheSpec M16() {
  return MambaSpec({{"conv", {2, 512}, DType::kFloat32}, {"ssm", {3, 32, 32}, DType::kFloat32}});
}

TEST_CASE("dtype sizes (§1.1)") {
  CHECK(ElementBytes(DType::kFloat32) == 4);
  CHECK(ElementBytes(DType::kBFloat16) == 2);
  CHECK(ElementBytes(DType::kFloat16) == 2);
  for (DType t : {DType::kFp8, DType::kFp8E4M3, DType::kFp8E5M2, DType::kFp8PerTokenHead,
                  DType::kFp8DsMla, DType::kInt8}) {
    CHECK(ElementBytes(t) == 1);
  }
  CHECK(ElementBytes(DType::kNvfp4) == 0);  // packed: no per-element size
  CHECK(ParseDType("bfloat16") == DType::kBFloat16);
  CHECK(ParseDType("float32") == DType::kFloat32);
  CHECK_FALSE(ParseDType("fp7").has_value());
  for (DType t : {DType::kAuto, DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFp8,
                  DType::kFp8E4M3, DType::kFp8E5M2, DType::kFp8PerTokenHead, DType::kFp8DsMla,
                  DType::kInt8, DType::kNvfp4}) {
    CHECK(ParseDType(DTypeName(t)) == t);  // names round-trip
  }
}

TEST_CASE("§8.1 / §1.5 attention page sizes") {
  CHECK(Default().real_page_bytes() == 16384);
  CHECK(Default().page_bytes() == 16384);
  CHECK(Attn(16, 4, 64, DType::kFloat32).page_bytes() == 32768);
  CHECK(Attn(16, 2, 32, DType::kFloat32).page_bytes() == 8192);
  CHECK(Attn(16, 2, 96, DType::kFloat32).page_bytes() == 24576);
  CHECK(Attn(16, 2, 128, DType::kFloat32).page_bytes() == 32768);
  CHECK(Attn(24, 2, 64, DType::kFloat32).page_bytes() == 24576);
  CHECK(Attn(16, 1, 192, DType::kBFloat16).page_bytes() == 12288);  // MiMo target
  CHECK(Attn(16, 1, 128, DType::kBFloat16).page_bytes() == 8192);   // DFlash draft
  CHECK(Attn(16, 1, 128, DType::kBFloat16, LayerKind::kSlidingWindow).page_bytes() == 8192);
}

TEST_CASE("§8.1 per-token-head fp8 scales are part of the unpadded page; padding wins") {
  KvCacheSpec s = Attn(16, 2, 64, DType::kFp8PerTokenHead);
  CHECK(s.content_bytes() == 2 * 64 + 2 * 4);
  CHECK(s.real_page_bytes() == 16 * 2 * 128 + 2 * 16 * 2 * 4);  // 4096 + 256
  CHECK(s.page_bytes() == 4352);
  s.page_size_padded = 65536;
  CHECK(s.page_bytes() == 65536);
  CHECK(s.real_page_bytes() == 4352);
  CHECK(s.padding_bytes() == 65536 - 4352);
}

TEST_CASE("§8.1 padded spec: real page 256, page 384") {
  KvCacheSpec s = Attn(16, 1, 2, DType::kFloat32);
  s.page_size_padded = 384;
  CHECK(s.real_page_bytes() == 256);
  CHECK(s.page_bytes() == 384);
  CHECK(s.layer_page_bytes() == 384);
  CHECK(s.padding_bytes() == 128);
}

TEST_CASE("§1.2 K/V widths: Dv, fp8, nvfp4, MLA") {
  KvCacheSpec s = Attn(16, 2, 128, DType::kBFloat16);
  s.head_size_v = 64;  // (D + Dv) × s
  CHECK(s.content_bytes() == (128 + 64) * 2);
  CHECK(s.page_bytes() == 16 * 2 * 192 * 2);
  CHECK(Attn(16, 2, 128, DType::kFp8).page_bytes() == 16 * 2 * 256);
  // nvfp4: H_slots = 2H, C = D/2 + D/16.
  const KvCacheSpec f4 = Attn(16, 2, 128, DType::kNvfp4);
  CHECK(f4.num_head_slots() == 4);
  CHECK(f4.content_bytes() == 64 + 8);
  CHECK(f4.page_bytes() == 16 * 4 * 72);
  // MLA: one latent of D elements, no V.
  const KvCacheSpec mla = Attn(64, 1, 576, DType::kBFloat16, LayerKind::kMla);
  CHECK(mla.num_head_slots() == 1);
  CHECK(mla.v_content_bytes() == 0);
  CHECK(mla.page_bytes() == 64 * 576 * 2);
  CHECK(Attn(64, 1, 576, DType::kFp8DsMla, LayerKind::kMla).page_bytes() == 64 * 656);
  CHECK(Attn(64, 1, 576, DType::kFp8, LayerKind::kMla).page_bytes() == 64 * 576);
}

TEST_CASE("§1.3 / §1.5 Mamba page = Σ prod(shape) × size; padded page replaces it") {
  const KvCacheSpec m = M16();
  CHECK(m.mamba_states[0].bytes() == 4096);
  CHECK(m.mamba_states[1].bytes() == 12288);
  CHECK(m.real_page_bytes() == 16384);
  CHECK(m.page_bytes() == 16384);
  // Mamba pages do not depend on the block size.
  KvCacheSpec big = m;
  big.block_size = 2096;
  CHECK(big.page_bytes() == 16384);
  const KvCacheSpec padded = MambaSpec({{"conv", {2, 256}, DType::kFloat32},
                                        {"ssm", {3, 32, 32}, DType::kFloat32}},
                                       16384);
  CHECK(padded.real_page_bytes() == 2048 + 12288);
  CHECK(padded.page_bytes() == 16384);
}

TEST_CASE("attention pack multiplies the page, not the layer page (PR #35703)") {
  KvCacheSpec s = Attn(16, 2, 32, DType::kFloat32);
  s.pack_size = 2;
  CHECK(s.layer_page_bytes() == 8192);
  CHECK(s.page_bytes() == 16384);
  CHECK(s.padding_bytes() == 0);
  s.page_size_padded = 12288;
  CHECK(s.page_bytes() == 24576);
  CHECK(s.padding_bytes() == 2 * (12288 - 8192));
}

Status Unify(std::vector<KvCacheSpec>& specs, VllmSemantics sem = VllmSemantics::kLatest) {
  std::vector<std::string> names;
  for (size_t i = 0; i < specs.size(); ++i) names.push_back("layer" + std::to_string(i));
  return UnifyPageSizes(specs, names, sem);
}

TEST_CASE("§8.2 unify: Mamba padded, attention bumped, draft unchanged") {
  KvCacheSpec draft = Attn(16, 4, 64, DType::kFloat32);
  std::vector<KvCacheSpec> specs = {M16(), Default(), draft};
  REQUIRE(Unify(specs).ok());
  CHECK(specs[0].page_size_padded == 32768);
  CHECK(specs[0].block_size == 16);
  CHECK(specs[1].block_size == 32);
  CHECK(specs[1].page_size_padded == 0);
  CHECK(specs[2] == draft);
  for (const auto& s : specs) CHECK(s.page_bytes() == 32768);

  // [classic] scaling the Mamba block does not change its page: an error (issue #43626).
  std::vector<KvCacheSpec> classic = {M16(), Default(), draft};
  const Status st = Unify(classic, VllmSemantics::kClassic);
  REQUIRE_FALSE(st.ok());
  CHECK(st.code() == "page_size_not_divisible");
  CHECK(st.message().find("layer0") != std::string::npos);
  CHECK(st.message().find("layer2") != std::string::npos);
}

TEST_CASE("§8.2 unify: an already padded Mamba page is re-padded; non-divisible Mamba pads") {
  const KvCacheSpec draft = Attn(16, 4, 64, DType::kFloat32);
  std::vector<KvCacheSpec> a = {
      MambaSpec({{"conv", {2, 256}, DType::kFloat32}, {"ssm", {3, 32, 32}, DType::kFloat32}},
                16384),
      draft};
  REQUIRE(Unify(a).ok());
  CHECK(a[0].page_size_padded == 32768);

  std::vector<KvCacheSpec> b = {MambaSpec({{"state", {6144}, DType::kFloat32}}), draft};
  CHECK(b[0].page_bytes() == 24576);
  REQUIRE(Unify(b).ok());
  CHECK(b[0].page_size_padded == 32768);
  CHECK(b[0].block_size == 16);
}

TEST_CASE("§8.2 unify: non-divisible attention without opt-in is NotImplementedError") {
  KvCacheSpec b24 = Attn(24, 2, 64, DType::kFloat32);
  b24.indexes_kv_by_block_stride = false;
  KvCacheSpec draft = Attn(16, 4, 64, DType::kFloat32);
  draft.indexes_kv_by_block_stride = false;
  std::vector<KvCacheSpec> specs = {b24, draft};
  const Status st = Unify(specs);
  REQUIRE_FALSE(st.ok());
  CHECK(st.code() == "page_size_not_divisible");
  CHECK(st.message().find("24576") != std::string::npos);
  CHECK(st.message().find("32768") != std::string::npos);
}

TEST_CASE("§8.2 unify: equal pages are returned unchanged") {
  std::vector<KvCacheSpec> specs = {M16(), Default()};
  const std::vector<KvCacheSpec> before = specs;
  REQUIRE(Unify(specs).ok());
  CHECK(specs == before);
}

TEST_CASE("§8.3 padding fallback for a DFlash drafter (PR #45181)") {
  const KvCacheSpec target = Attn(16, 1, 192, DType::kBFloat16);
  const KvCacheSpec draft = Attn(16, 1, 128, DType::kBFloat16, LayerKind::kSlidingWindow);
  {
    std::vector<KvCacheSpec> specs = {target, draft};
    REQUIRE(Unify(specs).ok());
    CHECK(specs[0] == target);
    CHECK(specs[1].block_size == 16);
    CHECK(specs[1].real_page_bytes() == 8192);
    CHECK(specs[1].page_size_padded == 12288);
    CHECK(specs[1].page_bytes() == 12288);
  }
  {
    std::vector<KvCacheSpec> specs = {target, draft};
    specs[1].indexes_kv_by_block_stride = false;
    CHECK(Unify(specs).code() == "page_size_not_divisible");
  }
  {
    std::vector<KvCacheSpec> specs = {target, draft};  // [classic]: no padding fallback
    CHECK(Unify(specs, VllmSemantics::kClassic).code() == "page_size_not_divisible");
  }
}

TEST_CASE("unify: packed attention pads each member so the pack fills the page") {
  KvCacheSpec packed = Attn(16, 1, 128, DType::kBFloat16);  // 8192 per layer
  packed.pack_size = 2;                                      // 16384 per pack
  const KvCacheSpec big = Attn(16, 1, 192, DType::kBFloat16);
  KvCacheSpec bigger = big;
  bigger.block_size = 32;  // 24576
  std::vector<KvCacheSpec> specs = {packed, bigger};
  REQUIRE(Unify(specs).ok());
  CHECK(specs[0].page_size_padded == 12288);
  CHECK(specs[0].page_bytes() == 24576);
}

}  // namespace
}  // namespace kvsim
