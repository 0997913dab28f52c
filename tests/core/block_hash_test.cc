// Block hashing: extra keys (reference §8.19), chaining, and the incremental hasher.
#include <catch2/catch_test_macros.hpp>

#include <numeric>
#include <vector>

#include "core/block_hash.h"

namespace kvsim {
namespace {

RequestKeys TwoImages() {
  RequestKeys k;
  k.mm_items = {{"hash1", 0, 5}, {"hash2", 10, 5}};
  return k;
}

TEST_CASE("8.19 multimodal extra keys", "[block_hash][8.19]") {
  const RequestKeys k = TwoImages();
  CHECK(BlockExtraKeys(k, 0, 5) == ExtraKeys{MmExtraKey{"hash1", 0}});
  CHECK(BlockExtraKeys(k, 3, 8) == ExtraKeys{MmExtraKey{"hash1", -3}});
  CHECK(BlockExtraKeys(k, 6, 10).empty());
  CHECK(BlockExtraKeys(k, 0, 15) == (ExtraKeys{MmExtraKey{"hash1", 0}, MmExtraKey{"hash2", 10}}));
}

TEST_CASE("8.19 cache salt and LoRA extra keys", "[block_hash][8.19]") {
  RequestKeys salt;
  salt.cache_salt = "salt";
  CHECK(BlockExtraKeys(salt, 0, 1) == ExtraKeys{std::string("salt")});
  CHECK(BlockExtraKeys(salt, 0, 10) == ExtraKeys{std::string("salt")});
  CHECK(BlockExtraKeys(salt, 1, 2).empty());
  CHECK(BlockExtraKeys(salt, 6, 10).empty());
  salt.mm_items = {{"hash1", 0, 5}};
  CHECK(BlockExtraKeys(salt, 0, 5) == (ExtraKeys{MmExtraKey{"hash1", 0}, std::string("salt")}));
  RequestKeys lora;
  lora.lora_name = "test_lora_adapter";
  for (int64_t s : {0, 16, 32})
    CHECK(BlockExtraKeys(lora, s, s + 16) == ExtraKeys{std::string("test_lora_adapter")});
}

TEST_CASE("8.19 request block hasher chains extra keys", "[block_hash][8.19]") {
  RequestKeys k;
  k.mm_items = {{"hash1", 0, 3}, {"hash2", 3, 3}};
  const std::vector<TokenId> t = {0, 1, 2, 3, 4, 5};
  RequestBlockHasher h;
  h.Reset(3, &k);
  h.Append(t);
  REQUIRE(h.hashes().size() == 2);
  const BlockHash h0 =
      HashBlock(kNoneHash, std::span(t).subspan(0, 3), ExtraKeys{MmExtraKey{"hash1", 0}});
  const BlockHash h1 = HashBlock(h0, std::span(t).subspan(3, 3), ExtraKeys{MmExtraKey{"hash2", 0}});
  CHECK(h.hashes()[0] == h0);
  CHECK(h.hashes()[1] == h1);
  // Extra keys change the hash; the same tokens without them hash differently.
  CHECK(h0 != HashBlock(kNoneHash, std::span(t).subspan(0, 3)));
}

TEST_CASE("Chained hashes: equal prefixes hit, a change propagates", "[block_hash]") {
  std::vector<TokenId> a(64);
  std::iota(a.begin(), a.end(), 0);
  auto b = a;
  b[20] = -1;  // block 1 differs
  std::vector<BlockHash> ha, hb;
  HashFullBlocks(kNoneHash, a, 16, ha);
  HashFullBlocks(kNoneHash, b, 16, hb);
  REQUIRE(ha.size() == 4);
  CHECK(ha[0] == hb[0]);
  for (size_t i = 1; i < 4; ++i) CHECK(ha[i] != hb[i]);
  // Same block content at another position (different parent) → different hash.
  std::vector<TokenId> same(32, 7);
  std::vector<BlockHash> hs;
  HashFullBlocks(kNoneHash, same, 16, hs);
  CHECK(hs[0] != hs[1]);
}

TEST_CASE("Incremental hasher equals one-shot hashing, any split", "[block_hash]") {
  std::vector<TokenId> t(203);
  std::iota(t.begin(), t.end(), 100);
  std::vector<BlockHash> want;
  HashFullBlocks(kNoneHash, t, 16, want);
  for (size_t split : {size_t{0}, size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{100}}) {
    RequestBlockHasher h;
    h.Reset(16);
    h.Append(std::span(t).subspan(0, split));
    for (size_t i = split; i < t.size(); i += 7)
      h.Append(std::span(t).subspan(i, std::min<size_t>(7, t.size() - i)));
    CHECK(h.hashes() == want);
    CHECK(h.num_tokens() == 203);
  }
  // With (empty-for-these-blocks) extra keys the plain path and the keyed path agree.
  RequestKeys k;
  k.mm_items = {{"img", 1000, 4}};
  RequestBlockHasher keyed;
  keyed.Reset(16, &k);
  keyed.Append(t);
  CHECK(keyed.hashes() == want);
}

TEST_CASE("Consecutive-token blocks hash as their materialized tokens", "[block_hash]") {
  for (int64_t B : {1, 3, 16, 32, 64, 128, 256, 512, 1000, 3000}) {
    for (TokenId first : {TokenId{0}, TokenId{12345}, TokenId{INT32_MAX - 4 * 3000}}) {
      INFO("block " << B << " first " << first);
      const int64_t n = 4;
      std::vector<TokenId> toks(static_cast<size_t>(n * B));
      std::iota(toks.begin(), toks.end(), first);
      std::vector<BlockHash> want, got = {42};  // appends after what is there
      const BlockHash last_want = HashFullBlocks(0x1234, toks, B, want);
      const BlockHash last_got = HashConsecutiveBlocks(0x1234, first, B, n, got);
      REQUIRE(got.size() == want.size() + 1);
      CHECK(std::vector<BlockHash>(got.begin() + 1, got.end()) == want);
      CHECK(last_got == last_want);
    }
  }
}

TEST_CASE("A hasher assigned hashes and a tail continues like one fed the tokens",
          "[block_hash]") {
  std::vector<TokenId> toks(100);
  std::iota(toks.begin(), toks.end(), 7);
  RequestBlockHasher fed, assigned;
  fed.Reset(16);
  fed.Append(std::span<const TokenId>(toks).first(70));
  std::vector<BlockHash> h;
  HashFullBlocks(kNoneHash, std::span<const TokenId>(toks).first(64), 16, h);
  assigned.Reset(16);
  assigned.Assign(h, std::span<const TokenId>(toks).subspan(64, 6));
  CHECK(assigned.num_tokens() == 70);
  CHECK(assigned.hashes() == fed.hashes());
  fed.Append(std::span<const TokenId>(toks).subspan(70));
  assigned.Append(std::span<const TokenId>(toks).subspan(70));
  CHECK(assigned.hashes() == fed.hashes());
  CHECK(assigned.num_tokens() == 100);
}

}  // namespace
}  // namespace kvsim
