// CanImplement() and MakeParams() of paged decode attention (see decode_attention.h).
#include "kernels/decode_attention.h"

#include <string>

#include "kernels/kv_side.h"

namespace kvsim::kernels {
namespace {

Status Reject(const std::string& why) {
  return Status::Error("kernel_cannot_implement", "decode_attention: " + why);
}
std::string S(int64_t v) { return std::to_string(v); }

}  // namespace

Status CanImplement(const DecodeAttentionArguments& a) {
  const KvLayout& l = a.layout;
  if (a.dtype != DType::kFloat16 && a.dtype != DType::kBFloat16)
    return Reject("KV dtype " + std::string(DTypeName(a.dtype)) +
                  " is not supported (fp16 or bf16; fp8 KV needs a dequantizing variant)");
  if (a.head_size != 64 && a.head_size != 128 && a.head_size != 256)
    return Reject("head size " + S(a.head_size) + " is not one of 64, 128, 256");
  if (l.k_bytes != a.head_size * 2 || l.v_bytes != l.k_bytes)
    return Reject("layout rows are K " + S(l.k_bytes) + " / V " + S(l.v_bytes) +
                  " bytes; need " + S(a.head_size * 2) + " each (MLA / K-only layouts have no V)");
  if (a.num_kv_heads != l.num_heads)
    return Reject("layout has " + S(l.num_heads) + " KV heads, arguments " + S(a.num_kv_heads));
  if (a.num_kv_heads < 1 || a.num_q_heads < 1 || a.num_q_heads % a.num_kv_heads != 0)
    return Reject("query heads " + S(a.num_q_heads) + " are not a multiple of KV heads " +
                  S(a.num_kv_heads));
  if (a.layer < 0 || a.layer >= l.num_layers)
    return Reject("layer slot " + S(a.layer) + " outside the layout's " + S(l.num_layers));
  if (a.batch < 1 || a.max_seq_len < 1) return Reject("empty batch or max_seq_len < 1");
  if (a.split_tokens != 0 &&
      (a.split_tokens < 32 || a.split_tokens > 1024 || a.split_tokens % 32 != 0))
    return Reject("split_tokens " + S(a.split_tokens) +
                  " must be 0 (auto) or a multiple of 32 in [32, 1024]");
  if (NumSplits(a) > 2048)
    return Reject("max_seq_len " + S(a.max_seq_len) + " needs " + S(NumSplits(a)) +
                  " partitions; at most 2048 are supported");
  if (a.max_seq_len >= (int64_t{1} << 31))
    return Reject("max_seq_len " + S(a.max_seq_len) + " reaches 2^31 tokens");
  if (a.max_seq_len > a.max_blocks_per_seq * l.manager_block_tokens())
    return Reject("max_seq_len " + S(a.max_seq_len) + " exceeds the block table's " +
                  S(a.max_blocks_per_seq) + " blocks × " + S(l.manager_block_tokens()) +
                  " tokens");
  if (!a.cache || !a.query || !a.block_tables || !a.seq_lens || !a.out || !a.workspace)
    return Reject("a pointer argument is null");
  // 16-byte vector loads of every K and V row.
  KvSide side = CacheSide(l, a.layer, const_cast<void*>(a.cache), TokenMap::kIdentity);
  const int64_t align = RowAlignment(side, l.k_bytes, true);
  if (align < 16)
    return Reject("K/V rows are only " + S(align) +
                  "-byte aligned (page stride, pack offset or base address); this kernel "
                  "needs 16-byte aligned rows");
  return Status::Ok();
}

DecodeAttentionParams MakeParams(const DecodeAttentionArguments& a) {
  DecodeAttentionParams p;
  p.args = a;
  p.group = a.num_q_heads / a.num_kv_heads;
  p.heads_per_pass = HeadsPerPass(p.group);
  p.head_passes = (p.group + p.heads_per_pass - 1) / p.heads_per_pass;
  p.num_splits = NumSplits(a);
  p.split_tokens = SplitTokens(a);
  p.addr = a.layout.Addressing();
  p.per_block = FastDivmod(a.layout.manager_block_tokens());
  return p;
}

}  // namespace kvsim::kernels
