// KvLayout: the one descriptor of a physical KV allocation, shared by the planner, the
// simulator, the viewer and the CUDA kernels. It speaks vLLM's standardized `[L,B,H,N,C]`
// vocabulary (RFC #42082 / PR #51718):
//   L  layer slots that share the allocation (pack members, or every layer for cross-layer)
//   B  kernel blocks (a manager block holds `kernel_split` of them)
//   H  head slots (KV heads per rank; 1 for MLA and Mamba state pages)
//   N  tokens per kernel block
//   C  content bytes per (head, token): K bytes then V bytes, packed in one row
// A physical layout is a permutation of those axes (KvOrder) plus three escapes from density:
//   * block_stride / layer_stride larger than dense: padded pages (PR #45181) and packs;
//   * base_offset: a pack member's or a cross-layer layer's start inside the block;
//   * kv_split: where K and V live when they are not packed into C (classic and legacy layouts).
// offset() is the only stride arithmetic in kvsim: it is KvAddressing::offset() over the
// strides that Addressing() resolves, and kernels keep that resolved form in their launch
// parameters so that the permutation is not re-derived per address (a run-time axis order
// would otherwise be walked through a local-memory array on every call). Everything here is
// constexpr and usable in CUDA kernels; Decode() (the inverse, for the viewer and tests) is
// host-only but header-only.
#pragma once

#include <cstdint>

#include "core/host_device.h"

namespace kvsim {

// Physical orders of the logical axes, outermost first. NHD is LBNHC and HND is LBHNC with
// one layer slot; the B-first orders are the cross-layer / packed layouts.
enum class KvOrder : uint8_t { kLBHNC, kLBNHC, kLHBNC, kBLHNC, kBLNHC, kBHLNC };

// Where V sits relative to K.
enum class KvSplit : uint8_t {
  kPackedInContent,  // [latest] one content row per (head, token): K bytes then V bytes
  kKvInBlock,        // [classic] each layer's block holds a K block then a V block: (B, 2, ...)
  kKvFirstTensor,    // [legacy FlashAttention] all K blocks, then all V blocks: (2, B, ...)
};

struct KvCoord {
  int64_t layer = 0;  // layer slot
  int64_t block = 0;  // kernel block
  int64_t head = 0;
  int64_t token = 0;  // token within the kernel block
  int64_t byte = 0;   // content byte: [0, k_bytes) is K, [k_bytes, k_bytes + v_bytes) is V
};

// A KvLayout with its strides resolved: the affine map offset() evaluates. Built only by
// KvLayout::Addressing(); KvLayout::offset() and ManagerOffset() are these two functions
// over a freshly resolved copy, so the formula exists once. Kernels build it on the host and
// read it from their parameters, where every field is a constant operand.
struct KvAddressing {
  int64_t stride_s = 0;  // bytes between the K half and the V half (split layouts)
  int64_t stride_l = 0;
  int64_t stride_b = 0;
  int64_t stride_h = 0;
  int64_t stride_n = 0;
  int64_t base_offset = 0;
  // Content bytes at or past `v_from` live in the V half: k_bytes for split layouts, never
  // (INT64_MAX) when K and V are packed in one content row.
  int64_t v_from = INT64_MAX;
  int64_t k_bytes = 0;
  int64_t block_tokens = 1;  // kernel block
  int64_t kernel_split = 1;

  KVSIM_HOST_DEVICE constexpr int64_t offset(int64_t layer, int64_t block, int64_t head,
                                             int64_t token, int64_t byte) const {
    int64_t half = 0;
    if (byte >= v_from) {
      half = 1;
      byte -= k_bytes;
    }
    return base_offset + half * stride_s + layer * stride_l + block * stride_b +
           head * stride_h + token * stride_n + byte;
  }

  // Token `token` of manager block `manager_block` lies in kernel block
  // manager_block * kernel_split + token / N at position token % N (reference §4.3).
  KVSIM_HOST_DEVICE constexpr int64_t ManagerOffset(int64_t layer, int64_t manager_block,
                                                    int64_t head, int64_t token,
                                                    int64_t byte) const {
    if (kernel_split == 1)  // the common case: no division on the kernels' hot path
      return offset(layer, manager_block, head, token, byte);
    return offset(layer, manager_block * kernel_split + token / block_tokens, head,
                  token % block_tokens, byte);
  }
};

struct KvLayout {
  // The logical axes with the kv-half axis S in front: S, L, B, H, N, C.
  enum Axis : int { kS = 0, kL = 1, kB = 2, kH = 3, kN = 4, kC = 5, kNumAxes = 6 };

  KvOrder order = KvOrder::kLBNHC;
  KvSplit kv_split = KvSplit::kPackedInContent;
  int64_t num_layers = 1;    // L
  int64_t num_blocks = 1;    // B (kernel blocks)
  int64_t num_heads = 1;     // H
  int64_t block_tokens = 1;  // N (kernel block)
  int64_t k_bytes = 0;       // K content bytes per (head, token)
  int64_t v_bytes = 0;       // V content bytes per (head, token); 0 for MLA / Mamba state
  int64_t block_stride = 0;  // bytes between kernel blocks; 0 = dense
  int64_t layer_stride = 0;  // bytes between layer slots; 0 = dense
  int64_t base_offset = 0;   // bytes added to every offset
  int64_t kernel_split = 1;  // kernel blocks per manager block
  // Bytes of the allocation that offsets index from its byte 0, when this layout is a view
  // of a larger one (a pack member, one layer of a stack, one layer of a cross-layer slab).
  // 0 = derived: base_offset plus the layout's own outermost extent × stride.
  int64_t allocation = 0;
  // Layer slots the strides are computed with, when this is a LayerView of a stack of them:
  // axes outside L (S for K/V-first tensors, H in BHLNC) keep the stack's strides. 0 = L.
  int64_t stride_layers = 0;

  KVSIM_HOST_DEVICE constexpr int64_t content_bytes() const { return k_bytes + v_bytes; }
  KVSIM_HOST_DEVICE constexpr int64_t num_halves() const {
    return kv_split == KvSplit::kPackedInContent ? 1 : 2;
  }
  // Bytes per half-row: the whole row when packed, one of K or V otherwise (they must match).
  KVSIM_HOST_DEVICE constexpr int64_t row_bytes() const {
    return kv_split == KvSplit::kPackedInContent ? content_bytes() : k_bytes;
  }
  KVSIM_HOST_DEVICE constexpr int64_t manager_block_tokens() const {
    return block_tokens * kernel_split;
  }
  KVSIM_HOST_DEVICE constexpr int64_t num_manager_blocks() const {
    return num_blocks / kernel_split;
  }

  // Physical axis order, outermost first.
  KVSIM_HOST_DEVICE constexpr void AxisOrder(int out[kNumAxes]) const {
    int lbhnc[5] = {kL, kB, kH, kN, kC};
    switch (order) {
      case KvOrder::kLBHNC: lbhnc[0] = kL; lbhnc[1] = kB; lbhnc[2] = kH; lbhnc[3] = kN; break;
      case KvOrder::kLBNHC: lbhnc[0] = kL; lbhnc[1] = kB; lbhnc[2] = kN; lbhnc[3] = kH; break;
      case KvOrder::kLHBNC: lbhnc[0] = kL; lbhnc[1] = kH; lbhnc[2] = kB; lbhnc[3] = kN; break;
      case KvOrder::kBLHNC: lbhnc[0] = kB; lbhnc[1] = kL; lbhnc[2] = kH; lbhnc[3] = kN; break;
      case KvOrder::kBLNHC: lbhnc[0] = kB; lbhnc[1] = kL; lbhnc[2] = kN; lbhnc[3] = kH; break;
      case KvOrder::kBHLNC: lbhnc[0] = kB; lbhnc[1] = kH; lbhnc[2] = kL; lbhnc[3] = kN; break;
    }
    int k = 0;
    if (kv_split == KvSplit::kKvFirstTensor) out[k++] = kS;
    // Classic blocks-first layouts put [K block | V block] inside each layer's block: S goes
    // right after the later of B and L (after B alone when H separates them, as in LHBNC).
    const int s_after = (lbhnc[0] == kB && (lbhnc[1] == kL || lbhnc[2] == kL)) ? kL : kB;
    for (int i = 0; i < 4; ++i) {  // lbhnc[4] is always C
      out[k++] = lbhnc[i];
      if (lbhnc[i] == s_after && kv_split == KvSplit::kKvInBlock) out[k++] = kS;
    }
    // Packed: S has extent 1, so its place (just outside C) does not matter.
    if (kv_split == KvSplit::kPackedInContent) out[k++] = kS;
    out[k] = kC;
  }

  KVSIM_HOST_DEVICE constexpr int64_t Extent(int axis) const {
    switch (axis) {
      case kS: return num_halves();
      case kL: return num_layers;
      case kB: return num_blocks;
      case kH: return num_heads;
      case kN: return block_tokens;
      default: return row_bytes();
    }
  }

  // Byte strides of every axis: dense from the inside out, except where a block or layer
  // stride is given (padding, packs). An explicit stride replaces the dense one and the axes
  // outside it build on it.
  KVSIM_HOST_DEVICE constexpr void Strides(int64_t stride[kNumAxes]) const {
    int ord[kNumAxes] = {0, 0, 0, 0, 0, 0};
    AxisOrder(ord);
    int64_t running = 1;
    for (int i = kNumAxes - 1; i >= 0; --i) {
      const int a = ord[i];
      int64_t s = running;
      if (a == kB && block_stride > 0) s = block_stride;
      if (a == kL && layer_stride > 0) s = layer_stride;
      stride[a] = s;
      running = s * (a == kL && stride_layers > 0 ? stride_layers : Extent(a));
    }
  }

  // Bytes of the whole allocation this layout lives in, counted from the byte that offset 0
  // names: every offset() lies in [base_offset, allocation_bytes()). A view (LayerView, a
  // pack member, a layer of a slab) reports the allocation it shares with its siblings.
  KVSIM_HOST_DEVICE constexpr int64_t allocation_bytes() const {
    if (allocation > 0) return allocation;
    int ord[kNumAxes] = {0, 0, 0, 0, 0, 0};
    AxisOrder(ord);
    int64_t stride[kNumAxes] = {0, 0, 0, 0, 0, 0};
    Strides(stride);
    return base_offset + stride[ord[0]] * Extent(ord[0]);
  }
  // Bytes that hold K/V content: what offset() can reach.
  KVSIM_HOST_DEVICE constexpr int64_t content_total_bytes() const {
    return num_layers * num_blocks * num_heads * block_tokens * content_bytes();
  }

  // Bytes of one manager block (page) as the manager sees it: kernel_split kernel blocks.
  KVSIM_HOST_DEVICE constexpr int64_t manager_page_bytes() const {
    int64_t stride[kNumAxes] = {0, 0, 0, 0, 0, 0};
    Strides(stride);
    return stride[kB] * kernel_split;
  }

  // The strides of every axis resolved once (see KvAddressing).
  KVSIM_HOST_DEVICE constexpr KvAddressing Addressing() const {
    int64_t stride[kNumAxes] = {0, 0, 0, 0, 0, 0};
    Strides(stride);
    KvAddressing a;
    a.stride_s = stride[kS];
    a.stride_l = stride[kL];
    a.stride_b = stride[kB];
    a.stride_h = stride[kH];
    a.stride_n = stride[kN];
    a.base_offset = base_offset;
    a.v_from = kv_split == KvSplit::kPackedInContent ? INT64_MAX : k_bytes;
    a.k_bytes = k_bytes;
    a.block_tokens = block_tokens;
    a.kernel_split = kernel_split;
    return a;
  }

  // Byte offset of content byte `byte` of (layer slot, kernel block, head, token).
  // REQUIRES: every coordinate inside its extent.
  KVSIM_HOST_DEVICE constexpr int64_t offset(int64_t layer, int64_t block, int64_t head,
                                             int64_t token, int64_t byte) const {
    return Addressing().offset(layer, block, head, token, byte);
  }

  // The same byte addressed by manager block and the token's position in it: the kernel
  // block split (reference §4.3) maps token t of manager block m to kernel block
  // m * kernel_split + t / N, token t % N.
  KVSIM_HOST_DEVICE constexpr int64_t ManagerOffset(int64_t layer, int64_t manager_block,
                                                    int64_t head, int64_t token,
                                                    int64_t byte) const {
    return Addressing().ManagerOffset(layer, manager_block, head, token, byte);
  }

  // A single layer slot's view of this allocation (what vLLM hands one attention layer):
  // the same strides, one layer, and the slot's start folded into base_offset.
  KVSIM_HOST_DEVICE constexpr KvLayout LayerView(int64_t layer) const {
    int64_t stride[kNumAxes] = {0, 0, 0, 0, 0, 0};
    Strides(stride);
    KvLayout v = *this;
    v.stride_layers = stride_layers > 0 ? stride_layers : num_layers;
    v.num_layers = 1;
    v.base_offset = base_offset + layer * stride[kL];
    v.block_stride = stride[kB];
    v.layer_stride = stride[kL];
    v.allocation = allocation_bytes();
    // Offsets stay absolute in the shared allocation, so a kernel given the allocation's
    // base pointer and this view touches only this slot's bytes.
    return v;
  }

  // Inverse of offset() over the allocation: which cell a byte belongs to, or false when
  // the byte is padding (or belongs to no coordinate of this layout).
  constexpr bool Decode(int64_t byte_offset, KvCoord* out) const {
    int ord[kNumAxes] = {0, 0, 0, 0, 0, 0};
    AxisOrder(ord);
    int64_t stride[kNumAxes] = {0, 0, 0, 0, 0, 0};
    Strides(stride);
    int64_t rem = byte_offset - base_offset;
    if (rem < 0) return false;
    int64_t idx[kNumAxes] = {0, 0, 0, 0, 0, 0};
    // Axes sorted by decreasing stride give a mixed-radix decomposition; strides with
    // overrides can only be larger than the span inside them, never smaller.
    int sorted[kNumAxes] = {0, 1, 2, 3, 4, 5};
    for (int i = 0; i < kNumAxes; ++i) sorted[i] = ord[i];
    for (int i = 1; i < kNumAxes; ++i) {
      for (int j = i; j > 0 && stride[sorted[j]] > stride[sorted[j - 1]]; --j) {
        int t = sorted[j];
        sorted[j] = sorted[j - 1];
        sorted[j - 1] = t;
      }
    }
    for (int i = 0; i < kNumAxes; ++i) {
      const int a = sorted[i];
      if (Extent(a) == 1) continue;
      const int64_t q = rem / stride[a];
      if (q >= Extent(a)) return false;
      idx[a] = q;
      rem -= q * stride[a];
    }
    if (rem != 0) return false;
    out->layer = idx[kL];
    out->block = idx[kB];
    out->head = idx[kH];
    out->token = idx[kN];
    out->byte = idx[kC] + (idx[kS] == 1 ? k_bytes : 0);
    return true;
  }
};

constexpr const char* KvOrderName(KvOrder o) {
  switch (o) {
    case KvOrder::kLBHNC: return "LBHNC";
    case KvOrder::kLBNHC: return "LBNHC";
    case KvOrder::kLHBNC: return "LHBNC";
    case KvOrder::kBLHNC: return "BLHNC";
    case KvOrder::kBLNHC: return "BLNHC";
    case KvOrder::kBHLNC: return "BHLNC";
  }
  return "?";
}

constexpr const char* KvSplitName(KvSplit s) {
  switch (s) {
    case KvSplit::kPackedInContent: return "packed_content";
    case KvSplit::kKvInBlock: return "kv_in_block";
    case KvSplit::kKvFirstTensor: return "kv_first_tensor";
  }
  return "?";
}

}  // namespace kvsim
