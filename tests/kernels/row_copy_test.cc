// Host references of append / gather / conversion: checked against an independent oracle
// (KvLayout::Decode over every byte of the allocation), plus CanImplement's contract and
// the whole correctness harness on the host executor for every awkward layout.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cstring>
#include <numeric>
#include <random>

#include "kernels/reference/row_copy_ref.h"
#include "kernels/row_copy.h"
#include "kernels/validate/correctness.h"
#include "kernels/validate/layout_cases.h"

namespace kvsim::kernels {
namespace {

using Catch::Matchers::ContainsSubstring;

TEST_CASE("Append reference writes exactly the cells Decode names, nothing else") {
  std::mt19937_64 rng(3);
  for (const LayoutCase& c : AwkwardLayoutCases(24)) {
    INFO(c.name << ": " << DescribeLayout(c.view));
    const KvLayout& l = c.view;
    const int64_t mbt = l.manager_block_tokens();
    const int64_t m = l.num_manager_blocks();
    // Tokens go to every other slot of blocks m-1, m-2, ..., 1; some tokens are skipped.
    std::vector<int64_t> slots;
    for (int64_t b = m - 1; b >= 1; --b)
      for (int64_t p = 0; p < mbt; p += 2) slots.push_back(rng() % 5 == 0 ? -1 : b * mbt + p);
    const int64_t tokens = static_cast<int64_t>(slots.size());
    const int64_t rowb = l.k_bytes;
    std::vector<uint8_t> k(tokens * l.num_heads * rowb), v(k.size());
    for (auto& x : k) x = static_cast<uint8_t>(rng());
    for (auto& x : v) x = static_cast<uint8_t>(rng());
    std::vector<uint8_t> cache(c.alloc_bytes);
    for (int64_t i = 0; i < c.alloc_bytes; ++i) cache[i] = PoisonByte(i);
    const std::vector<uint8_t> poison = cache;
    CacheAppendArguments a;
    a.layout = l;
    a.cache = cache.data();
    a.dtype = c.dtype;
    a.num_tokens = tokens;
    a.num_heads = l.num_heads;
    a.head_size = c.head_size;
    a.key = k.data();
    a.value = v.data();
    a.slot_mapping = slots.data();
    REQUIRE(CanImplement(a).ok());
    RunRowCopyHost(MakeParams(a));
    // Oracle: slot → token.
    std::vector<int64_t> token_of(m * mbt, -1);
    for (int64_t t = 0; t < tokens; ++t)
      if (slots[t] >= 0) token_of[slots[t]] = t;
    int64_t bad = 0, cells = 0;
    for (int64_t i = 0; i < c.alloc_bytes; ++i) {
      KvCoord d;
      uint8_t expect = poison[i];
      if (l.Decode(i, &d)) {
        const int64_t slot = (d.block / l.kernel_split) * mbt +
                             (d.block % l.kernel_split) * l.block_tokens + d.token;
        const int64_t t = token_of[slot];
        if (t >= 0) {
          const bool is_v = d.byte >= l.k_bytes;
          const int64_t e = (t * l.num_heads + d.head) * rowb + (is_v ? d.byte - l.k_bytes : d.byte);
          expect = is_v ? v[e] : k[e];
          ++cells;
        }
      }
      bad += cache[i] != expect;
    }
    CHECK(bad == 0);
    int64_t written_tokens = 0;
    for (int64_t s : slots) written_tokens += s >= 0;
    CHECK(cells == written_tokens * l.num_heads * (l.k_bytes + l.v_bytes));
  }
}

TEST_CASE("Gather is the inverse of append; conversion round-trips") {
  HostExecutor host;
  CorrectnessOptions o;
  for (const LayoutCase& c : AwkwardLayoutCases(48)) {
    INFO(c.name << ": " << DescribeLayout(c.view));
    const CaseReport r = RunLayoutCase(c, host, o);
    INFO(r.append.note << " | " << r.gather.note << " | " << r.convert.note << " | "
                       << r.attention.note);
    CHECK(r.append.ran);
    CHECK(r.append.passed);
    CHECK(r.poisoned_bytes_changed == 0);
    CHECK(r.gather.passed);
    CHECK(r.convert.ran);
    CHECK(r.convert.passed);
    CHECK(r.passed());
  }
}

TEST_CASE("The harness is deterministic for a seed") {
  HostExecutor host;
  const auto cases = AwkwardLayoutCases(32);
  const CaseReport a = RunLayoutCase(cases[3], host, {});
  const CaseReport b = RunLayoutCase(cases[3], host, {});
  CHECK(a.tokens == b.tokens);
  CHECK(a.attention_rel_err == b.attention_rel_err);
  CHECK(a.vec_bytes == b.vec_bytes);
}

TEST_CASE("CanImplement names what it rejects") {
  KvLayout l;
  l.num_blocks = 4;
  l.num_heads = 2;
  l.block_tokens = 16;
  l.k_bytes = l.v_bytes = 256;
  uint8_t dummy[16];
  int64_t slots[1] = {0};
  CacheAppendArguments a;
  a.layout = l;
  a.cache = dummy;
  a.num_tokens = 1;
  a.num_heads = 2;
  a.head_size = 128;
  a.key = a.value = dummy;
  a.slot_mapping = slots;
  REQUIRE(CanImplement(a).ok());

  auto b = a;
  b.head_size = 32;
  b.layout.k_bytes = b.layout.v_bytes = 64;
  CHECK_THAT(CanImplement(b).message(), ContainsSubstring("head size 32"));
  b = a;
  b.dtype = DType::kFloat32;
  CHECK_THAT(CanImplement(b).message(), ContainsSubstring("fp32"));
  b = a;
  b.dtype = DType::kFp8PerTokenHead;
  CHECK_THAT(CanImplement(b).message(), ContainsSubstring("not supported"));
  b = a;
  b.num_heads = 3;
  CHECK_THAT(CanImplement(b).message(), ContainsSubstring("layout has 2 heads"));
  b = a;
  b.slot_mapping = nullptr;
  CHECK_THAT(CanImplement(b).message(), ContainsSubstring("slot_mapping"));
  b = a;
  b.value = nullptr;
  CHECK_THAT(CanImplement(b).message(), ContainsSubstring("holds V rows"));
  b = a;
  b.layer = 1;
  CHECK_THAT(CanImplement(b).message(), ContainsSubstring("layer slot 1"));
  CHECK(CanImplement(b).code() == "kernel_cannot_implement");

  LayoutConvertArguments cv;
  int32_t table[1] = {0};
  cv.src_layout = l;
  cv.dst_layout = l;
  cv.dst_layout.num_heads = 4;
  cv.src = cv.dst = dummy;
  cv.src_block_table = cv.dst_block_table = table;
  cv.num_tokens = 1;
  CHECK_THAT(CanImplement(cv).message(), ContainsSubstring("head counts differ"));
  cv.dst_layout = l;
  cv.dst_layout.k_bytes = cv.dst_layout.v_bytes = 128;
  CHECK_THAT(CanImplement(cv).message(), ContainsSubstring("content differs"));
}

TEST_CASE("Rows merge K|V only when both sides keep them packed") {
  KvLayout l;
  l.num_blocks = 4;
  l.num_heads = 2;
  l.block_tokens = 16;
  l.k_bytes = l.v_bytes = 256;
  alignas(16) static uint8_t buf[1 << 16];
  int32_t table[4] = {0, 1, 2, 3};
  LayoutConvertArguments cv;
  cv.src_layout = l;
  cv.dst_layout = l;
  cv.dst_layout.order = KvOrder::kLBHNC;
  cv.src = buf;
  cv.dst = buf + 32768;
  cv.src_block_table = cv.dst_block_table = table;
  cv.num_tokens = 64;
  RowCopyParams p = MakeParams(cv);
  CHECK(p.num_halves == 1);
  CHECK(p.row_bytes == 512);
  CHECK(p.vec_bytes == 16);
  cv.dst_layout.kv_split = KvSplit::kKvInBlock;
  p = MakeParams(cv);
  CHECK(p.num_halves == 2);
  CHECK(p.row_bytes == 256);
  CHECK(MovedBytes(p, 64) == 2 * 64 * 2 * 512);
}

}  // namespace
}  // namespace kvsim::kernels
