#include "core/kv_group/chunked_local_policy.h"

#include <algorithm>

#include "core/int_math.h"

namespace kvsim {

int64_t ChunkedLocalPolicy::FindHit(int64_t max_length, const HitProbe& cached, const HitSink& put,
                                    BlockId* buf) const {
  return FindChunkedLocalHit(max_length, block_size(), group().attention_chunk_size, cached, put,
                             buf);
}

int64_t ChunkedLocalPolicy::MaxBlocksPerRequest(int64_t max_len) const {
  return CeilDiv(std::min(group().attention_chunk_size + context().max_num_batched_tokens, max_len),
                 block_size());
}

}  // namespace kvsim
