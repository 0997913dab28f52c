// The fp64 decode-attention reference against a naive scalar computation over contiguous
// arrays (no KvLayout involved), worked examples, and CanImplement's contract.
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cmath>
#include <random>

#include "kernels/decode_attention.h"
#include "kernels/reference/decode_attention_ref.h"
#include "kernels/reference/half.h"
#include "kernels/reference/row_copy_ref.h"
#include "kernels/row_copy.h"
#include "kernels/validate/layout_cases.h"

namespace kvsim::kernels {
namespace {

using Catch::Matchers::ContainsSubstring;

// Writes K/V ([tokens, heads, D] bf16 bits) of one sequence into `l` by block table.
std::vector<uint8_t> Fill(const KvLayout& l, int64_t alloc, const std::vector<uint16_t>& k,
                          const std::vector<uint16_t>& v, const std::vector<int32_t>& table,
                          int64_t tokens, int64_t d) {
  std::vector<uint8_t> cache(alloc, 0xEE);
  std::vector<int64_t> slots(tokens);
  const int64_t mbt = l.manager_block_tokens();
  for (int64_t t = 0; t < tokens; ++t) slots[t] = table[t / mbt] * mbt + t % mbt;
  CacheAppendArguments a;
  a.layout = l;
  a.cache = cache.data();
  a.num_tokens = tokens;
  a.num_heads = l.num_heads;
  a.head_size = d;
  a.key = k.data();
  a.value = v.data();
  a.slot_mapping = slots.data();
  REQUIRE(CanImplement(a).ok());
  RunRowCopyHost(MakeParams(a));
  return cache;
}

TEST_CASE("fp64 reference equals a naive computation, for every layout holding the data") {
  const int64_t d = 64, heads = 3, group = 2, tokens = 45;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<uint16_t> k(tokens * heads * d), v(k.size()), q(heads * group * d);
  for (auto& x : k) x = FloatToBf16(u(rng));
  for (auto& x : v) x = FloatToBf16(u(rng));
  for (auto& x : q) x = FloatToBf16(u(rng));
  const double scale = 0.125;
  // Naive: scores, softmax, weighted sum, all in double from the raw arrays.
  std::vector<double> naive(heads * group * d);
  for (int64_t qh = 0; qh < heads * group; ++qh) {
    const int64_t kvh = qh / group;
    std::vector<double> s(tokens);
    double mx = -1e300;
    for (int64_t t = 0; t < tokens; ++t) {
      double acc = 0;
      for (int64_t e = 0; e < d; ++e)
        acc += Bf16ToFloat(q[qh * d + e]) * Bf16ToFloat(k[(t * heads + kvh) * d + e]);
      s[t] = acc * scale;
      mx = std::max(mx, s[t]);
    }
    double sum = 0;
    for (auto& x : s) sum += (x = std::exp(x - mx));
    for (int64_t e = 0; e < d; ++e) {
      double o = 0;
      for (int64_t t = 0; t < tokens; ++t) o += s[t] * Bf16ToFloat(v[(t * heads + kvh) * d + e]);
      naive[qh * d + e] = o / sum;
    }
  }
  LayoutShape shapes[3];
  shapes[0].block_tokens = 7;
  shapes[1].block_tokens = 16;
  shapes[1].order = KvOrder::kLBHNC;
  shapes[1].pad_bytes = 160;
  shapes[2].block_tokens = 3;
  shapes[2].order = KvOrder::kBLNHC;
  shapes[2].layers = 3;
  shapes[2].layer = 2;
  std::vector<double> first;
  for (auto& sh : shapes) {
    sh.heads = heads;
    sh.head_size = d;
    const int64_t blocks = (tokens + sh.block_tokens - 1) / sh.block_tokens;
    const LayoutCase c = MakeLayoutCase("t", sh, blocks + 2);
    std::vector<int32_t> table(blocks);
    for (int64_t i = 0; i < blocks; ++i) table[i] = static_cast<int32_t>(blocks - i);  // reversed
    const auto cache = Fill(c.view, c.alloc_bytes, k, v, table, tokens, d);
    DecodeAttentionArguments a;
    a.layout = c.view;
    a.cache = cache.data();
    a.batch = 1;
    a.num_q_heads = heads * group;
    a.num_kv_heads = heads;
    a.head_size = d;
    a.query = q.data();
    a.block_tables = table.data();
    a.max_blocks_per_seq = blocks;
    const int32_t len = tokens;
    a.seq_lens = &len;
    a.max_seq_len = tokens;
    a.scale = static_cast<float>(scale);
    const auto ref = DecodeAttentionReference(a);
    REQUIRE(ref.size() == naive.size());
    for (size_t i = 0; i < ref.size(); ++i) CHECK(ref[i] == Catch::Approx(naive[i]).margin(1e-12));
    if (first.empty()) first = ref;
    CHECK(ref == first);  // same values, any layout
  }
}

TEST_CASE("Worked examples: one token returns its V; equal scores average") {
  const int64_t d = 64;
  KvLayout l;
  l.num_blocks = 2;
  l.num_heads = 1;
  l.block_tokens = 4;
  l.k_bytes = l.v_bytes = 2 * d;
  std::vector<uint16_t> k(2 * d, FloatToBf16(0.5f)), v(2 * d), q(d, FloatToBf16(1.0f));
  for (int64_t e = 0; e < d; ++e) {
    v[e] = FloatToBf16(static_cast<float>(e));
    v[d + e] = FloatToBf16(static_cast<float>(3 * e));
  }
  const std::vector<int32_t> table = {1};
  const auto cache = Fill(l, l.allocation_bytes(), k, v, table, 2, d);
  DecodeAttentionArguments a;
  a.layout = l;
  a.cache = cache.data();
  a.batch = 1;
  a.num_q_heads = 1;
  a.num_kv_heads = 1;
  a.head_size = d;
  a.query = q.data();
  a.block_tables = table.data();
  a.max_blocks_per_seq = 1;
  int32_t len = 1;
  a.seq_lens = &len;
  a.max_seq_len = 2;
  a.scale = 0.125f;
  auto ref = DecodeAttentionReference(a);
  for (int64_t e = 0; e < d; ++e) CHECK(ref[e] == static_cast<double>(e));
  len = 2;  // both keys equal → both weights 1/2
  ref = DecodeAttentionReference(a);
  for (int64_t e = 0; e < d; ++e) CHECK(ref[e] == Catch::Approx(2.0 * e));
}

TEST_CASE("Decode attention CanImplement") {
  KvLayout l;
  l.num_blocks = 4;
  l.num_heads = 2;
  l.block_tokens = 16;
  l.k_bytes = l.v_bytes = 256;
  alignas(16) static uint8_t buf[64];
  int32_t table[4] = {0, 1, 2, 3};
  int32_t lens[1] = {64};
  float out[1], ws[1];
  DecodeAttentionArguments a;
  a.layout = l;
  a.cache = buf;
  a.batch = 1;
  a.num_q_heads = 8;
  a.num_kv_heads = 2;
  a.head_size = 128;
  a.query = buf;
  a.block_tables = table;
  a.max_blocks_per_seq = 4;
  a.seq_lens = lens;
  a.max_seq_len = 64;
  a.out = out;
  a.workspace = ws;
  REQUIRE(CanImplement(a).ok());
  const DecodeAttentionParams p = MakeParams(a);
  CHECK(p.group == 4);
  CHECK(p.heads_per_pass == 4);
  CHECK(p.head_passes == 1);
  CHECK(p.split_tokens == 64);  // auto: 2 CTAs per partition → as many partitions as allowed
  CHECK(p.num_splits == 1);
  auto b = a;
  b.dtype = DType::kFp8E4M3;
  CHECK_THAT(CanImplement(b).message(), ContainsSubstring("fp8"));
  b = a;
  b.head_size = 96;
  CHECK_THAT(CanImplement(b).message(), ContainsSubstring("head size 96"));
  b = a;
  b.num_q_heads = 7;
  CHECK_THAT(CanImplement(b).message(), ContainsSubstring("not a multiple"));
  b = a;
  b.layout.block_stride = 16 * 2 * 512 + 2;
  CHECK_THAT(CanImplement(b).message(), ContainsSubstring("2-byte aligned"));
  b = a;
  b.max_seq_len = 65;
  CHECK_THAT(CanImplement(b).message(), ContainsSubstring("exceeds the block table"));
  b = a;
  b.split_tokens = 100;
  CHECK_THAT(CanImplement(b).message(), ContainsSubstring("split_tokens"));
  // Auto partition size: a function of the token count only.
  b = a;
  b.batch = 32;
  b.max_seq_len = 16384;
  b.max_blocks_per_seq = 1024;
  CHECK(SplitTokens(b) == 512);
  b.batch = 1;
  b.max_seq_len = 1024;
  CHECK(SplitTokens(b) == 64);
  b.batch = 8;
  b.max_seq_len = 2048;
  CHECK(SplitTokens(b) == 64);
  b.batch = 16;
  b.num_kv_heads = 8;
  b.layout.num_heads = 8;
  b.num_q_heads = 32;
  CHECK(SplitTokens(b) == 256);
  // Groups map to compiled head counts and passes.
  b = a;
  b.num_q_heads = 2 * 16;
  CHECK(MakeParams(b).heads_per_pass == 8);
  CHECK(MakeParams(b).head_passes == 2);
  b.num_q_heads = 2 * 3;
  CHECK(MakeParams(b).heads_per_pass == 4);
  CHECK(MakeParams(b).head_passes == 1);
  b.num_q_heads = 2 * 5;
  CHECK(MakeParams(b).heads_per_pass == 8);
}

}  // namespace
}  // namespace kvsim::kernels
