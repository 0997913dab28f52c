// PageMap: hover → coordinates → offset, all through core's KvLayout.
#include "viz/page_map.h"

#include <catch2/catch_test_macros.hpp>
#include <random>

#include "sim/report/plan_report.h"
#include "viz/plan_model.h"

namespace kvsim::viz {
namespace {

KvCachePlan PlanOf(std::vector<std::string> overrides) {
  auto m = PlanModel::Load("", overrides);
  REQUIRE(m.ok());
  REQUIRE(m->ok());
  return m->plan();
}

int GroupOf(const KvCachePlan& p, const std::string& layer) {
  for (const auto& l : p.layers) {
    if (l.name == layer) return l.group;
  }
  return -1;
}

int LayerIndex(const KvCachePlan& p, const std::string& layer) {
  for (size_t i = 0; i < p.layers.size(); ++i) {
    if (p.layers[i].name == layer) return static_cast<int>(i);
  }
  return -1;
}

// Every valid byte of the page decodes to coordinates whose offset() is the byte again.
void CheckRoundTrip(const PageMap& map, int samples) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> pick(map.begin(), map.begin() + map.size() - 1);
  int valid = 0;
  for (int i = 0; i < samples; ++i) {
    const int64_t b = pick(rng);
    const ByteInfo info = map.Locate(b);
    if (!info.valid()) continue;
    ++valid;
    REQUIRE(info.offset == b);
  }
  CHECK(valid > samples / 2);
}

TEST_CASE("attention page of the default plan: hover gives (layer, block, head, token, byte)") {
  const KvCachePlan p = PlanOf({});
  const int g = GroupOf(p, "L4");
  auto map = PageMap::Build(p, {0, g, 1});
  REQUIRE(map.ok());
  const PageMap& m = map.value();
  CHECK(m.size() == 1081344);  // 1056 tokens x 1 head x (256 + 256) x 2 B
  CHECK(m.padding_bytes() == 0);
  CHECK(m.manager_block_tokens() == 1056);
  CHECK(m.token_row_bytes() == 1024);
  // The byte of token 17, V element 44 (byte 512 + 88), as core's layout addresses it.
  const KvLayout l = p.LayoutForLayer(LayerIndex(p, "L4"));
  const int64_t byte = l.offset(0, 1, 0, 17, 512 + 88);
  const ByteInfo info = m.Locate(byte);
  REQUIRE(info.valid());
  CHECK(info.layer_name == "L4");
  CHECK(info.coord.block == 1);
  CHECK(info.coord.head == 0);
  CHECK(info.coord.token == 17);
  CHECK(info.coord.byte == 600);
  CHECK(info.region == Region::kValue);
  CHECK(info.offset == byte);
  CHECK(DescribeOffset(info) == "KvLayout::offset(0, 1, 0, 17, 600) = " + WithCommas(byte));
  CHECK(DescribeCoord(m, info).find("token 17") != std::string::npos);
  CheckRoundTrip(m, 2000);
  // Bytes outside the page are not this page's.
  CHECK_FALSE(m.Locate(m.begin() - 1).valid());
  CHECK_FALSE(m.Locate(m.begin() + m.size()).valid());
}

TEST_CASE("Mamba page: conv then SSM state, then padding up to the attention page") {
  const KvCachePlan p = PlanOf({});
  const int g = GroupOf(p, "L1");
  auto map = PageMap::Build(p, {0, g, 1});
  REQUIRE(map.ok());
  const PageMap& m = map.value();
  CHECK(m.size() == 1081344);
  CHECK(m.data_bytes() == 1073152);  // M, reference §7.1
  CHECK(m.padding_bytes() == 8192);
  CHECK(m.token_row_bytes() == 0);
  CHECK(m.Locate(m.begin()).region == Region::kConvState);
  CHECK(m.Locate(m.begin() + m.data_bytes() - 1).region == Region::kSsmState);
  CHECK_FALSE(m.Locate(m.begin() + m.data_bytes()).valid());
  REQUIRE(m.segments().size() == 3);
  CHECK(m.segments()[0].label == "L1 conv");
  CHECK(m.segments()[1].label == "L1 ssm");
  CHECK(m.segments()[2].layer == -1);
  CheckRoundTrip(m, 500);
}

TEST_CASE("pack of 4: layer slots share the page; token ranges land in the right slot") {
  const KvCachePlan p = PlanOf({"cache.attn_pack_size=4"});
  const int li = LayerIndex(p, "L8");
  REQUIRE(li >= 0);
  auto map = PageMap::Build(p, {p.layers[li].slot, p.layers[li].group, 2});
  REQUIRE(map.ok());
  const PageMap& m = map.value();
  REQUIRE(m.owners().size() == 1);
  CHECK(m.owners()[0].layout.num_layers == 4);
  CHECK(m.manager_block_tokens() == 272);
  const int member = p.layers[li].pack_member;
  const auto ranges = m.TokenRanges(li, 5);
  REQUIRE(ranges.size() == 1);  // one head, K and V packed in the content row
  CHECK(ranges[0].size() == 1024);
  const KvLayout slot = m.owners()[0].layout;
  CHECK(ranges[0].begin == slot.offset(member, 2, 0, 5, 0));
  const ByteInfo info = m.Locate(ranges[0].begin + 3);
  CHECK(info.layer_name == "L8");
  CHECK(info.manager_token == 5);
  CHECK(info.coord.layer == member);
  CheckRoundTrip(m, 2000);
}

TEST_CASE("NHD keeps a token's heads together, HND spreads them one head block apart") {
  const KvCachePlan nhd = PlanOf({"model.preset=llama-3.1-8b", "parallel.tp=1"});
  const KvCachePlan hnd =
      PlanOf({"model.preset=llama-3.1-8b", "parallel.tp=1", "cache.layout=HND"});
  auto a = PageMap::Build(nhd, {3, -1, 1});
  auto b = PageMap::Build(hnd, {3, -1, 1});
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  const int li = LayerIndex(nhd, "L4");
  const auto ra = a->TokenRanges(li, 7);
  const auto rb = b->TokenRanges(li, 7);
  REQUIRE(ra.size() == 8);  // 8 KV heads per token
  REQUIRE(rb.size() == 8);
  const int64_t c = 2 * 128 * 2;  // (K + V) x head_size x bf16
  for (size_t h = 0; h < 8; ++h) {
    CHECK(ra[h].size() == c);
    CHECK(rb[h].size() == c);
    if (h > 0) {
      CHECK(ra[h].begin - ra[h - 1].begin == c);       // NHD: adjacent heads
      CHECK(rb[h].begin - rb[h - 1].begin == 16 * c);  // HND: a head block apart
    }
  }
  CHECK(a->token_row_bytes() == 8 * c);
  CHECK(b->token_row_bytes() == c);
  // Same token, same head, same byte → same coordinates on both sides.
  const ByteInfo ia = a->Locate(ra[5].begin + 10);
  const ByteInfo ib = b->Locate(rb[5].begin + 10);
  CHECK(ia.coord.head == 5);
  CHECK(ib.coord.head == 5);
  CHECK(ia.manager_token == 7);
  CHECK(ib.manager_token == 7);
  CHECK(ia.coord.byte == ib.coord.byte);
  CHECK(ia.offset != ib.offset);
}

TEST_CASE("MiMo-style draft page: 8 KiB of data padded to the 12 KiB page") {
  const KvCachePlan p = PlanOf({"model.preset=mimo-style", "parallel.tp=4"});
  const int g = GroupOf(p, "D1");
  REQUIRE(g >= 0);
  auto map = PageMap::Build(p, {0, g, 1});
  REQUIRE(map.ok());
  CHECK(map->size() == 12288);
  CHECK(map->data_bytes() == 8192);
  CHECK(map->padding_bytes() == 4096);
  CHECK(map->segments().back().layer == -1);
  CHECK_FALSE(map->Locate(map->begin() + 8192).valid());
  CHECK(map->Locate(map->begin() + 8191).valid());
}

TEST_CASE("cross-layer slab: a group's layers at their slab offsets, each decoded by its layout") {
  const KvCachePlan p = PlanOf({"cache.layout=BLNHC"});
  REQUIRE(p.cross_layer);
  for (int g : {0, 3}) {
    auto map = PageMap::Build(p, {0, g, 1});
    REQUIRE(map.ok());
    CHECK(map->owners().size() == p.groups[g].layers.size());
    CHECK(map->size() == p.block_bytes);
    for (int li : p.groups[g].layers) {
      const ByteInfo info = map->Locate(map->begin() + p.layers[li].slab_offset);
      REQUIRE(info.valid());
      CHECK(info.layer == li);
    }
    CheckRoundTrip(map.value(), 3000);
  }
}

TEST_CASE("bad selections are errors, not crashes") {
  const KvCachePlan p = PlanOf({});
  CHECK_FALSE(PageMap::Build(p, {99, -1, 1}).ok());
  CHECK_FALSE(PageMap::Build(p, {0, -1, p.num_blocks}).ok());
  CHECK_FALSE(PageMap::Build(p, {0, 999, 1}).ok());
}

TEST_CASE("raster cells tile the window; CellOf inverts CellBegin") {
  const Raster r = MakeRaster(1000, 1024 * 1056, 1024, 256, 200);
  CHECK(r.cols == 256);
  CHECK(r.cell_bytes == 4);
  CHECK(r.rows_per_line == 6);  // 1056 token rows on 200 screen rows
  CHECK(r.rows == 176);
  for (int64_t c = 0; c < r.num_cells(); c += 37) CHECK(r.CellOf(r.CellBegin(c)) == c);
  CHECK(r.CellOf(999) == -1);
  CHECK(r.CellOf(1000 + 1024 * 1056) == -1);
  // One token row (row 7) lies in screen row 1, every column.
  const auto cells = r.CellsOf(1000 + 7 * 1024, 1000 + 8 * 1024);
  REQUIRE(cells.size() == 256);
  CHECK(cells.front() == 256);
  CHECK(cells.back() == 511);
  // A few bytes inside one row: one or two cells.
  CHECK(r.CellsOf(1000 + 5, 1000 + 9) == std::vector<int64_t>{1, 2});
  const Raster pow2 = MakeRaster(0, 1 << 20, 0, 128, 100);
  CHECK(pow2.cell_bytes == 128);
  CHECK(pow2.rows == 64);
}

}  // namespace
}  // namespace kvsim::viz
