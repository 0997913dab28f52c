// KvLayout property tests over many shapes (every order × every K/V split, awkward sizes,
// padded strides, base offsets, kernel splits), and the layouts of real plans: pack members,
// padded pages, cross-layer slabs and kernel-split pages never overlap and never touch padding.
#include <catch2/catch_test_macros.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "core/kv_layout.h"
#include "core/page_planner.h"

namespace kvsim {
namespace {

constexpr KvOrder kOrders[] = {KvOrder::kLBHNC, KvOrder::kLBNHC, KvOrder::kLHBNC,
                               KvOrder::kBLHNC, KvOrder::kBLNHC, KvOrder::kBHLNC};
constexpr KvSplit kSplits[] = {KvSplit::kPackedInContent, KvSplit::kKvInBlock,
                               KvSplit::kKvFirstTensor};

// A small deterministic generator: the shapes a test visits never change between runs.
struct Lcg {
  uint64_t s;
  uint64_t Next() {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return s >> 33;
  }
  template <typename T, size_t N>
  T Pick(const T (&v)[N]) { return v[Next() % N]; }
};

template <typename F>
void ForEachCoord(const KvLayout& l, F&& f) {
  for (int64_t a = 0; a < l.num_layers; ++a)
    for (int64_t b = 0; b < l.num_blocks; ++b)
      for (int64_t h = 0; h < l.num_heads; ++h)
        for (int64_t n = 0; n < l.block_tokens; ++n)
          for (int64_t c = 0; c < l.content_bytes(); ++c) f(KvCoord{a, b, h, n, c});
}

// Sets block/layer padding from the inside out, so each padded stride covers the (possibly
// padded) span inside it.
KvLayout Pad(KvLayout l, int64_t pad_block, int64_t pad_layer) {
  int ord[KvLayout::kNumAxes];
  l.AxisOrder(ord);
  for (int i = KvLayout::kNumAxes - 1; i >= 0; --i) {
    int64_t st[KvLayout::kNumAxes];
    l.Strides(st);
    if (ord[i] == KvLayout::kB && pad_block > 0) l.block_stride = st[KvLayout::kB] + pad_block;
    if (ord[i] == KvLayout::kL && pad_layer > 0) l.layer_stride = st[KvLayout::kL] + pad_layer;
  }
  return l;
}

std::string Describe(const KvLayout& l) {
  return std::string(KvOrderName(l.order)) + " " + KvSplitName(l.kv_split) +
         " L" + std::to_string(l.num_layers) + " B" + std::to_string(l.num_blocks) + " H" +
         std::to_string(l.num_heads) + " N" + std::to_string(l.block_tokens) + " k" +
         std::to_string(l.k_bytes) + " v" + std::to_string(l.v_bytes) + " bs" +
         std::to_string(l.block_stride) + " ls" + std::to_string(l.layer_stride) + " base" +
         std::to_string(l.base_offset) + " split" + std::to_string(l.kernel_split);
}

// Whether one manager block's bytes form one contiguous page: B outside H, N (and S).
bool ManagerPagesContiguous(const KvLayout& l) {
  return l.order != KvOrder::kLHBNC && l.kv_split != KvSplit::kKvFirstTensor;
}

// All the properties of one layout. Returns the number of content bytes checked.
int64_t CheckLayout(const KvLayout& l) {
  INFO(Describe(l));
  const int64_t alloc = l.allocation_bytes();
  REQUIRE(alloc >= l.base_offset + 0);
  std::vector<int32_t> owner(static_cast<size_t>(alloc), -1);  // byte → layer slot
  int64_t touched = 0;
  bool ok = true;
  ForEachCoord(l, [&](const KvCoord& c) {
    if (!ok) return;
    const int64_t off = l.offset(c.layer, c.block, c.head, c.token, c.byte);
    // Inside the allocation, after the base offset.
    if (off < l.base_offset || off >= alloc) {
      FAIL_CHECK("offset " << off << " outside [" << l.base_offset << ", " << alloc << ")");
      ok = false;
      return;
    }
    // Injective.
    if (owner[off] != -1) {
      FAIL_CHECK("offset " << off << " reached twice");
      ok = false;
      return;
    }
    owner[off] = static_cast<int32_t>(c.layer);
    ++touched;
    // Decode is the exact inverse.
    KvCoord d;
    if (!l.Decode(off, &d) || d.layer != c.layer || d.block != c.block || d.head != c.head ||
        d.token != c.token || d.byte != c.byte) {
      FAIL_CHECK("Decode(" << off << ") does not give back the coordinate");
      ok = false;
    }
  });
  REQUIRE(ok);
  CHECK(touched == l.content_total_bytes());
  // Padding: every byte no coordinate reaches decodes to nothing, and there are exactly
  // allocation − base − content of them.
  int64_t untouched = 0;
  for (int64_t off = l.base_offset; off < alloc; ++off) {
    if (owner[off] != -1) continue;
    ++untouched;
    KvCoord d;
    if (l.Decode(off, &d)) {
      FAIL_CHECK("padding byte " << off << " decodes to a coordinate");
      break;
    }
  }
  CHECK(untouched == alloc - l.base_offset - l.content_total_bytes());
  for (int64_t off = 0; off < l.base_offset && off < alloc; ++off) {
    KvCoord d;
    CHECK_FALSE(l.Decode(off, &d));
  }

  // Layer slots (pack members): each LayerView addresses exactly its slot's bytes, with the
  // same offsets as the whole, so members never overlap.
  for (int64_t a = 0; a < l.num_layers; ++a) {
    const KvLayout v = l.LayerView(a);
    CHECK(v.allocation_bytes() == alloc);
    CHECK(v.num_layers == 1);
    int64_t mismatches = 0, count = 0;
    for (int64_t b = 0; b < l.num_blocks; ++b)
      for (int64_t h = 0; h < l.num_heads; ++h)
        for (int64_t n = 0; n < l.block_tokens; ++n)
          for (int64_t c = 0; c < l.content_bytes(); ++c) {
            const int64_t off = v.offset(0, b, h, n, c);
            mismatches += off != l.offset(a, b, h, n, c);
            mismatches += owner[off] != a;
            ++count;
          }
    CHECK(mismatches == 0);
    CHECK(count * l.num_layers == l.content_total_bytes());
    // The view decodes only its own slot's bytes.
    int64_t wrong = 0;
    for (int64_t off = 0; off < alloc; ++off) {
      KvCoord d;
      const bool mine = v.Decode(off, &d);
      wrong += mine != (owner[off] == a);
      if (mine) wrong += v.offset(0, d.block, d.head, d.token, d.byte) != off;
    }
    CHECK(wrong == 0);
  }

  // Kernel split: token t of manager block m is token t % N of kernel block m·split + t / N,
  // and a manager block is one contiguous page where B is outside H and N.
  const int64_t mtok = l.manager_block_tokens();
  const int64_t page = l.manager_page_bytes();
  int64_t bad_manager = 0;
  for (int64_t a = 0; a < l.num_layers; ++a)
    for (int64_t m = 0; m < l.num_manager_blocks(); ++m)
      for (int64_t h = 0; h < l.num_heads; ++h)
        for (int64_t t = 0; t < mtok; ++t)
          for (int64_t c = 0; c < l.content_bytes(); ++c) {
            const int64_t off = l.ManagerOffset(a, m, h, t, c);
            bad_manager += off != l.offset(a, m * l.kernel_split + t / l.block_tokens, h,
                                           t % l.block_tokens, c);
            if (ManagerPagesContiguous(l)) {
              // Outside the layer stride (L-outer orders), the byte sits in manager page m.
              int64_t st[KvLayout::kNumAxes];
              l.Strides(st);
              const bool l_outer = l.order == KvOrder::kLBHNC || l.order == KvOrder::kLBNHC;
              const int64_t rel = off - l.base_offset - (l_outer ? a * st[KvLayout::kL] : 0);
              bad_manager += rel / page != m;
            }
          }
  CHECK(bad_manager == 0);
  return touched;
}

TEST_CASE("KvLayout properties: every order × K/V split over awkward shapes") {
  Lcg rng{12345};
  const int64_t kLayers[] = {1, 2, 3, 4};
  const int64_t kHeads[] = {1, 3, 8};
  const int64_t kTokens[] = {1, 3, 7, 16, 17};
  const int64_t kWidths[] = {1, 2, 3, 5, 8};  // per K (and V) half
  const int64_t kVExtra[] = {0, 0, 1, 3};     // packed rows may have Dv != D, even 0 (MLA)
  const int64_t kPads[] = {0, 0, 1, 7, 64};
  const int64_t kBases[] = {0, 0, 13, 4096};
  const int64_t kSplitBy[] = {1, 1, 2, 3};
  int64_t layouts = 0, bytes = 0;
  for (KvOrder order : kOrders) {
    for (KvSplit split : kSplits) {
      for (int rep = 0; rep < 14; ++rep) {
        KvLayout l;
        l.order = order;
        l.kv_split = split;
        l.num_layers = rng.Pick(kLayers);
        l.num_heads = rng.Pick(kHeads);
        l.block_tokens = rng.Pick(kTokens);
        l.kernel_split = rng.Pick(kSplitBy);
        l.num_blocks = l.kernel_split * (1 + static_cast<int64_t>(rng.Next() % 5));
        if (l.num_blocks > 5 && l.kernel_split > 1) l.num_blocks = l.kernel_split;
        l.k_bytes = rng.Pick(kWidths);
        l.v_bytes = split == KvSplit::kPackedInContent
                        ? (rng.Next() % 4 == 0 ? 0 : l.k_bytes + rng.Pick(kVExtra))
                        : l.k_bytes;  // K/V halves must have equal widths
        l = Pad(l, rng.Pick(kPads), rng.Pick(kPads));
        l.base_offset = rng.Pick(kBases);
        bytes += CheckLayout(l);
        ++layouts;
      }
    }
  }
  CHECK(layouts == 6 * 3 * 14);
  CHECK(bytes > 100000);
}

TEST_CASE("KvLayout exhaustive small sweep: L 1..4, blocks 1..5, heads {1,3,8}, tokens") {
  // Every order, split, layer count and block count, with odd tokens and widths.
  for (KvOrder order : kOrders)
    for (KvSplit split : kSplits)
      for (int64_t layers = 1; layers <= 4; ++layers)
        for (int64_t blocks = 1; blocks <= 5; ++blocks)
          for (int64_t heads : {1, 3, 8})
            for (int64_t tokens : {1, 3, 7, 16, 17}) {
              if (heads * tokens * layers * blocks > 1200) continue;  // keep it quick
              KvLayout l;
              l.order = order;
              l.kv_split = split;
              l.num_layers = layers;
              l.num_blocks = blocks;
              l.num_heads = heads;
              l.block_tokens = tokens;
              l.k_bytes = 3;
              l.v_bytes = split == KvSplit::kPackedInContent ? 2 : 3;
              CheckLayout(l);
              CheckLayout(Pad(l, 5, 3));
            }
}

TEST_CASE("KvLayout strides: NHD and HND per reference §7.3") {
  KvLayout nhd;
  nhd.order = KvOrder::kLBNHC;
  nhd.num_blocks = 10;
  nhd.num_heads = 4;
  nhd.block_tokens = 16;
  nhd.k_bytes = nhd.v_bytes = 256;  // D = 128, bf16
  int64_t st[KvLayout::kNumAxes];
  nhd.Strides(st);
  const int64_t c = 512;
  CHECK(st[KvLayout::kC] == 1);
  CHECK(st[KvLayout::kH] == c);
  CHECK(st[KvLayout::kN] == 4 * c);
  CHECK(st[KvLayout::kB] == 16 * 4 * c);
  KvLayout hnd = nhd;
  hnd.order = KvOrder::kLBHNC;
  hnd.Strides(st);
  CHECK(st[KvLayout::kN] == c);
  CHECK(st[KvLayout::kH] == 16 * c);
  CHECK(st[KvLayout::kB] == 4 * 16 * c);
  // Padded page: the block stride is the padded page; the tail of each page is never used.
  KvLayout padded = hnd;
  padded.block_stride = 4 * 16 * c + 1000;
  CHECK(padded.allocation_bytes() == 10 * (4 * 16 * c + 1000));
  for (int64_t b = 0; b < 10; ++b) {
    for (int64_t off = b * padded.block_stride + 4 * 16 * c; off < (b + 1) * padded.block_stride;
         ++off) {
      KvCoord d;
      REQUIRE_FALSE(padded.Decode(off, &d));
    }
  }
  // Classic (B, 2, ...): the V block follows the K block inside each page.
  KvLayout classic = nhd;
  classic.kv_split = KvSplit::kKvInBlock;
  classic.Strides(st);
  CHECK(st[KvLayout::kS] == 16 * 4 * 256);
  CHECK(classic.offset(0, 1, 0, 0, 256) == 2 * 16 * 4 * 256 + 16 * 4 * 256);
  // Legacy K/V-first (2, B, ...): V of block 0 sits after every K block.
  KvLayout legacy = nhd;
  legacy.kv_split = KvSplit::kKvFirstTensor;
  CHECK(legacy.offset(0, 0, 0, 0, 256) == 10 * 16 * 4 * 256);
}

// ---------------------------------------------------------------------------------------
// Layouts of real plans.

LayerSpec Attn(LayerKind kind, int64_t heads, int64_t d, int64_t window = 0) {
  LayerSpec l;
  l.kind = kind;
  l.num_kv_heads = heads;
  l.head_size = d;
  l.sliding_window = window;
  return l;
}

LayerSpec MambaState(int64_t conv_elems, int64_t ssm_elems) {
  LayerSpec l;
  l.kind = LayerKind::kMamba;
  l.mamba.explicit_states = {{"conv", {conv_elems}, DType::kFloat32},
                             {"ssm", {ssm_elems}, DType::kFloat32}};
  return l;
}

ModelSpec Model(std::vector<LayerSpec> layers, DType dt) {
  ModelSpec m;
  m.name = "t";
  m.dtype = dt;
  m.layers = std::move(layers);
  return m;
}

// Per group: the layers of the group that share a slot touch disjoint bytes; each layer
// touches exactly its real page in every block, inside that block's page (or its slab
// region), never the padding; the bytes a group leaves untouched are its padding.
void CheckPlanLayouts(const KvCachePlan& p) {
  REQUIRE(p.num_blocks > 0);
  for (size_t g = 0; g < p.groups.size(); ++g) {
    INFO("group " << g);
    std::vector<std::vector<int32_t>> owner(p.tensors.size());
    for (size_t t = 0; t < p.tensors.size(); ++t) owner[t].assign(p.tensors[t].size_bytes, -1);
    for (int li : p.groups[g].layers) {
      const PlannedLayer& pl = p.layers[li];
      INFO("layer " << pl.name);
      const KvLayout l = p.LayoutForLayer(li);
      const int64_t tensor_bytes = p.tensors[pl.slot].size_bytes;
      CHECK(l.allocation_bytes() == tensor_bytes);
      const int64_t page = p.cross_layer ? p.block_bytes : pl.spec.page_bytes();
      if (p.config.kv_split != KvSplit::kKvFirstTensor) CHECK(l.manager_page_bytes() == page);
      CHECK(l.num_manager_blocks() == p.num_blocks);
      std::vector<int64_t> per_block(p.num_blocks, 0);
      int64_t errors = 0;
      ForEachCoord(l, [&](const KvCoord& c) {
        const int64_t off = l.offset(c.layer, c.block, c.head, c.token, c.byte);
        if (off < 0 || off >= tensor_bytes) {
          ++errors;
          return;
        }
        errors += owner[pl.slot][off] != -1;  // another layer of this group got here first
        owner[pl.slot][off] = li;
        const int64_t manager = c.block / l.kernel_split;
        // Inside its block's page (K/V-first tensors split every page in two halves).
        if (p.config.kv_split != KvSplit::kKvFirstTensor) errors += off / page != manager;
        const int64_t in_page = off % page;
        if (p.cross_layer && p.config.layout != KvOrder::kBHLNC) {  // BHLNC interleaves heads
          errors += in_page < pl.slab_offset || in_page >= pl.slab_offset + pl.spec.page_bytes();
        }
        if (pl.spec.kind == LayerKind::kMamba) {
          errors += in_page - pl.slab_offset >= pl.spec.mamba_state_bytes();  // padding at the end
        }
        ++per_block[manager];
      });
      CHECK(errors == 0);
      for (int64_t b = 0; b < p.num_blocks; ++b) CHECK(per_block[b] == pl.spec.real_page_bytes());
    }
    // What the group leaves untouched in a block is exactly its padding.
    int64_t untouched = 0;
    for (const auto& o : owner)
      for (int32_t x : o) untouched += x == -1;
    if (!p.cross_layer) {
      CHECK(untouched == p.padding_bytes_per_block(static_cast<int>(g)) * p.num_blocks);
    }
    // A slot's pack view agrees with its members' views.
    for (size_t t = 0; t < p.tensors.size() && !p.cross_layer; ++t) {
      const KvLayout slot = p.LayoutForSlot(static_cast<int>(t), static_cast<int>(g));
      for (int li : p.groups[g].layers) {
        if (p.layers[li].slot != static_cast<int>(t)) continue;
        const KvLayout mine = p.LayoutForLayer(li);
        const int64_t member = p.layers[li].pack_member;
        REQUIRE(member < slot.num_layers);
        int64_t diff = 0;
        ForEachCoord(mine, [&](const KvCoord& c) {
          diff += mine.offset(0, c.block, c.head, c.token, c.byte) !=
                  slot.offset(member, c.block, c.head, c.token, c.byte);
        });
        CHECK(diff == 0);
      }
    }
  }
}

KvCachePlan MustPlan(const ModelSpec& m, const PlannerConfig& c, const ModelSpec* d = nullptr) {
  auto p = PlanKvCache(m, d, c);
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  return p.value();
}

TEST_CASE("plan layouts: packed hybrid (§8.11, 2 Mamba + 5 Full D32, pack 2)") {
  const LayerSpec a = Attn(LayerKind::kFullAttention, 2, 32);
  for (KvOrder order : {KvOrder::kLBNHC, KvOrder::kLBHNC}) {
    PlannerConfig c;
    c.num_gpu_blocks = 4;
    c.attn_pack_size = 2;
    c.layout = order;
    const KvCachePlan p = MustPlan(
        Model({MambaState(1024, 3072), MambaState(1024, 3072), a, a, a, a, a}, DType::kFloat32), c);
    REQUIRE(p.groups.size() == 3);
    CheckPlanLayouts(p);
    // Member 1 of a pack starts one layer page after member 0 in every block.
    const KvLayout l3 = p.LayoutForLayer(2), l4 = p.LayoutForLayer(3);
    CHECK(l4.offset(0, 1, 0, 0, 0) - l3.offset(0, 1, 0, 0, 0) == 8192);
    CHECK(l3.offset(0, 1, 0, 0, 0) == 16384);
  }
}

TEST_CASE("plan layouts: padded DFlash-style drafter (§8.3) in NHD and HND") {
  for (KvOrder order : {KvOrder::kLBNHC, KvOrder::kLBHNC}) {
    PlannerConfig c;
    c.num_gpu_blocks = 3;
    c.layout = order;
    const ModelSpec target = Model({Attn(LayerKind::kSlidingWindow, 4, 192, 128),
                                    Attn(LayerKind::kFullAttention, 4, 192)},
                                   DType::kBFloat16);
    const ModelSpec draft = Model({Attn(LayerKind::kSlidingWindow, 4, 128, 1024)}, DType::kBFloat16);
    c.tp = 4;
    const KvCachePlan p = MustPlan(target, c, &draft);
    CHECK(p.layers[2].spec.page_size_padded == 12288);
    CHECK(p.padding_bytes_per_block(p.layers[2].group) == 4096);
    CheckPlanLayouts(p);
  }
}

TEST_CASE("plan layouts: cross-layer slabs (BLNHC, BHLNC) with Mamba and SWA") {
  for (KvOrder order : {KvOrder::kBLNHC, KvOrder::kBLHNC, KvOrder::kBHLNC}) {
    PlannerConfig c;
    c.num_gpu_blocks = 3;
    c.layout = order;
    const LayerSpec full = Attn(LayerKind::kFullAttention, 2, 64);
    const LayerSpec swa = Attn(LayerKind::kSlidingWindow, 2, 64, 4);
    const KvCachePlan p = MustPlan(Model({full, full, swa, swa, swa, swa}, DType::kFloat32), c);
    CHECK(p.cross_layer);
    CheckPlanLayouts(p);
    const ModelSpec hybrid =
        Model({MambaState(1024, 2048), full, MambaState(1024, 2048), full}, DType::kFloat32);
    if (order == KvOrder::kBHLNC) {
      // Heads interleaved across layers need one cell shape; a Mamba page has no heads.
      auto bad = PlanKvCache(hybrid, nullptr, c);
      REQUIRE_FALSE(bad.ok());
      CHECK(bad.status().message().find("cache.layout") != std::string::npos);
      continue;
    }
    const KvCachePlan h = MustPlan(hybrid, c);
    CHECK(h.cross_layer);
    CHECK(h.mamba_padded_page_bytes == 16384);
    CheckPlanLayouts(h);
  }
}

TEST_CASE("plan layouts: FlashInfer kernel split (48-token pages → 3 × 16)") {
  for (int64_t pack : {1, 2}) {
    PlannerConfig c;
    c.num_gpu_blocks = 3;
    c.backend = AttentionBackend::kFlashInfer;
    c.attn_pack_size = pack;
    c.layout = KvOrder::kLBHNC;
    const LayerSpec a = Attn(LayerKind::kFullAttention, 2, 64);  // 1024 B/token
    // Mamba page 49152 × pack: B_attn = 16 × cdiv(M, 16 × 1024 × pack) = 48.
    const int64_t m = 49152 * pack / 4;
    const KvCachePlan p =
        MustPlan(Model({MambaState(m / 2, m / 2), a, a}, DType::kFloat32), c);
    CHECK(p.attn_block_size == 48);
    CHECK(p.kernel_block_size == 16);
    CHECK(p.LayoutForLayer(1).kernel_split == 3);
    CheckPlanLayouts(p);
  }
}

TEST_CASE("plan layouts: classic (B, 2, ...) and legacy (2, B, ...) K/V splits") {
  PlannerConfig c;
  c.num_gpu_blocks = 3;
  c.kv_split = KvSplit::kKvInBlock;
  const LayerSpec full = Attn(LayerKind::kFullAttention, 2, 64);
  const LayerSpec swa = Attn(LayerKind::kSlidingWindow, 2, 32, 4);
  CheckPlanLayouts(MustPlan(Model({full, swa, swa}, DType::kFloat32), c));
  // Packs and cross-layer slabs keep each layer's [K block | V block] together.
  PlannerConfig pack = c;
  pack.attn_pack_size = 2;
  CheckPlanLayouts(MustPlan(
      Model({MambaState(2048, 2048), full, full, full}, DType::kFloat32), pack));
  PlannerConfig slab = c;
  slab.layout = KvOrder::kBLNHC;
  CheckPlanLayouts(MustPlan(Model({full, full, swa, swa}, DType::kFloat32), slab));

  // Legacy K/V-first: every V block after every K block of a layer's tensor.
  PlannerConfig legacy = c;
  legacy.kv_split = KvSplit::kKvFirstTensor;
  const KvCachePlan p = MustPlan(Model({full, full}, DType::kFloat32), legacy);
  CheckPlanLayouts(p);
  const KvLayout l = p.LayoutForLayer(0);
  CHECK(l.offset(0, 0, 0, 0, 256) == 3 * 8192);  // V of block 0 after 3 K blocks of 8 KiB
  // ...which cannot share a tensor with another group's block ids.
  auto bad = PlanKvCache(Model({full, swa, swa}, DType::kFloat32), nullptr, legacy);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("cache.kv_split") != std::string::npos);
}

}  // namespace
}  // namespace kvsim
