// CanImplement() and MakeParams() of the data-movement kernels (see row_copy.h).
#include "kernels/row_copy.h"

#include <string>

namespace kvsim::kernels {
namespace {

Status Reject(const char* kernel, const std::string& why) {
  return Status::Error("kernel_cannot_implement", std::string(kernel) + ": " + why);
}

std::string S(int64_t v) { return std::to_string(v); }

// The checks every cache side shares. `kernel` names the caller in messages.
Status CheckCache(const char* kernel, const KvLayout& l, int64_t layer, const void* base,
                  DType dtype, int64_t num_heads, int64_t head_size, bool has_value) {
  if (base == nullptr) return Reject(kernel, "cache pointer is null");
  if (layer < 0 || layer >= l.num_layers)
    return Reject(kernel, "layer slot " + S(layer) + " outside the layout's " +
                              S(l.num_layers) + " slots");
  const int es = ElementBytes(dtype);
  const bool fmt_ok = dtype == DType::kFloat16 || dtype == DType::kBFloat16 ||
                      dtype == DType::kFp8 || dtype == DType::kFp8E4M3 ||
                      dtype == DType::kFp8E5M2;
  if (!fmt_ok)
    return Reject(kernel, "KV dtype " + std::string(DTypeName(dtype)) +
                              " is not supported (fp16, bf16, fp8, fp8_e4m3, fp8_e5m2)");
  if (head_size < 64 || head_size > 256)
    return Reject(kernel, "head size " + S(head_size) + " outside the supported 64..256");
  if (l.k_bytes != head_size * es)
    return Reject(kernel, "layout K row is " + S(l.k_bytes) + " bytes but head_size " +
                              S(head_size) + " × " + S(es) + " bytes = " + S(head_size * es));
  if (has_value && l.v_bytes != l.k_bytes)
    return Reject(kernel, "layout V row is " + S(l.v_bytes) + " bytes, K row " +
                              S(l.k_bytes) + " (K and V rows must match)");
  if (!has_value && l.v_bytes != 0)
    return Reject(kernel, "value tensor is null but the layout holds V rows");
  if (l.num_heads != num_heads)
    return Reject(kernel, "layout has " + S(l.num_heads) + " heads, arguments " + S(num_heads));
  if (l.block_tokens < 1 || l.kernel_split < 1 || l.num_blocks % l.kernel_split != 0)
    return Reject(kernel, "layout block split is inconsistent (block_tokens " +
                              S(l.block_tokens) + ", kernel_split " + S(l.kernel_split) +
                              ", num_blocks " + S(l.num_blocks) + ")");
  return Status::Ok();
}

// Rows per (token, head), row bytes, and vector width for a copy between two sides.
void Finish(RowCopyParams* p) {
  const KvLayout& sl = p->src.layout;
  const bool has_v = sl.v_bytes > 0 || p->src.base_v != p->src.base_k;
  const int64_t k = p->src.layout.k_bytes;
  if (!has_v) {
    p->num_halves = 1;
    p->row_bytes = static_cast<int32_t>(k);
  } else if (p->src.kv_contiguous() && p->dst.kv_contiguous()) {
    p->num_halves = 1;  // both sides keep K|V in one run: move the whole cell
    p->row_bytes = static_cast<int32_t>(2 * k);
  } else {
    p->num_halves = 2;
    p->row_bytes = static_cast<int32_t>(k);
  }
  const bool v_half = p->num_halves == 2;
  const int64_t a = RowAlignment(p->src, p->row_bytes, v_half);
  const int64_t b = RowAlignment(p->dst, p->row_bytes, v_half);
  p->vec_bytes = static_cast<int32_t>(a < b ? a : b);
  p->Resolve();
}

// The kernels index rows, tokens and slots with 32-bit FastDivmod (kv_side.h).
constexpr int64_t kIndexLimit = int64_t{1} << 31;

Status CheckIndexRange(const char* kernel, int64_t num_tokens, int64_t num_heads,
                       const KvLayout& l) {
  if (num_tokens * num_heads * 2 >= kIndexLimit)
    return Reject(kernel, S(num_tokens) + " tokens × " + S(num_heads) +
                              " heads × 2 halves reach 2^31 rows; split the call");
  if (l.num_blocks * l.block_tokens >= kIndexLimit)
    return Reject(kernel, "the layout holds " + S(l.num_blocks * l.block_tokens) +
                              " token slots; at most 2^31 - 1 are supported");
  return Status::Ok();
}

}  // namespace

Status CanImplement(const CacheAppendArguments& a) {
  const char* k = "cache_append";
  if (a.num_tokens < 0) return Reject(k, "num_tokens is negative");
  if (a.key == nullptr) return Reject(k, "key pointer is null");
  if (a.num_tokens > 0 && a.slot_mapping == nullptr) return Reject(k, "slot_mapping is null");
  Status st = CheckIndexRange(k, a.num_tokens, a.num_heads, a.layout);
  if (!st.ok()) return st;
  return CheckCache(k, a.layout, a.layer, a.cache, a.dtype, a.num_heads, a.head_size,
                    a.value != nullptr);
}

Status CanImplement(const PagedGatherArguments& a) {
  const char* k = "paged_gather";
  if (a.num_tokens < 0) return Reject(k, "num_tokens is negative");
  if (a.out_key == nullptr) return Reject(k, "out_key pointer is null");
  if (a.num_tokens > 0 && a.slot_mapping == nullptr) return Reject(k, "slot_mapping is null");
  Status st = CheckIndexRange(k, a.num_tokens, a.num_heads, a.layout);
  if (!st.ok()) return st;
  return CheckCache(k, a.layout, a.layer, a.cache, a.dtype, a.num_heads, a.head_size,
                    a.out_value != nullptr);
}

Status CanImplement(const LayoutConvertArguments& a) {
  const char* k = "layout_convert";
  const KvLayout& s = a.src_layout;
  const KvLayout& d = a.dst_layout;
  if (a.num_tokens < 0) return Reject(k, "num_tokens is negative");
  if (a.src == nullptr || a.dst == nullptr) return Reject(k, "src or dst pointer is null");
  if (a.num_tokens > 0 && (a.src_block_table == nullptr || a.dst_block_table == nullptr))
    return Reject(k, "a block table is null");
  if (s.k_bytes != d.k_bytes || s.v_bytes != d.v_bytes)
    return Reject(k, "content differs: src K/V rows " + S(s.k_bytes) + "/" + S(s.v_bytes) +
                         " bytes, dst " + S(d.k_bytes) + "/" + S(d.v_bytes));
  if (s.v_bytes != 0 && s.v_bytes != s.k_bytes)
    return Reject(k, "K and V rows must match (" + S(s.k_bytes) + " vs " + S(s.v_bytes) + ")");
  if (s.num_heads != d.num_heads)
    return Reject(k, "head counts differ (" + S(s.num_heads) + " vs " + S(d.num_heads) +
                         "); a TP head split is not a re-layout");
  if (a.src_layer < 0 || a.src_layer >= s.num_layers || a.dst_layer < 0 ||
      a.dst_layer >= d.num_layers)
    return Reject(k, "layer slot outside its layout");
  if (s.block_tokens < 1 || d.block_tokens < 1) return Reject(k, "empty kernel block");
  Status st = CheckIndexRange(k, a.num_tokens, s.num_heads, s);
  if (!st.ok()) return st;
  return CheckIndexRange(k, a.num_tokens, d.num_heads, d);
}

RowCopyParams MakeParams(const CacheAppendArguments& a) {
  RowCopyParams p;
  p.src = ContiguousSide(a.num_tokens, a.num_heads, a.layout.k_bytes, a.key,
                         a.value ? a.value : a.key);
  if (!a.value) p.src.base_v = p.src.base_k;
  p.dst = CacheSide(a.layout, a.layer, a.cache, TokenMap::kSlotMapping, nullptr, a.slot_mapping);
  p.num_tokens = a.num_tokens;
  p.num_heads = a.num_heads;
  Finish(&p);
  return p;
}

RowCopyParams MakeParams(const PagedGatherArguments& a) {
  RowCopyParams p;
  p.src = CacheSide(a.layout, a.layer, const_cast<void*>(a.cache), TokenMap::kSlotMapping,
                    nullptr, a.slot_mapping);
  p.dst = ContiguousSide(a.num_tokens, a.num_heads, a.layout.k_bytes, a.out_key,
                         a.out_value ? a.out_value : a.out_key);
  if (!a.out_value) p.dst.base_v = p.dst.base_k;
  p.num_tokens = a.num_tokens;
  p.num_heads = a.num_heads;
  Finish(&p);
  return p;
}

RowCopyParams MakeParams(const LayoutConvertArguments& a) {
  RowCopyParams p;
  p.src = CacheSide(a.src_layout, a.src_layer, const_cast<void*>(a.src), TokenMap::kBlockTable,
                    a.src_block_table);
  p.dst = CacheSide(a.dst_layout, a.dst_layer, a.dst, TokenMap::kBlockTable, a.dst_block_table);
  p.num_tokens = a.num_tokens;
  p.num_heads = a.src_layout.num_heads;
  Finish(&p);
  return p;
}

}  // namespace kvsim::kernels
