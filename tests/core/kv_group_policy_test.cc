// The per-kind group policies on their own (core/kv_group/), with hand-worked numbers: the
// registry's choice and each kind's properties, skipped tokens, blocks to allocate, the
// allocation itself over a small BlockPool, freeing skipped blocks, Mamba `align`'s state
// bookkeeping and chunk split. The hit finders and retention masks are covered in
// kv_cache_manager_test.cc and sparse_retention_test.cc.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <memory>
#include <vector>

#include "core/block_pool.h"
#include "core/kv_cache_spec.h"
#include "core/kv_group/chunked_local_policy.h"
#include "core/kv_group/full_attention_policy.h"
#include "core/kv_group/kv_group_policy.h"
#include "core/kv_group/mamba_align_policy.h"
#include "core/kv_group/mamba_all_policy.h"
#include "core/kv_group/sliding_window_policy.h"
#include "core/vllm_semantics.h"

namespace kvsim {
namespace {

using Ids = std::vector<BlockId>;

KvGroupConfig Group(KvGroupKind kind, int64_t B = 16) {
  KvGroupConfig g;
  g.kind = kind;
  g.block_size = B;
  return g;
}
KvGroupConfig Window(int64_t W, int64_t B = 16) {
  KvGroupConfig g = Group(KvGroupKind::kSlidingWindow, B);
  g.sliding_window = W;
  return g;
}
KvGroupConfig Chunked(int64_t C, int64_t B = 16) {
  KvGroupConfig g = Group(KvGroupKind::kChunkedLocal, B);
  g.attention_chunk_size = C;
  return g;
}
KvGroupConfig Mamba(MambaCacheMode mode, int64_t nspec = 0, int64_t B = 16) {
  KvGroupConfig g = Group(KvGroupKind::kMamba, B);
  g.mamba_mode = mode;
  g.num_speculative_blocks = nspec;
  return g;
}
KvGroupContext Context(int64_t max_num_batched_tokens = 64) {
  KvGroupContext c;
  c.scheduler_block_size = 16;
  c.hash_block_size = 16;
  c.max_num_batched_tokens = max_num_batched_tokens;
  return c;
}

TEST_CASE("Registry: one policy per kind, with its properties", "[kv_group]") {
  const KvGroupContext ctx = Context();
  struct Case {
    KvGroupConfig g;
    bool prefix_closed, sparse, defers, aligns;
  };
  const Case cases[] = {
      {Group(KvGroupKind::kFullAttention), true, false, false, false},
      {Window(33), false, true, false, false},
      {Chunked(64), false, false, false, false},
      {Mamba(MambaCacheMode::kAlign), false, true, true, true},
      {Mamba(MambaCacheMode::kAll), false, true, true, false},
      {Mamba(MambaCacheMode::kNone), false, true, true, false},  // allocates as `all`
  };
  for (const Case& c : cases) {
    const auto p = MakeKvGroupPolicy(c.g, ctx);
    CAPTURE(KvGroupKindName(c.g.kind), static_cast<int>(c.g.mamba_mode));
    CHECK(p->hit_is_prefix_closed() == c.prefix_closed);
    CHECK(p->retention_can_be_sparse() == c.sparse);
    CHECK(p->defers_hits_cached_this_step() == c.defers);
    CHECK(p->aligns_prefill_chunks() == c.aligns);
  }
  CHECK(dynamic_cast<FullAttentionPolicy*>(
            MakeKvGroupPolicy(Group(KvGroupKind::kFullAttention), ctx).get()) != nullptr);
  CHECK(dynamic_cast<MambaAlignPolicy*>(
            MakeKvGroupPolicy(Mamba(MambaCacheMode::kAlign), ctx).get()) != nullptr);
  CHECK(dynamic_cast<MambaAllPolicy*>(MakeKvGroupPolicy(Mamba(MambaCacheMode::kAll), ctx).get()) !=
        nullptr);
}

TEST_CASE("Skipped tokens and the per-request block cap", "[kv_group]") {
  const KvGroupContext ctx = Context(/*max_num_batched_tokens=*/64);
  const FullAttentionPolicy full(Group(KvGroupKind::kFullAttention), ctx);
  const SlidingWindowPolicy swa(Window(33), ctx);
  const ChunkedLocalPolicy chunk(Chunked(64), ctx);
  const MambaAllPolicy mamba(Mamba(MambaCacheMode::kAll), ctx);
  CHECK(full.NumSkippedTokens(1000) == 0);
  // W = 33: the next token reads the 32 before it, so tokens [0, n − 32) are out.
  CHECK(swa.NumSkippedTokens(50) == 18);
  CHECK(swa.NumSkippedTokens(32) == 0);
  // C = 64: every whole chunk before the current one.
  CHECK(chunk.NumSkippedTokens(130) == 128);
  CHECK(chunk.NumSkippedTokens(63) == 0);
  CHECK(mamba.NumSkippedTokens(50) == 49);
  // Caps: cdiv(min(W − 1 + 64, L), 16) + 1 and cdiv(min(C + 64, L), 16).
  CHECK(swa.MaxBlocksPerRequest(1000) == 96 / 16 + 1);
  CHECK(swa.MaxBlocksPerRequest(40) == 3 + 1);
  CHECK(chunk.MaxBlocksPerRequest(1000) == 128 / 16);
  CHECK(chunk.MaxBlocksPerRequest(100) == 7);
  // The same formulas the page planner sizes the pool with (core/kv_cache_spec.h).
  static_assert(SlidingWindowMaxBlocks(33, 16, 64, 40) == 4);
  static_assert(ChunkedLocalMaxBlocks(64, 16, 64, 100) == 7);
  CHECK(full.MaxBlocksPerRequest(1000) == 0);
  CHECK(mamba.MaxBlocksPerRequest(1000) == 0);
}

TEST_CASE("Blocks to allocate per kind", "[kv_group]") {
  const KvGroupContext ctx = Context();
  const GroupBlockTable empty;
  GroupBlockTable two;
  two.blocks = {5, 6};

  const FullAttentionPolicy full(Group(KvGroupKind::kFullAttention), ctx);
  // 50 tokens → 4 blocks; a 2-block hit or 2 held blocks leave 2; a cap of 3 leaves 1.
  CHECK(full.NumNewBlocks({50, 50, 0}, 0, empty, 0) == 4);
  CHECK(full.NumNewBlocks({50, 50, 0}, 2, empty, 0) == 2);
  CHECK(full.NumNewBlocks({50, 50, 0}, 0, two, 0) == 2);
  CHECK(full.NumNewBlocks({50, 50, 0}, 2, empty, 3) == 1);
  CHECK(full.NumNewBlocks({20, 20, 0}, 0, two, 0) == 0);

  const SlidingWindowPolicy swa(Window(33), ctx);
  // 100 tokens → 7 blocks; 80 computed skip 48 tokens = 3 blocks that need none.
  CHECK(swa.NumNewBlocks({100, 100, 80}, 0, empty, 0) == 4);
  // Holding 2 is less than the 3 skipped: still 4. With a cap of 5: 5 − 3 = 2.
  CHECK(swa.NumNewBlocks({100, 100, 80}, 0, two, 0) == 4);
  CHECK(swa.NumNewBlocks({100, 100, 80}, 0, empty, 5) == 2);

  // Mamba all: the speculative blocks count as B tokens each: 40 + 16 → 4 blocks.
  const MambaAllPolicy all(Mamba(MambaCacheMode::kAll, /*nspec=*/1), ctx);
  CHECK(all.NumNewBlocks({40, 40, 0}, 0, empty, 0) == 4);
  // 40 computed skip 39 tokens = 2 blocks: 4 − 2.
  CHECK(all.NumNewBlocks({40, 40, 40}, 0, empty, 0) == 2);

  // Mamba align: the running state (+ the speculative ones the first time), sized by the
  // tokens without lookahead.
  const MambaAlignPolicy align(Mamba(MambaCacheMode::kAlign, /*nspec=*/1), ctx);
  CHECK(align.NumNewBlocks({200, 40, 0}, 0, empty, 0) == 2);
  GroupBlockTable allocated;
  allocated.blocks = {0, 0, 7, 8};  // required = cdiv(40, 16) + 1 = 4: nothing missing
  allocated.state_allocated = true;
  CHECK(align.NumNewBlocks({40, 40, 0}, 0, allocated, 0) == 0);
  CHECK(align.NumNewBlocks({50, 50, 0}, 0, allocated, 0) == 1);
}

TEST_CASE("Sliding window: allocation skips the front, freeing goes back to front", "[kv_group]") {
  const auto sem = GENERATE(VllmSemantics::kClassic, VllmSemantics::kLatest);
  BlockPool pool(8, true, sem);  // free: 1..7
  const SlidingWindowPolicy swa(Window(33), Context());
  GroupBlockTable t;
  Ids scratch;
  // 64 tokens from scratch: 4 blocks, nothing skipped.
  swa.AllocateNewBlocks({64, 64, 0}, t, pool);
  CHECK(t.blocks == Ids{1, 2, 3, 4});
  // 70 processed: tokens [0, 38) are out → blocks 0 and 1 (back to front: 2, then 1).
  swa.RemoveSkippedBlocks(70, t, pool, scratch);
  CHECK(t.blocks == Ids{kNullBlock, kNullBlock, 3, 4});
  // Unhashed blocks: [latest] to the head in release order, [classic] to the tail.
  CHECK(pool.FreeQueue() ==
        (sem == VllmSemantics::kLatest ? Ids{2, 1, 5, 6, 7} : Ids{5, 6, 7, 2, 1}));
  pool.CheckInvariants();

  // A fresh table jumping to 100 tokens with 80 computed: 3 null blocks, then 4 new ones.
  GroupBlockTable u;
  swa.AllocateNewBlocks({100, 100, 80}, u, pool);
  CHECK(u.blocks.size() == 7);
  CHECK(u.blocks[0] == kNullBlock);
  CHECK(u.blocks[2] == kNullBlock);
  CHECK(u.blocks[3] != kNullBlock);
  CHECK(pool.num_free_blocks() == 1);
}

TEST_CASE("Mamba align: state blocks, the previous state and its release", "[kv_group]") {
  BlockPool pool(10, true, VllmSemantics::kClassic);  // free: 1..9
  const MambaAlignPolicy align(Mamba(MambaCacheMode::kAlign, /*nspec=*/1), Context());
  GroupBlockTable t;
  Ids scratch;
  // 40 tokens: required = cdiv(40, 16) + 1 = 4; positions 0, 1 null, state + spec new.
  align.AllocateNewBlocks({40, 40, 0}, t, pool);
  CHECK(t.blocks == Ids{0, 0, 1, 2});
  CHECK(t.state_allocated);
  CHECK(t.last_state == -1);
  // Up to 50 tokens: required 5; the running state so far (index 4 − 1 − 1 = 2) is kept
  // as the previous state; one new block.
  align.AllocateNewBlocks({50, 50, 40}, t, pool);
  CHECK(t.blocks == Ids{0, 0, 1, 2, 3});
  CHECK(t.last_state == 2);
  // Lookahead slots do not count: 200 slots, 50 main tokens → nothing new.
  align.AllocateNewBlocks({200, 50, 40}, t, pool);
  CHECK(t.blocks.size() == 5);
  // 50 processed: skipped 49 tokens = 3 blocks → index 2 (block 1) goes, back to front,
  // stopping at the null before it; the previous-state rule then finds it null.
  align.RemoveSkippedBlocks(50, t, pool, scratch);
  CHECK(t.blocks == Ids{0, 0, 0, 2, 3});
  CHECK(pool.FreeQueue() == Ids{4, 5, 6, 7, 8, 9, 1});
  pool.CheckInvariants();
}

TEST_CASE("Mamba align: chunk split per snapshot", "[kv_group]") {
  KvGroupContext ctx = Context();
  PrefillChunk c;
  c.start = 0;
  c.num_new_tokens = 40;
  c.num_tokens = 100;
  c.num_prompt_tokens = 100;
  c.chunk_limit = 1 << 20;
  ctx.semantics = VllmSemantics::kClassic;
  // Short of the last cacheable boundary (96): rounded down to 32.
  CHECK(MambaAlignPolicy(Mamba(MambaCacheMode::kAlign), ctx).AlignPrefillChunk(c) == 32);
  c.start = 90;  // crossing 96: stops there
  c.num_new_tokens = 10;
  CHECK(MambaAlignPolicy(Mamba(MambaCacheMode::kAlign), ctx).AlignPrefillChunk(c) == 6);
  // Latest, starting mid-block at 40: stops at the next boundary, 48.
  ctx.semantics = VllmSemantics::kLatest;
  c.start = 40;
  c.num_new_tokens = 40;
  CHECK(MambaAlignPolicy(Mamba(MambaCacheMode::kAlign), ctx).AlignPrefillChunk(c) == 8);
  // Other kinds never trim.
  CHECK(FullAttentionPolicy(Group(KvGroupKind::kFullAttention), ctx).AlignPrefillChunk(c) == 40);
}

}  // namespace
}  // namespace kvsim
