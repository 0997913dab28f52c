// Block hashing for prefix caching (reference §5.1): every *full* block of a request gets a
// chained hash  hash_i = F(parent = hash_{i-1}, tokens_i, extra_keys_i), with the first
// block's parent the fixed kNoneHash. Two blocks hit each other exactly when their whole
// prefixes (tokens and extra keys) are equal.
//
// F is XXH3-64 seeded with the parent hash (Debian's libxxhash). vLLM uses SHA-256 (or
// xxh3-128) of a pickled tuple; only equality matters for the simulator, so a 64-bit hash
// gives the same hits up to a collision probability of about n²/2^65 for n distinct blocks
// (≈ 3e-6 for 10 million). kNoneHash is a constant, so hashes are reproducible across runs
// (vLLM's equivalent is PYTHONHASHSEED).
//
// Extra keys follow vLLM's order: LoRA name (every block), multimodal items overlapping the
// block as (identifier, item start − block start), cache_salt (only the block starting at
// token 0), prompt-embeds digest. Nothing here allocates on the plain-token path.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace kvsim {

using TokenId = int32_t;
using BlockHash = uint64_t;

inline constexpr BlockHash kNoneHash = 0x6b7673696d4e4f4eULL;  // "kvsimNON"

// One element of vLLM's extra-keys tuple: a plain string (LoRA name, cache salt, embeds
// digest) or a multimodal (identifier, offset relative to the block start) pair.
struct MmExtraKey {
  std::string identifier;
  int64_t offset = 0;
  bool operator==(const MmExtraKey&) const = default;
};
using ExtraKey = std::variant<std::string, MmExtraKey>;
using ExtraKeys = std::vector<ExtraKey>;  // empty = vLLM's None

// A multimodal input occupying prompt positions [offset, offset + length).
struct MmItem {
  std::string identifier;  // vLLM's mm hash / identifier
  int64_t offset = 0;
  int64_t length = 0;
};

// Per-request inputs to the extra keys. Default-constructed = none (the fast path).
struct RequestKeys {
  std::string lora_name;
  std::string cache_salt;
  std::vector<MmItem> mm_items;  // sorted by offset
  std::string prompt_embeds_digest;  // stands for the SHA-256 of the block's embeddings

  bool empty() const {
    return lora_name.empty() && cache_salt.empty() && mm_items.empty() &&
           prompt_embeds_digest.empty();
  }
};

// The extra keys of the block covering tokens [start, end) (reference §8.19).
ExtraKeys BlockExtraKeys(const RequestKeys& keys, int64_t start, int64_t end);

// F(parent, tokens, extra). `extra` empty means None.
BlockHash HashBlock(BlockHash parent, std::span<const TokenId> tokens,
                    const ExtraKeys& extra = {});

// Appends the hashes of the full blocks of `tokens` (block `block_size`, chained from
// `parent`) to `out`; returns the last hash (or `parent` when no block is full).
BlockHash HashFullBlocks(BlockHash parent, std::span<const TokenId> tokens, int64_t block_size,
                         std::vector<BlockHash>& out);

// Appends the hashes of `nblocks` full blocks whose tokens are consecutive ids — block k
// holds first + k·block_size + j, j < block_size — chained from `parent`: exactly what
// HashFullBlocks computes on those tokens, without materializing them (hash-id traces,
// whose blocks are such runs). Token ids must stay below 2^31. Returns the last hash.
BlockHash HashConsecutiveBlocks(BlockHash parent, TokenId first, int64_t block_size,
                                int64_t nblocks, std::vector<BlockHash>& out);

// Block 16 only: two independent chains from kNoneHash whose block k holds the 16
// consecutive token ids starting at firsts[k], hashed in lockstep. One XXH3 chain is bound by
// its own latency (each block is seeded by the previous hash); two interleaved chains take
// about the time of one. out_a / out_b are replaced by the hashes HashFullBlocks would give.
void HashConsecutive16Pair(std::span<const TokenId> firsts_a, std::vector<BlockHash>& out_a,
                           std::span<const TokenId> firsts_b, std::vector<BlockHash>& out_b);

// Incremental hasher of one request: tokens arrive in pieces (prompt, then accepted output
// tokens); every time a block of `block_size` fills up its hash is appended to hashes().
// Only the unfinished tail (< block_size tokens) is kept, never the whole sequence.
class RequestBlockHasher {
 public:
  RequestBlockHasher() = default;
  void Reset(int64_t block_size, const RequestKeys* keys = nullptr);
  void Append(std::span<const TokenId> tokens);
  // Replaces the state by a sequence given as the hashes of its full blocks (chained from
  // kNoneHash, no extra keys — what HashFullBlocks computes) and the tokens of its unfinished
  // last block (< block_size): the same state Append(all tokens) would reach on a hasher
  // reset without keys, without the caller materializing the tokens.
  void Assign(std::span<const BlockHash> hashes, std::span<const TokenId> tail);

  int64_t num_tokens() const { return num_tokens_; }
  int64_t block_size() const { return block_size_; }
  const std::vector<BlockHash>& hashes() const { return hashes_; }

 private:
  int64_t block_size_ = 16;
  int64_t num_tokens_ = 0;
  const RequestKeys* keys_ = nullptr;  // not owned; null = no extra keys
  std::vector<TokenId> tail_;          // tokens of the unfinished block
  std::vector<BlockHash> hashes_;
};

}  // namespace kvsim
