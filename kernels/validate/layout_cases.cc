#include "kernels/validate/layout_cases.h"

#include <algorithm>

#include "core/int_math.h"

namespace kvsim::kernels {

std::string DescribeLayout(const KvLayout& l) {
  std::string s = std::string(KvOrderName(l.order)) + " " + KvSplitName(l.kv_split);
  s += " L=" + std::to_string(l.num_layers) + " B=" + std::to_string(l.num_blocks) +
       " H=" + std::to_string(l.num_heads) + " N=" + std::to_string(l.block_tokens) +
       " C=" + std::to_string(l.k_bytes) + "+" + std::to_string(l.v_bytes);
  if (l.kernel_split > 1) s += " split=" + std::to_string(l.kernel_split);
  if (l.block_stride > 0) s += " block_stride=" + std::to_string(l.block_stride);
  if (l.layer_stride > 0) s += " layer_stride=" + std::to_string(l.layer_stride);
  if (l.base_offset > 0) s += " base=" + std::to_string(l.base_offset);
  return s;
}

int64_t LayoutEndByte(const KvLayout& l, int64_t layer) {
  // Strides are non-negative, so the last cell's last byte of each half is the maximum.
  int64_t end = l.offset(layer, l.num_blocks - 1, l.num_heads - 1, l.block_tokens - 1,
                         l.k_bytes - 1) + 1;
  if (l.v_bytes > 0) {
    end = std::max(end, l.offset(layer, l.num_blocks - 1, l.num_heads - 1, l.block_tokens - 1,
                                 l.k_bytes + l.v_bytes - 1) + 1);
  }
  return end;
}

KvLayout PlainLayoutLike(const KvLayout& l) {
  KvLayout p;
  p.order = KvOrder::kLBNHC;
  p.kv_split = KvSplit::kPackedInContent;
  p.num_layers = 1;
  p.num_blocks = l.num_manager_blocks();
  p.num_heads = l.num_heads;
  p.block_tokens = l.manager_block_tokens();
  p.k_bytes = l.k_bytes;
  p.v_bytes = l.v_bytes;
  return p;
}

int64_t CaseManagerBlocks(int64_t manager_block_tokens, int64_t target_tokens) {
  return std::max<int64_t>(5, CeilDiv(target_tokens, manager_block_tokens) + 1);
}

namespace {

LayoutCase Make(const std::string& name, const LayoutShape& s, int64_t target_tokens) {
  return MakeLayoutCase(name, s, CaseManagerBlocks(s.block_tokens, target_tokens));
}

}  // namespace

LayoutCase MakeLayoutCase(const std::string& name, const LayoutShape& s, int64_t m) {
  KvLayout l;
  l.order = s.order;
  l.kv_split = s.split;
  l.num_heads = s.heads;
  l.kernel_split = s.kernel_split;
  l.block_tokens = s.block_tokens / s.kernel_split;
  l.num_blocks = m * s.kernel_split;
  l.k_bytes = s.head_size * ElementBytes(s.dtype);
  l.v_bytes = l.k_bytes;
  l.num_layers = s.layers;
  // Dense page of one layer's kernel block, then padding; B-first orders stack the layer
  // slots inside each block (pack of PR #35703, cross-layer slab).
  const int64_t page = l.num_heads * l.block_tokens * (l.k_bytes + l.v_bytes) + s.pad_bytes;
  const bool b_first = s.order == KvOrder::kBLHNC || s.order == KvOrder::kBLNHC ||
                       s.order == KvOrder::kBHLNC;
  if (s.pad_bytes > 0 || (b_first && s.layers > 1)) {
    if (b_first) {
      if (s.order != KvOrder::kBHLNC) l.layer_stride = page;
      l.block_stride = page * s.layers;
    } else {
      l.block_stride = page;
    }
  }
  LayoutCase c;
  c.name = name;
  c.origin = "matrix";
  c.alloc_bytes = l.allocation_bytes();
  c.view = l.LayerView(s.layer);
  c.layer = 0;
  c.dtype = s.dtype;
  c.head_size = s.head_size;
  c.q_per_kv = s.q_per_kv;
  return c;
}

std::vector<LayoutCase> AwkwardLayoutCases(int64_t target_tokens) {
  std::vector<LayoutCase> out;
  const int64_t t = target_tokens;
  // Block sizes × NHD/HND, with odd head counts.
  const int64_t sizes[] = {1, 3, 7, 16, 17, 2096};
  const int64_t heads[] = {1, 3, 8, 5, 7, 2};
  for (int i = 0; i < 6; ++i) {
    for (KvOrder o : {KvOrder::kLBNHC, KvOrder::kLBHNC}) {
      LayoutShape s;
      s.block_tokens = sizes[i];
      s.heads = heads[i];
      s.order = o;
      s.q_per_kv = (i % 3) + 1;  // 1, 2, 3
      out.push_back(Make(std::string(o == KvOrder::kLBNHC ? "NHD" : "HND") + " bs=" +
                             std::to_string(sizes[i]) + " H=" + std::to_string(heads[i]),
                         s, sizes[i] == 2096 ? 2 * 2096 : t));
    }
  }
  {  // padded pages: 16-byte aligned padding, and an unaligned one (scalar-ish path)
    LayoutShape s;
    s.pad_bytes = 16 * 8 * 512 / 16;  // 1/16 of the page
    out.push_back(Make("NHD bs=16 H=8 padded ×1.0625", s, t));
    s.order = KvOrder::kLBHNC;
    s.heads = 3;
    s.block_tokens = 17;
    s.pad_bytes = 1000;
    out.push_back(Make("HND bs=17 H=3 padded +1000 B", s, t));
    s.order = KvOrder::kLBNHC;
    s.heads = 5;
    s.block_tokens = 16;
    s.pad_bytes = 2;
    out.push_back(Make("NHD bs=16 H=5 padded +2 B (unaligned)", s, t));
  }
  {  // attention pack (PR #35703): B-first, N layer slots per block
    LayoutShape s;
    s.order = KvOrder::kBLNHC;
    s.layers = 3;
    s.layer = 0;
    s.heads = 2;
    s.block_tokens = 16;
    out.push_back(Make("pack 3 member 0 (BLNHC)", s, t));
    s.layer = 2;
    s.block_tokens = 7;
    s.heads = 5;
    s.pad_bytes = 48;
    out.push_back(Make("pack 3 member 2 bs=7 H=5 padded (BLNHC)", s, t));
    s.order = KvOrder::kBLHNC;
    s.layer = 1;
    s.layers = 2;
    s.pad_bytes = 0;
    s.block_tokens = 17;
    s.heads = 3;
    out.push_back(Make("pack 2 member 1 bs=17 H=3 (BLHNC)", s, t));
  }
  {  // cross-layer slabs
    LayoutShape s;
    s.order = KvOrder::kBLNHC;
    s.layers = 4;
    s.layer = 1;
    s.heads = 4;
    out.push_back(Make("cross-layer BLNHC L=4 layer 1", s, t));
    s.order = KvOrder::kBHLNC;
    s.layer = 3;
    s.heads = 3;
    s.block_tokens = 3;
    out.push_back(Make("cross-layer BHLNC L=4 layer 3 bs=3 H=3", s, t));
  }
  {  // K/V split modes
    LayoutShape s;
    s.split = KvSplit::kKvInBlock;
    s.heads = 4;
    out.push_back(Make("kv_in_block NHD bs=16 H=4", s, t));
    s.block_tokens = 7;
    s.order = KvOrder::kLBHNC;
    s.heads = 3;
    out.push_back(Make("kv_in_block HND bs=7 H=3", s, t));
    s.split = KvSplit::kKvFirstTensor;
    s.block_tokens = 16;
    s.heads = 4;
    out.push_back(Make("kv_first_tensor HND bs=16 H=4", s, t));
    s.order = KvOrder::kLBNHC;
    s.block_tokens = 17;
    s.heads = 1;
    out.push_back(Make("kv_first_tensor NHD bs=17 H=1", s, t));
  }
  {  // kernel block split (manager block = k × kernel block)
    LayoutShape s;
    s.block_tokens = 32;
    s.kernel_split = 2;
    out.push_back(Make("NHD manager 32 = 2 × kernel 16", s, t));
    s.block_tokens = 48;
    s.kernel_split = 3;
    s.order = KvOrder::kLBHNC;
    s.heads = 3;
    out.push_back(Make("HND manager 48 = 3 × kernel 16 H=3", s, t));
  }
  {  // formats, head sizes and GQA groups
    LayoutShape s;
    s.dtype = DType::kFloat16;
    s.head_size = 64;
    s.heads = 5;
    s.block_tokens = 17;
    s.q_per_kv = 8;
    out.push_back(Make("fp16 D=64 H=5 bs=17 GQA 8", s, t));
    s.dtype = DType::kBFloat16;
    s.head_size = 256;
    s.heads = 2;
    s.block_tokens = 16;
    s.q_per_kv = 16;
    out.push_back(Make("bf16 D=256 H=2 GQA 16 (2 head passes)", s, t));
    s.head_size = 128;
    s.heads = 3;
    s.q_per_kv = 5;
    s.order = KvOrder::kLBHNC;
    out.push_back(Make("bf16 D=128 H=3 GQA 5 HND", s, t));
    s.dtype = DType::kFp8E4M3;
    s.heads = 8;
    s.order = KvOrder::kLBNHC;
    s.q_per_kv = 4;
    out.push_back(Make("fp8_e4m3 D=128 H=8 (data movement only)", s, t));
    s.dtype = DType::kBFloat16;
    s.head_size = 96;
    s.heads = 7;
    s.block_tokens = 3;
    out.push_back(Make("bf16 D=96 H=7 bs=3 (attention rejects D=96)", s, t));
  }
  return out;
}

}  // namespace kvsim::kernels
