// KV transfer math for P/D against hand-worked examples (reference §7.4, gpu-notes §4) and
// conservation properties. The toy model has 8 KV heads × 128 in bf16, so one (head, token)
// row is C = (128 + 128) × 2 = 512 B and a 16-token block of all 8 heads is 65,536 B.
#include <catch2/catch_test_macros.hpp>

#include "core/kv_transfer.h"
#include "core/int_math.h"
#include "core/page_planner.h"

namespace kvsim {
namespace {

ModelSpec Dense(int64_t layers, int64_t kv_heads, int64_t head) {
  ModelSpec m;
  m.name = "toy";
  m.dtype = DType::kBFloat16;
  m.max_model_len = 4096;
  LayerSpec l;
  l.kind = LayerKind::kFullAttention;
  l.num_kv_heads = kv_heads;
  l.head_size = head;
  for (int64_t i = 0; i < layers; ++i) m.layers.push_back(l);
  return m;
}

// Qwen3.5-35B-shaped hybrid: `repeat` × (3 GDN + 1 full attention), fp32 SSM state.
ModelSpec Qwen35(int64_t repeat) {
  ModelSpec m;
  m.dtype = DType::kBFloat16;
  m.max_model_len = 262144;
  LayerSpec gdn;
  gdn.kind = LayerKind::kMamba;
  gdn.mamba.mixer = MambaMixer::kGatedDeltaNet;
  gdn.mamba.conv_kernel = 4;
  gdn.mamba.num_k_heads = 16;
  gdn.mamba.num_v_heads = 32;
  gdn.mamba.head_k_dim = 128;
  gdn.mamba.head_v_dim = 128;
  gdn.mamba.ssm_dtype = DType::kFloat32;
  LayerSpec full;
  full.kind = LayerKind::kFullAttention;
  full.num_kv_heads = 2;
  full.head_size = 256;
  for (int64_t r = 0; r < repeat; ++r) {
    for (int k = 0; k < 3; ++k) m.layers.push_back(gdn);
    m.layers.push_back(full);
  }
  return m;
}

struct Side {
  int64_t tp = 1;
  int64_t block = 16;
  KvOrder layout = KvOrder::kLBHNC;  // HND
  bool prefix_caching = true;
  int64_t pack = 1;
  KvSplit split = KvSplit::kPackedInContent;
};

KvCachePlan Plan(const ModelSpec& m, const Side& s) {
  PlannerConfig c;
  c.tp = s.tp;
  c.block_size = s.block;
  c.layout = s.layout;
  c.enable_prefix_caching = s.prefix_caching;
  c.attn_pack_size = s.pack;
  c.kv_split = s.split;
  c.num_gpu_blocks = 64;
  auto p = PlanKvCache(m, nullptr, c);
  REQUIRE(p.ok());
  return p.value();
}

Result<KvTransferPlan> Transfer(const ModelSpec& m, const Side& p, const Side& d,
                                KvTransferOptions o = {}) {
  return PlanKvTransfer(m, nullptr, Plan(m, p), Plan(m, d), o);
}

constexpr KvOrder kNhd = KvOrder::kLBNHC;
constexpr KvOrder kHnd = KvOrder::kLBHNC;

TEST_CASE("kv_transfer: homogeneous P/D moves ceil(tokens / block) blocks per layer") {
  const ModelSpec m = Dense(2, 8, 128);
  auto t = Transfer(m, {}, {});
  REQUIRE(t.ok());
  const KvTransferCost c = t->ForRequest(0, 100);
  // ceil(100 / 16) = 7 blocks × 2 layers, one descriptor of 65,536 B each.
  CHECK(c.descriptors == 14);
  CHECK(c.max_rank_descriptors == 14);
  CHECK(c.bytes == 14 * 65536);
  CHECK(c.payload_bytes == 100 * 8 * 512 * 2);
  CHECK(c.save_relayout_bytes == 0);
  CHECK(c.receive_relayout_bytes == 0);
  CHECK(c.group_descriptors.size() == 1);
  CHECK(c.group_bytes[0] == c.bytes);
}

TEST_CASE("kv_transfer: block count is a ceiling, not PR #30448's (tokens - 1)") {
  // 65 tokens in 16-token decode blocks need 5 blocks; ceil((65 - 1) / 16) = 4 would drop the
  // block holding token 64.
  const ModelSpec m = Dense(1, 8, 128);
  Side p;
  p.block = 64;
  p.layout = kNhd;
  p.prefix_caching = false;
  Side d;  // HND, 16
  KvTransferOptions o;
  o.save_side_postprocess = true;
  auto t = Transfer(m, p, d, o);
  REQUIRE(t.ok());
  CHECK(t->ForRequest(0, 65).descriptors == 5);
  CHECK(t->ForRequest(0, 64).descriptors == 4);
  CHECK(t->ForRequest(0, 1).descriptors == 1);
  CHECK(t->ForRequest(0, 0).descriptors == 0);
  CHECK(t->ForRequest(0, 0).bytes == 0);
}

TEST_CASE("kv_transfer: decode block = 4 x prefill block merges on receive") {
  const ModelSpec m = Dense(2, 8, 128);
  Side p;  // HND 16
  Side d;
  d.block = 64;
  auto t = Transfer(m, p, d);
  REQUIRE(t.ok());
  const KvLayerTransfer& l = t->layers[0];
  CHECK(l.unit_tokens == 16);
  CHECK(l.merge_ratio == 4);
  CHECK(l.split_ratio == 1);
  CHECK(l.relayout_on_receive);  // (r, H, N_r, D) -> (H, r·N_r, D)
  CHECK_FALSE(l.permute_on_save);
  const KvTransferCost c = t->ForRequest(0, 100);
  CHECK(c.descriptors == 14);  // remote blocks are the copy unit: 7 per layer
  CHECK(c.bytes == 14 * 65536);
  CHECK(c.receive_relayout_bytes == 14 * 65536);
  CHECK(c.receive_relayout_kernels == 2);

  // NHD blocks concatenate: 4 NHD blocks of 16 tokens are one NHD block of 64, no fix-up.
  p.layout = kNhd;
  d.layout = kNhd;
  auto n = Transfer(m, p, d);
  REQUIRE(n.ok());
  CHECK(n->layers[0].merge_ratio == 4);
  CHECK_FALSE(n->layers[0].relayout_on_receive);
  CHECK(n->ForRequest(0, 100).receive_relayout_bytes == 0);
}

TEST_CASE("kv_transfer: prefill block = 4 x decode block splits on save (PR #30448)") {
  const ModelSpec m = Dense(2, 8, 128);
  Side p;
  p.block = 64;
  p.layout = kNhd;
  Side d;  // HND 16

  SECTION("vLLM refuses it unless the scenario models PR #30448") {
    auto t = Transfer(m, p, d);
    REQUIRE_FALSE(t.ok());
    CHECK(t.status().code() == "pd_unsupported");
    CHECK(t.status().message().find("30448") != std::string::npos);
  }
  SECTION("the PR disables it with prefix caching on the prefill side") {
    KvTransferOptions o;
    o.save_side_postprocess = true;
    auto t = Transfer(m, p, d, o);
    REQUIRE_FALSE(t.ok());
    CHECK(t.status().message().find("prefix caching") != std::string::npos);
    o.model_unsupported = true;  // ...unless asked to cost it anyway
    auto forced = Transfer(m, p, d, o);
    REQUIRE(forced.ok());
    REQUIRE(forced->notes.size() == 1);
    CHECK(forced->notes[0].find("prefix caching") != std::string::npos);
  }
  SECTION("with prefix caching off") {
    p.prefix_caching = false;
    KvTransferOptions o;
    o.save_side_postprocess = true;
    auto t = Transfer(m, p, d, o);
    REQUIRE(t.ok());
    const KvLayerTransfer& l = t->layers[0];
    CHECK(l.split_ratio == 4);
    CHECK(l.merge_ratio == 1);
    CHECK(l.permute_on_save);
    CHECK_FALSE(l.relayout_on_receive);  // arrives decode-shaped HND
    const KvTransferCost c = t->ForRequest(0, 65);
    CHECK(c.descriptors == 10);  // 5 decode blocks × 2 layers
    CHECK(c.bytes == 10 * 65536);
    // The prefill rank rewrites its 2 blocks of 64 tokens per layer: 2 × 64 × 8 × 512.
    CHECK(c.save_relayout_rank_bytes == 2 * 2 * 262144);
    CHECK(c.save_relayout_bytes == c.save_relayout_rank_bytes);
    CHECK(c.save_relayout_kernels == 2);
    CHECK(c.receive_relayout_bytes == 0);
  }
}

TEST_CASE("kv_transfer: NHD <-> HND permutes") {
  const ModelSpec m = Dense(2, 8, 128);
  SECTION("remote HND -> local NHD: receive-side permute (merged)") {
    Side p;
    Side d;
    d.layout = kNhd;
    auto t = Transfer(m, p, d);
    REQUIRE(t.ok());
    CHECK(t->layers[0].relayout_on_receive);
    CHECK(t->layers[0].merge_ratio == 1);
    const KvTransferCost c = t->ForRequest(0, 32);
    CHECK(c.descriptors == 4);
    CHECK(c.bytes == 4 * 65536);
    CHECK(c.receive_relayout_bytes == 4 * 65536);
    KvTransferOptions off;
    off.enable_permute_local_kv = false;
    auto refused = Transfer(m, p, d, off);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().message().find("enable_permute_local_kv") != std::string::npos);
  }
  SECTION("prefill NHD -> decode HND needs the save-side permute") {
    Side p;
    p.layout = kNhd;
    p.prefix_caching = false;
    Side d;
    CHECK_FALSE(Transfer(m, p, d).ok());
    KvTransferOptions o;
    o.save_side_postprocess = true;
    auto t = Transfer(m, p, d, o);
    REQUIRE(t.ok());
    CHECK(t->layers[0].permute_on_save);
    CHECK(t->layers[0].split_ratio == 1);
    const KvTransferCost c = t->ForRequest(0, 32);
    CHECK(c.save_relayout_rank_bytes == 4 * 65536);
    CHECK(c.receive_relayout_bytes == 0);
  }
}

TEST_CASE("kv_transfer: TP change gives descriptors per rank pair") {
  const ModelSpec m = Dense(2, 8, 128);
  SECTION("prefill TP 4 -> decode TP 2 (HND): two sources per decode rank") {
    Side p;
    p.tp = 4;
    Side d;
    d.tp = 2;
    auto t = Transfer(m, p, d);
    REQUIRE(t.ok());
    const KvLayerTransfer& l = t->layers[0];
    REQUIRE(l.pairs.size() == 4);
    for (const auto& pr : l.pairs) {
      CHECK(pr.head_slots == 2);
      CHECK(pr.descriptors_per_unit == 1);
      CHECK(pr.bytes_per_unit == 2 * 16 * 512);
      CHECK(pr.prefill_rank / 2 == pr.decode_rank);
    }
    CHECK_FALSE(l.relayout_on_receive);  // chunks land at their head offsets in HND
    const KvTransferCost c = t->ForRequest(0, 32);
    CHECK(c.descriptors == 16);          // 2 layers × 4 pairs × 2 blocks
    CHECK(c.max_rank_descriptors == 8);  // per decode rank
    CHECK(c.bytes == 2 * 2 * 16 * 8 * 512);
  }
  SECTION("prefill TP 2 -> decode TP 4 (HND): contiguous head slices") {
    Side p;
    p.tp = 2;
    Side d;
    d.tp = 4;
    auto t = Transfer(m, p, d);
    REQUIRE(t.ok());
    const KvLayerTransfer& l = t->layers[0];
    REQUIRE(l.pairs.size() == 4);
    CHECK(l.pairs[1].prefill_rank == 0);
    CHECK(l.pairs[2].prefill_rank == 1);
    CHECK(l.pairs[1].descriptors_per_unit == 1);
    CHECK(l.pairs[1].bytes_per_unit == 2 * 16 * 512);
  }
  SECTION("NHD head slices are not contiguous: vLLM needs HND") {
    Side p;
    p.tp = 2;
    p.layout = kNhd;
    p.prefix_caching = false;
    Side d;
    d.tp = 4;
    d.layout = kNhd;
    auto refused = Transfer(m, p, d);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().message().find("head slices") != std::string::npos);
    KvTransferOptions o;
    o.save_side_postprocess = true;
    auto t = Transfer(m, p, d, o);
    REQUIRE(t.ok());
    CHECK(t->layers[0].permute_on_save);
    CHECK(t->layers[0].relayout_on_receive);  // back to NHD on the decoder
    CHECK(t->layers[0].pairs[0].descriptors_per_unit == 1);
  }
}

TEST_CASE("kv_transfer: contiguous runs of a head slice") {
  const ModelSpec m = Dense(1, 8, 128);
  Side s;
  s.tp = 2;  // 4 heads per rank
  s.layout = kNhd;
  const KvLayout nhd = Plan(m, s).LayoutForLayer(0);
  // NHD: each token holds its 4 heads; 2 of them are 2 × 512 B, once per token.
  KvRuns r = CountBlockRuns(nhd, 2, 2, false);
  CHECK(r.runs == 16);
  CHECK(r.run_bytes == 1024);
  r = CountBlockRuns(nhd, 0, 4, false);
  CHECK(r.runs == 1);
  CHECK(r.run_bytes == 16 * 4 * 512);
  s.layout = kHnd;
  const KvLayout hnd = Plan(m, s).LayoutForLayer(0);
  r = CountBlockRuns(hnd, 2, 2, false);
  CHECK(r.runs == 1);
  CHECK(r.run_bytes == 2 * 16 * 512);
  // Classic (B, 2, ...) blocks: K and V halves are separate descriptors.
  s.split = KvSplit::kKvInBlock;
  const KvLayout classic = Plan(m, s).LayoutForLayer(0);
  r = CountBlockRuns(classic, 0, 4, false);
  CHECK(r.runs == 2);
  CHECK(r.run_bytes == 4 * 16 * 256);
}

TEST_CASE("kv_transfer: rank heads, replication when TP exceeds the heads") {
  CHECK(RankHeads(8, 4, 3).begin == 6);
  CHECK(RankHeads(8, 4, 3).count == 2);
  CHECK(RankHeads(2, 8, 5).begin == 1);  // ranks 4..7 hold head 1
  CHECK(RankHeads(2, 8, 5).count == 1);
  // 2 KV heads, prefill TP 8 (each head on 4 ranks) -> decode TP 2: one source each, and
  // different decode ranks read different replicas.
  const ModelSpec m = Dense(1, 2, 128);
  Side p;
  p.tp = 8;
  Side d;
  d.tp = 2;
  auto t = Transfer(m, p, d);
  REQUIRE(t.ok());
  REQUIRE(t->layers[0].pairs.size() == 2);
  CHECK(t->layers[0].pairs[0].prefill_rank == 0);
  CHECK(t->layers[0].pairs[1].prefill_rank == 5);
}

TEST_CASE("kv_transfer: the issue's scenario, NHD 64 TP 4 -> HND 16 TP 2") {
  const ModelSpec m = Dense(2, 8, 128);
  Side p;
  p.tp = 4;
  p.block = 64;
  p.layout = kNhd;
  p.prefix_caching = false;
  Side d;
  d.tp = 2;
  KvTransferOptions o;
  o.save_side_postprocess = true;
  auto t = Transfer(m, p, d, o);
  REQUIRE(t.ok());
  const KvLayerTransfer& l = t->layers[0];
  CHECK(l.split_ratio == 4);
  CHECK(l.permute_on_save);
  CHECK_FALSE(l.relayout_on_receive);
  REQUIRE(l.pairs.size() == 4);
  CHECK(l.pairs[0].bytes_per_unit == 2 * 16 * 512);
  const KvTransferCost c = t->ForRequest(0, 100);
  // 7 decode blocks × 4 pairs × 2 layers; each prefill rank rewrites 2 blocks × 64 tokens ×
  // 2 heads × 512 B per layer.
  CHECK(c.descriptors == 56);
  CHECK(c.max_rank_descriptors == 28);
  CHECK(c.bytes == 7 * 16 * 8 * 512 * 2);
  CHECK(c.save_relayout_rank_bytes == 2 * 2 * 64 * 2 * 512);
  CHECK(c.save_relayout_bytes == 4 * c.save_relayout_rank_bytes);
}

TEST_CASE("kv_transfer: non-integer block ratios are refused") {
  const ModelSpec m = Dense(1, 8, 128);
  Side p;
  p.block = 48;
  Side d;
  d.block = 32;
  KvTransferOptions o;
  o.save_side_postprocess = true;
  o.model_unsupported = true;
  auto t = Transfer(m, p, d, o);
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().message().find("integer") != std::string::npos);
}

TEST_CASE("kv_transfer: hybrid Qwen3.5-class model, pack 2 -> pack 1, Mamba 1:1") {
  // TP 2: attention block 528 with pack 2 and 1056 with pack 1 (reference §4.4); 1 KV head per
  // rank, C = 2 × 256 × 2 = 1024 B; Mamba page per rank 24,576 + 1,048,576 = 1,073,152 B.
  const ModelSpec m = Qwen35(10);
  Side p;
  p.tp = 2;
  p.block = 0;
  p.pack = 2;
  p.layout = kNhd;
  Side d = p;
  d.pack = 1;
  REQUIRE(Plan(m, p).attn_block_size == 528);
  REQUIRE(Plan(m, d).attn_block_size == 1056);
  auto t = Transfer(m, p, d);
  REQUIRE(t.ok());
  const KvLayerTransfer& gdn = t->layers[0];
  const KvLayerTransfer& attn = t->layers[3];
  CHECK(gdn.kind == LayerKind::kMamba);
  CHECK(gdn.unit_tokens == 0);
  REQUIRE(gdn.pairs.size() == 2);
  CHECK(gdn.pairs[0].descriptors_per_unit == 2);  // conv + ssm
  CHECK(gdn.pairs[0].bytes_per_unit == 1073152);
  CHECK(attn.unit_tokens == 528);
  CHECK(attn.merge_ratio == 2);
  CHECK_FALSE(attn.relayout_on_receive);  // NHD into NHD
  const KvTransferCost c = t->ForRequest(0, 3000);
  // Attention: ceil(3000 / 528) = 6 units × 10 layers × 2 ranks; Mamba: 30 layers × 2 states
  // × 2 ranks.
  CHECK(c.descriptors == 6 * 10 * 2 + 30 * 2 * 2);
  CHECK(c.bytes == 2 * (60 * 528 * 1024 + 30 * 1073152));
  CHECK(c.payload_bytes == 2 * (10 * 3000 * 1024 + 30 * 1073152));

  SECTION("Mamba shards from prefill TP 4 -> decode TP 2 are interleaved on receive") {
    Side p4 = p;
    p4.tp = 4;
    p4.pack = 1;  // 528 at TP 4
    Side d2 = p;  // 528 at TP 2 with pack 2
    d2.pack = 2;
    auto t4 = Transfer(m, p4, d2);
    REQUIRE(t4.ok());
    const KvLayerTransfer& g = t4->layers[0];
    REQUIRE(g.pairs.size() == 4);
    CHECK(g.pairs[0].bytes_per_unit == 12288 + 524288);
    CHECK(g.relayout_on_receive);
    CHECK(g.receive_bytes_per_unit == 24576);  // the decode rank's conv state
  }
  SECTION("decode TP > prefill TP for Mamba state is refused") {
    Side d4 = p;
    d4.tp = 4;
    d4.pack = 1;  // attention 528 at TP 4
    auto refused = Transfer(m, p, d4);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().message().find("49297") != std::string::npos);
  }
}

TEST_CASE("kv_transfer: cross-layer slabs collapse descriptors (#30207)") {
  // Qwen3-0.6B shape: 28 layers, 8 KV heads × 128. A 16-token request posts one descriptor
  // per layer with packed K/V, 56 with classic split K/V, and 1 with a cross-layer slab.
  const ModelSpec m = Dense(28, 8, 128);
  Side s;
  auto per_layer = Transfer(m, s, s);
  REQUIRE(per_layer.ok());
  CHECK(per_layer->ForRequest(0, 16).descriptors == 28);
  Side classic = s;
  classic.split = KvSplit::kKvInBlock;
  auto split = Transfer(m, classic, classic);
  REQUIRE(split.ok());
  CHECK(split->ForRequest(0, 16).descriptors == 56);
  Side slab = s;
  slab.layout = KvOrder::kBLNHC;
  auto t = Transfer(m, slab, slab);
  REQUIRE(t.ok());
  CHECK(t->cross_layer);
  CHECK(t->ForRequest(0, 16).descriptors == 1);
  CHECK(t->ForRequest(0, 16).bytes == 28 * 65536);
  CHECK(t->ForRequest(0, 1024).descriptors == 64);
  // A slab on one side only: vLLM cannot pair them.
  CHECK_FALSE(Transfer(m, slab, s).ok());
}

TEST_CASE("kv_transfer: gpu-notes worked check, Llama-3-70B 4096 tokens") {
  // 256 blocks × 80 layers × K/V halves = 40,960 descriptors of 32 KiB (1.34 GB); at 2 µs per
  // descriptor the posting takes ≈ 82 ms against ≈ 28.6 ms of wire time at 47 GB/s.
  const ModelSpec m = Dense(80, 8, 128);
  Side s;
  s.split = KvSplit::kKvInBlock;
  auto t = Transfer(m, s, s);
  REQUIRE(t.ok());
  const KvTransferCost c = t->ForRequest(0, 4096);
  CHECK(c.descriptors == 40960);
  CHECK(c.bytes == 40960LL * 32768);
  KvTransferTimeModel tm;
  CHECK(tm.PostingNs(c) == 81920000);
  CHECK(KvTransferTimeModel::WireNs(c.bytes, 47.0) == 28556964);
  CHECK(tm.TransferNs(c, 47.0, 5000) == 81920000 + 28556964 + 5000);
  tm.overlap_posting = true;
  CHECK(tm.TransferNs(c, 47.0, 0) == 81920000);
}

TEST_CASE("kv_transfer: re-layout time = launches + bytes read and written / HBM rate") {
  KvTransferCost c;
  c.receive_relayout_kernels = 2;
  c.receive_relayout_rank_bytes = 3000000;  // 3 MB read + 3 MB written at 3 TB/s = 2 µs
  KvTransferTimeModel tm;
  tm.relayout_bytes_per_ns = 3000;
  CHECK(tm.ReceiveRelayoutNs(c) == 2 * 4000 + 2000);
  CHECK(tm.SaveRelayoutNs(c) == 0);
}

TEST_CASE("kv_transfer: conservation over TP, block and layout combinations") {
  // Every decode rank receives each of its head slots exactly once per unit; splitting the
  // tokens at a unit boundary moves the same bytes in two parts.
  const ModelSpec m = Dense(3, 8, 64);
  const int64_t c_bytes = 2 * 64 * 2;
  int checked = 0;
  for (int64_t tp_p : {1, 2, 4, 8, 16}) {
    for (int64_t tp_d : {1, 2, 4, 8, 16}) {
      for (int64_t bp : {16, 32, 64}) {
        for (int64_t bd : {16, 32, 64}) {
          for (KvOrder lp : {kNhd, kHnd}) {
            for (KvOrder ld : {kNhd, kHnd}) {
              Side p{tp_p, bp, lp, false};
              Side d{tp_d, bd, ld, true};
              KvTransferOptions o;
              o.save_side_postprocess = true;
              auto t = Transfer(m, p, d, o);
              REQUIRE(t.ok());
              const int64_t hd = RankHeads(8, tp_d, 0).count;
              for (const auto& l : t->layers) {
                std::vector<int64_t> got(static_cast<size_t>(tp_d), 0);
                for (const auto& pr : l.pairs) got[static_cast<size_t>(pr.decode_rank)] += pr.head_slots;
                for (int64_t g : got) CHECK(g == hd);
              }
              const int64_t unit = std::min(bp, bd);
              for (int64_t tokens : {1, 17, 100, 513}) {
                const KvTransferCost all = t->ForRequest(0, tokens);
                CHECK(all.bytes == 3 * CeilDiv(tokens, unit) * unit * hd * tp_d * c_bytes);
                CHECK(all.payload_bytes == 3 * tokens * hd * tp_d * c_bytes);
                const int64_t cut = std::max(bp, bd);  // a multiple of the unit
                if (cut < tokens) {
                  const KvTransferCost a = t->ForRequest(0, cut);
                  const KvTransferCost b = t->ForRequest(cut, tokens);
                  CHECK(a.bytes + b.bytes == all.bytes);
                  CHECK(a.descriptors + b.descriptors == all.descriptors);
                }
              }
              ++checked;
            }
          }
        }
      }
    }
  }
  CHECK(checked == 5 * 5 * 3 * 3 * 2 * 2);
}

}  // namespace
}  // namespace kvsim
