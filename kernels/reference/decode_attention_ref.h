// Host reference of paged decode attention in fp64 (Eigen): for each sequence and query
// head, softmax(scale · K q) · V over the sequence's tokens, K and V read through the same
// KvLayout / block table as the CUDA kernel. Always built (no CUDA).
#pragma once

#include <vector>

#include "kernels/decode_attention.h"

namespace kvsim::kernels {

// All pointers in `a` are host pointers (cache, query, block_tables, seq_lens); out / workspace
// are ignored. Returns [batch, num_q_heads, head_size] in fp64.
std::vector<double> DecodeAttentionReference(const DecodeAttentionArguments& a);

// ‖x − ref‖₂ / ‖ref‖₂ (0 when both are zero); NaN anywhere gives +inf.
double RelativeError(const float* x, const std::vector<double>& ref);

}  // namespace kvsim::kernels
