// KvCacheSpec: what one layer stores per block on one tensor-parallel rank, as vLLM's
// `KVCacheSpec` subclasses describe it (reference §1). It is a plain value type; every page
// size in kvsim comes from its methods, and nothing else multiplies heads × head size ×
// element size.
//
// Attention page ([latest] §1.2):  H_slots × B × C, with C the content bytes of one
//   (head slot, token) cell: (D + Dv) × s for plain dtypes, (D + Dv) + 2·4 for fp8 with
//   per-token-head scales, D/2 + D/16 with H_slots = 2H for nvfp4, and for MLA one latent of
//   D × s (656 bytes for fp8_ds_mla).
// Mamba page (§1.3): Σ prod(shape) × size(dtype) over the layer's states.
// page_size_padded, when set, replaces the page (it must not be smaller), and the pack of
// PR #35703 multiplies the page by pack_size.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/int_math.h"

namespace kvsim {

enum class LayerKind : uint8_t { kFullAttention, kSlidingWindow, kChunkedLocal, kMla, kMamba };

constexpr std::string_view LayerKindName(LayerKind k) {
  switch (k) {
    case LayerKind::kFullAttention: return "full_attention";
    case LayerKind::kSlidingWindow: return "sliding_window";
    case LayerKind::kChunkedLocal: return "chunked_local";
    case LayerKind::kMla: return "mla";
    case LayerKind::kMamba: return "mamba";
  }
  return "?";
}

constexpr bool IsAttention(LayerKind k) { return k != LayerKind::kMamba; }

// One recurrent state array of a Mamba-style layer, per rank.
struct MambaState {
  std::string name;              // "conv", "ssm", ...
  std::vector<int64_t> shape;    // per rank
  DType dtype = DType::kBFloat16;

  int64_t bytes() const {
    int64_t n = ElementBytes(dtype);
    for (int64_t d : shape) n *= d;
    return n;
  }
  bool operator==(const MambaState&) const = default;
};

struct KvCacheSpec {
  LayerKind kind = LayerKind::kFullAttention;
  int64_t block_size = 16;     // tokens per manager block (Mamba: tokens per state block)
  int64_t num_kv_heads = 1;    // per rank
  int64_t head_size = 0;       // D
  int64_t head_size_v = 0;     // Dv (0 for MLA)
  DType dtype = DType::kBFloat16;  // resolved KV dtype, never kAuto
  int64_t sliding_window = 0;
  int64_t attention_chunk_size = 0;
  std::vector<MambaState> mamba_states;  // conv first, then SSM, in page order
  int64_t num_speculative_blocks = 0;    // Mamba: extra state blocks for spec decode
  int64_t page_size_padded = 0;          // 0 = not padded (per layer)
  int64_t pack_size = 1;                 // attention layers sharing one page (PR #35703)
  bool indexes_kv_by_block_stride = true;  // backend can address a padded page

  bool is_attention() const { return IsAttention(kind); }

  // Head slots per cell row: nvfp4 keeps K and V as separate slots.
  int64_t num_head_slots() const {
    if (kind == LayerKind::kMla) return 1;
    return dtype == DType::kNvfp4 ? 2 * num_kv_heads : num_kv_heads;
  }
  // K content bytes per (head slot, token); for nvfp4 the bytes of one slot.
  int64_t k_content_bytes() const {
    if (kind == LayerKind::kMla) return dtype == DType::kFp8DsMla ? 656 : head_size * ElementBytes(dtype);
    if (dtype == DType::kNvfp4) return head_size / 2 + head_size / 16;
    if (dtype == DType::kFp8PerTokenHead) return head_size + 4;
    return head_size * ElementBytes(dtype);
  }
  // V content bytes per (head slot, token): 0 where a row holds one thing (MLA, nvfp4 slots).
  int64_t v_content_bytes() const {
    if (kind == LayerKind::kMla || dtype == DType::kNvfp4) return 0;
    if (dtype == DType::kFp8PerTokenHead) return head_size_v + 4;
    return head_size_v * ElementBytes(dtype);
  }
  int64_t content_bytes() const { return k_content_bytes() + v_content_bytes(); }

  int64_t mamba_state_bytes() const {
    int64_t n = 0;
    for (const auto& s : mamba_states) n += s.bytes();
    return n;
  }
  // Attention bytes of one token of one layer (unpadded).
  int64_t bytes_per_token() const { return num_head_slots() * content_bytes(); }

  // One layer's unpadded page (vLLM's real_page_size_bytes).
  int64_t real_page_bytes() const {
    if (kind == LayerKind::kMamba) return mamba_state_bytes();
    return block_size * bytes_per_token();
  }
  // One layer's page including padding.
  int64_t layer_page_bytes() const {
    return page_size_padded > 0 ? page_size_padded : real_page_bytes();
  }
  // The page the allocator sees: a pack of pack_size layers shares it.
  int64_t page_bytes() const { return pack_size * layer_page_bytes(); }
  // Bytes of the page that hold no data.
  int64_t padding_bytes() const { return page_bytes() - pack_size * real_page_bytes(); }

  bool operator==(const KvCacheSpec&) const = default;
};

// The most blocks one request holds at once in a windowed layer (vLLM's
// max_memory_usage_bytes / page, §1.2), for a sequence of `max_len` tokens with up to
// `max_in_flight_tokens` scheduled in one step. The page planner sizes the pool with them and
// the KV cache manager's group policies bound the whole-sequence admission check with them,
// so the two can never disagree.
// Sliding window W: the window before the oldest token in flight, the tokens in flight, and
// one block for the window's misalignment.
constexpr int64_t SlidingWindowMaxBlocks(int64_t window, int64_t block_size,
                                         int64_t max_in_flight_tokens, int64_t max_len) {
  return CeilDiv(std::min(window - 1 + max_in_flight_tokens, max_len), block_size) + 1;
}
// Chunked local attention C: one chunk and the tokens in flight.
constexpr int64_t ChunkedLocalMaxBlocks(int64_t chunk, int64_t block_size,
                                        int64_t max_in_flight_tokens, int64_t max_len) {
  return CeilDiv(std::min(chunk + max_in_flight_tokens, max_len), block_size);
}

}  // namespace kvsim
