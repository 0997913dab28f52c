#include "core/kv_group/chunked_local_policy.h"

#include "core/kv_cache_spec.h"

namespace kvsim {

int64_t ChunkedLocalPolicy::FindHit(int64_t max_length, bool drop_eagle, const HitProbe& cached,
                                    const HitSink& put, BlockId* buf) const {
  (void)drop_eagle;  // a chunked-local hit never drops a block
  return FindChunkedLocalHit(max_length, block_size(), group().attention_chunk_size, cached, put,
                             buf);
}

int64_t ChunkedLocalPolicy::MaxBlocksPerRequest(int64_t max_len) const {
  return ChunkedLocalMaxBlocks(group().attention_chunk_size, block_size(),
                               context().max_num_batched_tokens, max_len);
}

}  // namespace kvsim
