// Host entry points of the CUDA kernels (built only when KVSIM_HAVE_CUDA). Each takes the
// device Params that MakeParams() built from Arguments accepted by CanImplement(); pointers
// inside are device addresses. `stream` is a cudaStream_t (nullptr = default stream), kept
// opaque so that this header needs no CUDA include. Errors come back as Status.
#pragma once

#include "core/status.h"
#include "kernels/decode_attention.h"
#include "kernels/kv_side.h"

namespace kvsim::kernels {

// Launch shapes that kernels_bench sweeps (BM_RowCopyTuning, BM_DecodeTuning); every other
// caller passes {} and gets the tuned defaults. Only a few combinations are compiled, for
// 16-byte rows (row copy) and bf16 D 128 with 4 query heads per pass (attention); others
// return a bad_argument Status. 0 = default.
struct RowCopyTuning {
  int unroll = 0;      // 16-byte chunks each lane loads before storing
  int min_blocks = 0;  // CTAs per SM the register budget is fitted to
};
struct DecodeTuning {
  int unroll = 0;      // K / V rows each lane has in flight
  int min_blocks = 0;  // CTAs per SM the register budget is fitted to
  int pipeline = -1;   // 1: the next rows' loads are issued before the current rows are used
  int head_major = -1;  // 1: KV heads are the grid's fastest axis; 0: partitions are
};

Status LaunchRowCopy(const RowCopyParams& p, void* stream = nullptr, RowCopyTuning tuning = {});
Status LaunchDecodeAttention(const DecodeAttentionParams& p, void* stream = nullptr,
                             DecodeTuning tuning = {});

// Baseline for "% of copy": a 16-byte-vector grid-stride copy of `bytes` (multiple of 16).
Status LaunchVectorCopy(void* dst, const void* src, int64_t bytes, void* stream = nullptr);

// Fills `bytes` (a multiple of 2) with 16-bit words that are finite bf16 values of magnitude
// in [2^-7, 1), from a hash of (index, seed): never zero, never NaN. For timing inputs.
Status LaunchFillPattern(void* dst, int64_t bytes, uint32_t seed, void* stream = nullptr);

}  // namespace kvsim::kernels
