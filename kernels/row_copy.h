// The three data-movement kernels of the GPU validation mode, as host Arguments:
//   * CacheAppend  — vLLM's reshape-and-cache: K/V of new tokens → a paged layout by slot
//                    mapping (−1 = skip);
//   * PagedGather  — the inverse: a paged layout → contiguous K/V, by slot mapping;
//   * LayoutConvert — P/D re-layout of a token range between two paged layouts, each side
//                    with its own block table: NHD↔HND, block re-chunking (either direction),
//                    pack/unpack of layer slots, padded↔unpadded pages, cross-layer↔per-layer,
//                    K/V split modes.
// Each follows Arguments → CanImplement() (a Status naming what is unsupported) →
// MakeParams() (the device RowCopyParams). All three lower to one row-copy engine whose host
// reference is kernels/reference/row_copy_ref.h and whose CUDA launcher is
// kernels/cuda/launch.h. The kernels move bytes and never look at values, so fp16, bf16 and
// fp8 are the same to them; the dtype is checked only for the supported-format contract.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "core/kv_layout.h"
#include "core/status.h"
#include "kernels/kv_side.h"

namespace kvsim::kernels {

struct CacheAppendArguments {
  KvLayout layout;         // the cache (a layer view or a whole slot / slab)
  int64_t layer = 0;       // layer slot of `layout` to write
  void* cache = nullptr;   // allocation base address
  DType dtype = DType::kBFloat16;
  int64_t num_tokens = 0;
  int64_t num_heads = 0;   // KV heads per rank; must equal layout.num_heads
  int64_t head_size = 0;   // D, 64..256
  const void* key = nullptr;    // [num_tokens, num_heads, head_size]
  const void* value = nullptr;  // same shape; null for K-only (MLA-style) layouts
  const int64_t* slot_mapping = nullptr;  // [num_tokens]; −1 = skip
};

struct PagedGatherArguments {
  KvLayout layout;
  int64_t layer = 0;
  const void* cache = nullptr;
  DType dtype = DType::kBFloat16;
  int64_t num_tokens = 0;
  int64_t num_heads = 0;
  int64_t head_size = 0;
  void* out_key = nullptr;    // [num_tokens, num_heads, head_size]
  void* out_value = nullptr;  // same; null for K-only layouts
  const int64_t* slot_mapping = nullptr;  // [num_tokens]; −1 = leave the output row alone
};

struct LayoutConvertArguments {
  KvLayout src_layout;
  int64_t src_layer = 0;
  const void* src = nullptr;
  const int32_t* src_block_table = nullptr;  // manager blocks of the source sequence
  KvLayout dst_layout;
  int64_t dst_layer = 0;
  void* dst = nullptr;
  const int32_t* dst_block_table = nullptr;
  int64_t num_tokens = 0;  // tokens [0, num_tokens) of the sequence are converted
};

// The gather that reads what `append` writes back out of the same cache (same layout, layer,
// dtype, tokens, heads and slot mapping) into out_key / out_value.
inline PagedGatherArguments ReadBackArguments(const CacheAppendArguments& append, void* out_key,
                                              void* out_value) {
  PagedGatherArguments g;
  g.layout = append.layout;
  g.layer = append.layer;
  g.cache = append.cache;
  g.dtype = append.dtype;
  g.num_tokens = append.num_tokens;
  g.num_heads = append.num_heads;
  g.head_size = append.head_size;
  g.out_key = out_key;
  g.out_value = out_value;
  g.slot_mapping = append.slot_mapping;
  return g;
}

Status CanImplement(const CacheAppendArguments& a);
Status CanImplement(const PagedGatherArguments& a);
Status CanImplement(const LayoutConvertArguments& a);

// REQUIRES: CanImplement(a).ok(). The vector width is chosen from the actual addresses.
RowCopyParams MakeParams(const CacheAppendArguments& a);
RowCopyParams MakeParams(const PagedGatherArguments& a);
RowCopyParams MakeParams(const LayoutConvertArguments& a);

// Bytes read + written by a row copy (what "achieved GB/s" counts; skipped rows excluded
// only where the count of skipped tokens is known, so callers pass the tokens that move).
inline int64_t MovedBytes(const RowCopyParams& p, int64_t moving_tokens) {
  return 2 * moving_tokens * p.num_heads * p.num_halves * p.row_bytes;
}

}  // namespace kvsim::kernels
