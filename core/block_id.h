// BlockId: the index of one KV block in a block pool, shared by the pool, its parts (the
// cache map and the free queue), the KV cache manager's block tables and the viewer. Plain
// 32-bit ids keep a block table small and a pool record at 32 bytes; pools are limited to
// 2^30 blocks. Two values are reserved: block 0 is the null block (a placeholder for a
// position a group no longer needs, owned by nobody), and −1 means "no block".
#pragma once

#include <cstdint>

namespace kvsim {

using BlockId = int32_t;
inline constexpr BlockId kNullBlock = 0;
inline constexpr BlockId kNoBlock = -1;

}  // namespace kvsim
