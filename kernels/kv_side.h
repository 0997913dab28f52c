// KvSide and RowCopyParams: how every kvsim kernel finds the bytes it reads and writes.
//
// A KvSide is one end of a data movement: a KvLayout (core/kv_layout.h), the layer slot it
// addresses, the allocation(s) it lives in, and how a token index maps to a (manager block,
// position) pair — identity (a contiguous tensor), a block table (one sequence's pages) or a
// slot mapping (vLLM's reshape-and-cache, −1 = skip). Every address is
// `base + addr.ManagerOffset(...)` where `addr = layout.Addressing()` (the strides resolved
// once, on the host: KvLayout::ManagerOffset is the same function): no kernel does its own
// stride math. Index divisions use FastDivmod; CanImplement keeps every index below 2^31.
//
// A "row" is the unit the copy engine moves: the K half or the V half of one (token, head)
// cell, or the whole K|V cell when both sides keep K and V packed in the content dimension.
// Rows are contiguous on both sides, so a warp can move them with vector accesses.
//
// Host + device, header-only; owned by kernels/ (issue 5).
#pragma once

#include <cstdint>

#include "core/host_device.h"
#include "core/int_math.h"
#include "core/kv_layout.h"

namespace kvsim::kernels {

enum class TokenMap : uint8_t {
  kIdentity,     // token i sits at manager block i / N, position i % N
  kBlockTable,   // token i sits at manager block block_table[i / N], position i % N
  kSlotMapping,  // token i sits at slot slot_mapping[i] = block × N + position; < 0 = skip
};

struct KvSide {
  KvLayout layout;
  int64_t layer = 0;          // layer slot of `layout` this side reads or writes
  uint8_t* base_k = nullptr;  // allocation of the K half (host or device address)
  uint8_t* base_v = nullptr;  // allocation of the V half; == base_k for a KV cache
  int64_t v_byte0 = 0;        // content byte of the layout where the V half starts
  TokenMap map = TokenMap::kIdentity;
  const int32_t* block_table = nullptr;   // kBlockTable
  const int64_t* slot_mapping = nullptr;  // kSlotMapping
  // Derived from `layout` by Resolve() (CacheSide / ContiguousSide call it; so do the
  // kernels' MakeParams): call it again after changing `layout`.
  KvAddressing addr;
  FastDivmod per_block;  // manager_block_tokens()

  void Resolve() {
    addr = layout.Addressing();
    per_block = FastDivmod(layout.manager_block_tokens());
  }

  // Manager block and position of token i; false when the token has no slot.
  KVSIM_HOST_DEVICE bool Locate(int64_t i, int64_t* block, int64_t* pos) const {
    switch (map) {
      case TokenMap::kIdentity:
        per_block.DivMod(i, block, pos);
        return true;
      case TokenMap::kBlockTable:
        per_block.DivMod(i, block, pos);
        *block = block_table[*block];
        return true;
      case TokenMap::kSlotMapping: {
        const int64_t s = slot_mapping[i];
        if (s < 0) return false;
        per_block.DivMod(s, block, pos);
        return true;
      }
    }
    return false;
  }

  // Address of content byte `byte` of half `half` (0 = K, 1 = V) of (block, pos, head).
  KVSIM_HOST_DEVICE uint8_t* Address(int half, int64_t block, int64_t pos, int64_t head,
                                     int64_t byte) const {
    return (half ? base_v : base_k) +
           addr.ManagerOffset(layer, block, head, pos, (half ? v_byte0 : 0) + byte);
  }

  // True when K and V of a cell are one contiguous run of k_bytes + v_bytes.
  KVSIM_HOST_DEVICE bool kv_contiguous() const {
    return layout.kv_split == KvSplit::kPackedInContent && base_k == base_v &&
           v_byte0 == layout.k_bytes;
  }
};

// A KV cache side: K and V in one allocation, V at content byte k_bytes.
inline KvSide CacheSide(const KvLayout& layout, int64_t layer, void* base, TokenMap map,
                        const int32_t* block_table = nullptr,
                        const int64_t* slot_mapping = nullptr) {
  KvSide s;
  s.layout = layout;
  s.layer = layer;
  s.base_k = s.base_v = static_cast<uint8_t*>(base);
  s.v_byte0 = layout.k_bytes;
  s.map = map;
  s.block_table = block_table;
  s.slot_mapping = slot_mapping;
  s.Resolve();
  return s;
}

// The dense layout of a contiguous [tokens, heads, row_bytes] tensor (vLLM's key / value
// arguments): one block of `tokens` tokens, NHD.
inline KvLayout ContiguousLayout(int64_t tokens, int64_t heads, int64_t row_bytes) {
  KvLayout l;
  l.order = KvOrder::kLBNHC;
  l.num_layers = 1;
  l.num_blocks = 1;
  l.num_heads = heads;
  l.block_tokens = tokens > 0 ? tokens : 1;
  l.k_bytes = row_bytes;
  l.v_bytes = 0;
  return l;
}

// Separate contiguous K and V tensors of shape [tokens, heads, row_bytes].
inline KvSide ContiguousSide(int64_t tokens, int64_t heads, int64_t row_bytes, const void* key,
                             const void* value) {
  KvSide s;
  s.layout = ContiguousLayout(tokens, heads, row_bytes);
  s.base_k = static_cast<uint8_t*>(const_cast<void*>(key));
  s.base_v = static_cast<uint8_t*>(const_cast<void*>(value));
  s.v_byte0 = 0;
  s.map = TokenMap::kIdentity;
  s.Resolve();
  return s;
}

// Largest power of two ≤ 16 dividing every row start this side can produce and `row_bytes`.
// offset() is affine in block, head and token inside a half, so the starts are the origin
// plus integer combinations of the unit steps; all of them come from offset() itself.
inline int64_t RowAlignment(const KvSide& s, int64_t row_bytes, bool uses_v_half) {
  const KvLayout& l = s.layout;
  const auto addr = [&](uint8_t* base, int64_t b, int64_t h, int64_t t, int64_t byte) {
    return static_cast<int64_t>(reinterpret_cast<uintptr_t>(base)) +
           l.offset(s.layer, b, h, t, byte);
  };
  int64_t g = row_bytes;
  const int64_t o = addr(s.base_k, 0, 0, 0, 0);
  g = Gcd(g, o);
  if (l.num_blocks > 1) g = Gcd(g, addr(s.base_k, 1, 0, 0, 0) - o);
  if (l.num_heads > 1) g = Gcd(g, addr(s.base_k, 0, 1, 0, 0) - o);
  if (l.block_tokens > 1) g = Gcd(g, addr(s.base_k, 0, 0, 1, 0) - o);
  if (uses_v_half) g = Gcd(g, addr(s.base_v, 0, 0, 0, s.v_byte0));
  int64_t a = 16;
  while (a > 1 && (g == 0 ? false : g % a != 0)) a /= 2;
  return a;
}

// Everything a row-copy kernel (append, gather, conversion) needs; built by MakeParams() of
// each kernel's Arguments after CanImplement() accepted them.
struct RowCopyParams {
  KvSide src;
  KvSide dst;
  int64_t num_tokens = 0;
  int64_t num_heads = 0;
  int32_t num_halves = 1;  // rows per (token, head): 1 (K|V merged, or K only) or 2
  int32_t row_bytes = 0;   // bytes per row
  int32_t vec_bytes = 1;   // access width allowed on both sides (1, 2, 4, 8 or 16)
  FastDivmod halves_div;   // num_halves, num_heads, row_bytes / vec_bytes (set by Resolve())
  FastDivmod heads_div;
  FastDivmod chunks_div;

  // Derives the dividers and both sides' addressing from the fields above.
  void Resolve() {
    src.Resolve();
    dst.Resolve();
    halves_div = FastDivmod(num_halves);
    heads_div = FastDivmod(num_heads);
    chunks_div = FastDivmod(vec_bytes > 0 ? row_bytes / vec_bytes : 1);
  }

  KVSIM_HOST_DEVICE int64_t num_rows() const { return num_tokens * num_heads * num_halves; }

  // Source and destination of row r, or false when the token is skipped on either side.
  // Rows are ordered token-major, then head, then half, so a contiguous tensor is walked in
  // memory order. REQUIRES: r < num_rows() < 2^31 (CanImplement).
  KVSIM_HOST_DEVICE bool Row(int64_t r, const uint8_t** from, uint8_t** to) const {
    int64_t th = 0, half = 0, token = 0, head = 0;
    halves_div.DivMod(r, &th, &half);
    heads_div.DivMod(th, &token, &head);
    int64_t sb = 0, sp = 0, db = 0, dp = 0;
    if (!src.Locate(token, &sb, &sp) || !dst.Locate(token, &db, &dp)) return false;
    *from = src.Address(static_cast<int>(half), sb, sp, head, 0);
    *to = dst.Address(static_cast<int>(half), db, dp, head, 0);
    return true;
  }
};

}  // namespace kvsim::kernels
