// Index math the kernels use: KvSide addressing against KvLayout::Decode (an independent
// inverse), token maps, and the alignment that picks the vector width.
#include <catch2/catch_test_macros.hpp>

#include "kernels/kv_side.h"
#include "kernels/validate/layout_cases.h"

namespace kvsim::kernels {
namespace {

TEST_CASE("KvSide addresses decode back to the same cell in every awkward layout") {
  for (const LayoutCase& c : AwkwardLayoutCases(40)) {
    INFO(c.name << ": " << DescribeLayout(c.view));
    const KvLayout& l = c.view;
    uint8_t* base = nullptr;
    const KvSide s = CacheSide(l, c.layer, base, TokenMap::kIdentity);
    const int64_t mbt = l.manager_block_tokens();
    int checked = 0;
    for (int64_t blk = 0; blk < l.num_manager_blocks(); blk += 2) {
      for (int64_t pos = 0; pos < mbt; pos += (mbt > 40 ? 97 : 1)) {
        for (int64_t h = 0; h < l.num_heads; ++h) {
          for (int half = 0; half < 2; ++half) {
            for (int64_t byte : {int64_t{0}, l.k_bytes / 2 + 1, l.k_bytes - 1}) {
              const int64_t off = s.Address(half, blk, pos, h, byte) - base;
              REQUIRE(off >= 0);
              REQUIRE(off < c.alloc_bytes);
              KvCoord d;
              REQUIRE(l.Decode(off, &d));
              CHECK(d.layer == 0);
              CHECK(d.block == blk * l.kernel_split + pos / l.block_tokens);
              CHECK(d.token == pos % l.block_tokens);
              CHECK(d.head == h);
              CHECK(d.byte == half * l.k_bytes + byte);
              ++checked;
            }
          }
        }
      }
    }
    CHECK(checked > 0);
  }
}

TEST_CASE("Token maps: identity, block table, slot mapping with skips") {
  KvLayout l;
  l.block_tokens = 16;
  l.kernel_split = 2;
  l.num_blocks = 8;
  l.num_heads = 1;
  l.k_bytes = l.v_bytes = 128;
  int64_t b = 0, p = 0;
  KvSide s = CacheSide(l, 0, nullptr, TokenMap::kIdentity);
  REQUIRE(s.Locate(33, &b, &p));
  CHECK(b == 1);  // manager block of 32 tokens
  CHECK(p == 1);
  const int32_t table[] = {3, 0, 2};
  s = CacheSide(l, 0, nullptr, TokenMap::kBlockTable, table);
  REQUIRE(s.Locate(70, &b, &p));
  CHECK(b == 2);
  CHECK(p == 6);
  const int64_t slots[] = {5, -1, 64 + 31};
  s = CacheSide(l, 0, nullptr, TokenMap::kSlotMapping, nullptr, slots);
  CHECK(s.Locate(0, &b, &p));
  CHECK((b == 0 && p == 5));
  CHECK_FALSE(s.Locate(1, &b, &p));
  REQUIRE(s.Locate(2, &b, &p));
  CHECK((b == 2 && p == 31));
  // Position 31 of manager block 2 is kernel block 5, token 15.
  CHECK(s.Address(0, b, p, 0, 0) - static_cast<uint8_t*>(nullptr) == l.offset(0, 5, 0, 15, 0));
}

TEST_CASE("Row alignment follows strides, offsets and base addresses") {
  alignas(16) static uint8_t buf[64];
  KvLayout l;
  l.num_blocks = 4;
  l.num_heads = 3;
  l.block_tokens = 7;
  l.k_bytes = l.v_bytes = 256;
  CHECK(RowAlignment(CacheSide(l, 0, buf, TokenMap::kIdentity), 256, true) == 16);
  l.block_stride = 3 * 7 * 512 + 2;  // padded by 2 bytes: rows of block 1 are 2-byte aligned
  CHECK(RowAlignment(CacheSide(l, 0, buf, TokenMap::kIdentity), 256, true) == 2);
  l.block_stride = 3 * 7 * 512 + 1000;  // 8-byte multiple
  CHECK(RowAlignment(CacheSide(l, 0, buf, TokenMap::kIdentity), 256, true) == 8);
  l.block_stride = 0;
  CHECK(RowAlignment(CacheSide(l, 0, buf + 4, TokenMap::kIdentity), 256, true) == 4);
  l.k_bytes = l.v_bytes = 96;  // fp8 D=96: rows of 96 bytes, 32-byte aligned → 16
  CHECK(RowAlignment(CacheSide(l, 0, buf, TokenMap::kIdentity), 96, true) == 16);
  l.k_bytes = l.v_bytes = 66;
  CHECK(RowAlignment(CacheSide(l, 0, buf, TokenMap::kIdentity), 66, true) == 2);
}

}  // namespace
}  // namespace kvsim::kernels
