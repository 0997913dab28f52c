// Paged decode attention (split-K / flash-decoding, GQA) over any KvLayout.
//
// One query token per sequence attends to its sequence's K/V, found through a block table
// of manager blocks and KvLayout::ManagerOffset. Work is split into partitions of
// `split_tokens` tokens; partition boundaries, the token → thread assignment and every
// reduction order are functions of the token index only — never of the block size, the
// page stride or the physical order — so the result is bit-identical across layouts that
// hold the same K/V values (the GPU validation mode asserts exactly that). Accumulation is
// fp32; the output is fp32. The host reference (reference/decode_attention_ref.h) computes
// the same function with Eigen in fp64.
//
// Arguments → CanImplement() → DecodeAttentionParams, as for the data-movement kernels.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "core/int_math.h"
#include "core/kv_layout.h"
#include "core/status.h"

namespace kvsim::kernels {

struct DecodeAttentionArguments {
  KvLayout layout;
  int64_t layer = 0;
  const void* cache = nullptr;
  DType dtype = DType::kBFloat16;  // KV and query format: fp16 or bf16
  int64_t batch = 0;
  int64_t num_q_heads = 0;
  int64_t num_kv_heads = 0;   // must equal layout.num_heads; num_q_heads % num_kv_heads == 0
  int64_t head_size = 0;      // 64, 128 or 256
  const void* query = nullptr;            // [batch, num_q_heads, head_size]
  const int32_t* block_tables = nullptr;  // [batch, max_blocks_per_seq] manager blocks
  int64_t max_blocks_per_seq = 0;
  const int32_t* seq_lens = nullptr;      // [batch], each in [1, max_seq_len]
  int64_t max_seq_len = 0;                // sizes the partition grid
  float scale = 0;                        // softmax scale (usually 1/sqrt(D))
  int64_t split_tokens = 0;  // partition size in tokens: 0 = auto (SplitTokens), else a
                             // multiple of 32 in [32, 1024]
  float* out = nullptr;                   // [batch, num_q_heads, head_size] fp32
  float* workspace = nullptr;             // WorkspaceFloats() floats
};

// Query heads one CTA handles (the kernel is compiled for 1, 2, 4 and 8); larger groups
// take several passes over the KV, most of the re-read hitting L2.
inline int64_t HeadsPerPass(int64_t group) {
  return group <= 1 ? 1 : group == 2 ? 2 : group <= 4 ? 4 : 8;
}

// The partition size. Auto mode derives it from the token count alone — batch, heads and
// max_seq_len, never the layout — aiming at ≥ 1024 CTAs so short batches are not latency
// bound: ceil(max_seq_len / splits) rounded up to 32 and clamped to [64, 512].
inline int64_t SplitTokens(const DecodeAttentionArguments& a) {
  if (a.split_tokens > 0) return a.split_tokens;
  const int64_t group = a.num_kv_heads > 0 ? a.num_q_heads / a.num_kv_heads : 1;
  const int64_t passes = (group + HeadsPerPass(group) - 1) / HeadsPerPass(group);
  const int64_t ctas = a.batch * a.num_kv_heads * passes;
  const int64_t splits = ctas > 0 ? (1024 + ctas - 1) / ctas : 1;
  int64_t p = (a.max_seq_len + splits - 1) / splits;
  p = (p + 31) / 32 * 32;
  return p < 64 ? 64 : (p > 512 ? 512 : p);
}

inline int64_t NumSplits(const DecodeAttentionArguments& a) {
  const int64_t p = SplitTokens(a);
  return p > 0 ? (a.max_seq_len + p - 1) / p : 0;
}
// Partial results per (sequence, query head, partition): max, sum and D accumulators.
inline int64_t WorkspaceFloats(const DecodeAttentionArguments& a) {
  return a.batch * a.num_q_heads * NumSplits(a) * (a.head_size + 2);
}
// KV bytes one CTA reads: one partition of one KV head (the time model's critical-path item).
inline int64_t DecodeItemBytes(const DecodeAttentionArguments& a) {
  const int64_t p = SplitTokens(a);
  return (p < a.max_seq_len ? p : a.max_seq_len) * (a.layout.k_bytes + a.layout.v_bytes);
}
// KV bytes one call reads when every sequence has max_seq_len tokens (the "% of peak" count).
inline int64_t DecodeKvBytes(const DecodeAttentionArguments& a, int64_t total_tokens) {
  return total_tokens * a.num_kv_heads * (a.layout.k_bytes + a.layout.v_bytes);
}

Status CanImplement(const DecodeAttentionArguments& a);

// Device parameters: the arguments plus the derived grid shape.
struct DecodeAttentionParams {
  DecodeAttentionArguments args;
  int64_t group = 1;        // query heads per KV head
  int64_t head_passes = 1;  // CTAs per (sequence, KV head, partition): ceil(group / kG)
  int64_t heads_per_pass = 1;
  int64_t num_splits = 0;
  int64_t split_tokens = 0;  // SplitTokens(args)
  KvAddressing addr;         // args.layout.Addressing(): the kernel's only stride math
  FastDivmod per_block;      // args.layout.manager_block_tokens()
  bool head_major = true;    // grid order, set by the launcher (scheduling only, not results)
};

// REQUIRES: CanImplement(a).ok().
DecodeAttentionParams MakeParams(const DecodeAttentionArguments& a);

}  // namespace kvsim::kernels
