// Layout cases for the GPU validation mode: one layer's view of an allocation (offsets are
// absolute in the allocation, so every byte outside the view's cells — padding, other pack
// members, other layers of a cross-layer slab, the null block — is "foreign"), the
// allocation size, and the formats to run. Cases come from two places: the scenario's plan
// (apps/kvsim/cmd_gpu_validate.cc turns each group/layer variant into one) and the fixed
// awkward matrix below (block sizes 1, 3, 7, 16, 17, 2096; odd head counts; padded, packed,
// NHD/HND, cross-layer; every kv_split mode; fp16/bf16/fp8; kernel block split).
// Host-only, always built.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/kv_layout.h"

namespace kvsim::kernels {

struct LayoutCase {
  std::string name;
  std::string origin;       // "plan" or "matrix"
  KvLayout view;            // one layer slot (num_layers may be > 1 only with `layer`)
  int64_t layer = 0;        // layer slot of `view` under test
  int64_t alloc_bytes = 0;  // bytes of the whole allocation
  DType dtype = DType::kBFloat16;
  int64_t head_size = 128;
  int64_t q_per_kv = 4;     // GQA group for decode attention
};

// "LBNHC packed_content L=1 B=8 H=3 N=17 C=256+256 block_stride=... base=..."
std::string DescribeLayout(const KvLayout& l);

// One past the largest byte any cell of `l` (layer slot `layer`) occupies.
int64_t LayoutEndByte(const KvLayout& l, int64_t layer);

// Dense NHD layout of one layer with the same heads, rows and manager block (no split).
KvLayout PlainLayoutLike(const KvLayout& l);

// How many manager blocks a case gets so that each has a few hundred tokens (several
// attention partitions) without being large: at least 5, one of them the null block.
int64_t CaseManagerBlocks(int64_t manager_block_tokens, int64_t target_tokens);

// A layout built from a few knobs (the matrix below and the timing suite use it).
struct LayoutShape {
  int64_t block_tokens = 16;  // manager block
  int64_t heads = 8;
  int64_t head_size = 128;
  DType dtype = DType::kBFloat16;
  KvOrder order = KvOrder::kLBNHC;
  KvSplit split = KvSplit::kPackedInContent;
  int64_t kernel_split = 1;
  int64_t pad_bytes = 0;  // added to each (per-layer, per-kernel-block) page
  int64_t layers = 1;     // layer slots sharing the allocation (pack / cross-layer)
  int64_t layer = 0;      // slot under test
  int64_t q_per_kv = 4;
};
LayoutCase MakeLayoutCase(const std::string& name, const LayoutShape& s, int64_t manager_blocks);

// The fixed awkward matrix. `target_tokens` sizes each case (CPU tests use fewer).
std::vector<LayoutCase> AwkwardLayoutCases(int64_t target_tokens = 320);

}  // namespace kvsim::kernels
