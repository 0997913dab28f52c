#include "core/block_hash.h"

// Inlined (same library, same algorithm): XXH3 on short fixed-size blocks specializes to a
// few dozen instructions, where the shared library's generic entry point costs twice that.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <cstring>

#include "core/check.h"

namespace kvsim {
namespace {

// Extra keys are serialized with a type tag and lengths so that different tuples never
// produce the same bytes, then digested; the digest is hashed after the tokens.
void AppendBytes(std::vector<unsigned char>& buf, const void* p, size_t n) {
  const auto* c = static_cast<const unsigned char*>(p);
  buf.insert(buf.end(), c, c + n);
}

void AppendString(std::vector<unsigned char>& buf, const std::string& s) {
  const uint64_t n = s.size();
  AppendBytes(buf, &n, sizeof n);
  AppendBytes(buf, s.data(), s.size());
}

}  // namespace

ExtraKeys BlockExtraKeys(const RequestKeys& keys, int64_t start, int64_t end) {
  ExtraKeys out;
  if (!keys.lora_name.empty()) out.emplace_back(keys.lora_name);
  for (const MmItem& item : keys.mm_items) {
    const int64_t item_end = item.offset + item.length;
    if (item.offset < end && item_end > start) {
      out.emplace_back(MmExtraKey{item.identifier, item.offset - start});
    }
  }
  if (!keys.cache_salt.empty() && start == 0) out.emplace_back(keys.cache_salt);
  if (!keys.prompt_embeds_digest.empty()) out.emplace_back(keys.prompt_embeds_digest);
  return out;
}

BlockHash HashBlock(BlockHash parent, std::span<const TokenId> tokens, const ExtraKeys& extra) {
  const BlockHash h = XXH3_64bits_withSeed(tokens.data(), tokens.size_bytes(), parent);
  if (extra.empty()) return h;
  std::vector<unsigned char> buf;
  AppendBytes(buf, &h, sizeof h);
  for (const ExtraKey& k : extra) {
    if (const auto* s = std::get_if<std::string>(&k)) {
      buf.push_back('s');
      AppendString(buf, *s);
    } else {
      const auto& mm = std::get<MmExtraKey>(k);
      buf.push_back('m');
      AppendString(buf, mm.identifier);
      AppendBytes(buf, &mm.offset, sizeof mm.offset);
    }
  }
  return XXH3_64bits_withSeed(buf.data(), buf.size(), parent ^ 0x9e3779b97f4a7c15ULL);
}

BlockHash HashFullBlocks(BlockHash parent, std::span<const TokenId> tokens, int64_t block_size,
                         std::vector<BlockHash>& out) {
  const size_t n = tokens.size() / static_cast<size_t>(block_size);
  const size_t bytes = static_cast<size_t>(block_size) * sizeof(TokenId);
  const TokenId* p = tokens.data();
  for (size_t i = 0; i < n; ++i, p += block_size) {
    parent = XXH3_64bits_withSeed(p, bytes, parent);
    out.push_back(parent);
  }
  return parent;
}

namespace {

// Fixed block size: the compiler unrolls token generation and XXH3's length dispatch.
template <int64_t B>
BlockHash HashConsecutiveFixed(BlockHash parent, TokenId first, int64_t nblocks, BlockHash* out) {
  alignas(64) uint32_t buf[B];  // unsigned: the increment after the last block may wrap
  for (int64_t j = 0; j < B; ++j) buf[j] = static_cast<uint32_t>(first) + static_cast<uint32_t>(j);
  for (int64_t k = 0; k < nblocks; ++k) {
    parent = XXH3_64bits_withSeed(buf, sizeof buf, parent);
    out[k] = parent;
    for (int64_t j = 0; j < B; ++j) buf[j] += static_cast<uint32_t>(B);
  }
  return parent;
}

// Block 16 (the headline case), written out: XXH3-64 of a 64-byte input with a seed is
// XXH3_len_17to128_64b — four 16-byte lanes mixed with the default secret, summed, avalanched.
// The eight little-endian 64-bit words of 16 consecutive token ids t..t+15 are
// w_k = (t+2k) | (t+2k+1) << 32 = w_0 + k·0x0000000200000002 (ids < 2^31, so no carry between
// halves), so the words live in registers and nothing is stored or reloaded. Uses xxhash's
// own secret and constants; the tests compare it with XXH3_64bits_withSeed on real tokens.
[[gnu::always_inline]] inline uint64_t Fold(uint64_t a, uint64_t b) {
  const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(p) ^ static_cast<uint64_t>(p >> 64);
}

constexpr uint64_t kStep = 0x0000000200000002ULL;   // two tokens further
constexpr uint64_t kBlock = 0x0000001000000010ULL;  // sixteen tokens further

// The first word of a block starting at token t.
inline uint64_t FirstWord(TokenId first) {
  const uint64_t t = static_cast<uint32_t>(first);
  return t | ((t + 1) << 32);
}

struct Secret16 {
  uint64_t s[8];
  Secret16() {
    for (int i = 0; i < 8; ++i) s[i] = XXH_readLE64(XXH3_kSecret + 8 * i);
  }
};

// XXH3_64bits_withSeed(tokens w.., 64 bytes, seed).
[[gnu::always_inline]] inline uint64_t Hash16(const Secret16& sec, uint64_t w, uint64_t seed) {
  const uint64_t* c = sec.s;
  uint64_t acc = 64 * XXH_PRIME64_1;
  acc += Fold(w ^ (c[0] + seed), (w + kStep) ^ (c[1] - seed));                  // input +0
  acc += Fold((w + 2 * kStep) ^ (c[4] + seed), (w + 3 * kStep) ^ (c[5] - seed));  // +16
  acc += Fold((w + 4 * kStep) ^ (c[6] + seed), (w + 5 * kStep) ^ (c[7] - seed));  // +32
  acc += Fold((w + 6 * kStep) ^ (c[2] + seed), (w + 7 * kStep) ^ (c[3] - seed));  // +48
  acc ^= acc >> 37;
  acc *= 0x165667919E3779F9ULL;
  acc ^= acc >> 32;
  return acc;
}

BlockHash HashConsecutive16(BlockHash parent, TokenId first, int64_t nblocks, BlockHash* out) {
  const Secret16 sec;
  uint64_t w = FirstWord(first);
  for (int64_t k = 0; k < nblocks; ++k) {
    parent = Hash16(sec, w, parent);
    out[k] = parent;
    w += kBlock;
  }
  return parent;
}

}  // namespace

BlockHash HashConsecutiveBlocks(BlockHash parent, TokenId first, int64_t block_size,
                                int64_t nblocks, std::vector<BlockHash>& out) {
  if (nblocks <= 0) return parent;
  const size_t at = out.size();
  out.resize(at + static_cast<size_t>(nblocks));
  BlockHash* o = out.data() + at;
  switch (block_size) {
    case 16: return HashConsecutive16(parent, first, nblocks, o);
    case 32: return HashConsecutiveFixed<32>(parent, first, nblocks, o);
    case 64: return HashConsecutiveFixed<64>(parent, first, nblocks, o);
    case 128: return HashConsecutiveFixed<128>(parent, first, nblocks, o);
    case 256: return HashConsecutiveFixed<256>(parent, first, nblocks, o);
    case 512: return HashConsecutiveFixed<512>(parent, first, nblocks, o);
    default: break;
  }
  const size_t bs = static_cast<size_t>(block_size);
  constexpr size_t kStack = 2048;
  uint32_t stack_buf[kStack];
  std::vector<uint32_t> heap_buf;
  uint32_t* buf = stack_buf;
  if (bs > kStack) {
    heap_buf.resize(bs);
    buf = heap_buf.data();
  }
  for (size_t j = 0; j < bs; ++j) buf[j] = static_cast<uint32_t>(first) + static_cast<uint32_t>(j);
  for (int64_t k = 0; k < nblocks; ++k) {
    parent = XXH3_64bits_withSeed(buf, bs * sizeof(uint32_t), parent);
    o[k] = parent;
    for (size_t j = 0; j < bs; ++j) buf[j] += static_cast<uint32_t>(bs);
  }
  return parent;
}

void HashConsecutive16Pair(std::span<const TokenId> firsts_a, std::vector<BlockHash>& out_a,
                           std::span<const TokenId> firsts_b, std::vector<BlockHash>& out_b) {
  const Secret16 sec;
  const size_t na = firsts_a.size(), nb = firsts_b.size();
  out_a.resize(na);
  out_b.resize(nb);
  BlockHash pa = kNoneHash, pb = kNoneHash;
  const size_t both = std::min(na, nb);
  size_t k = 0;
  for (; k < both; ++k) {  // two independent chains in one loop body
    pa = Hash16(sec, FirstWord(firsts_a[k]), pa);
    pb = Hash16(sec, FirstWord(firsts_b[k]), pb);
    out_a[k] = pa;
    out_b[k] = pb;
  }
  for (size_t j = k; j < na; ++j) out_a[j] = pa = Hash16(sec, FirstWord(firsts_a[j]), pa);
  for (size_t j = k; j < nb; ++j) out_b[j] = pb = Hash16(sec, FirstWord(firsts_b[j]), pb);
}

void RequestBlockHasher::Assign(std::span<const BlockHash> hashes,
                                std::span<const TokenId> tail) {
  KVSIM_CHECK(keys_ == nullptr);
  KVSIM_CHECK(static_cast<int64_t>(tail.size()) < block_size_);
  hashes_.assign(hashes.begin(), hashes.end());
  tail_.assign(tail.begin(), tail.end());
  num_tokens_ = static_cast<int64_t>(hashes.size()) * block_size_ + static_cast<int64_t>(tail.size());
}

void RequestBlockHasher::Reset(int64_t block_size, const RequestKeys* keys) {
  KVSIM_CHECK(block_size > 0);
  block_size_ = block_size;
  num_tokens_ = 0;
  keys_ = (keys != nullptr && !keys->empty()) ? keys : nullptr;
  tail_.clear();
  hashes_.clear();
}

void RequestBlockHasher::Append(std::span<const TokenId> tokens) {
  const size_t bs = static_cast<size_t>(block_size_);
  if (tokens.size() == 1 && tail_.size() + 1 < bs) {
    // One decode token that does not fill a block: it only joins the tail.
    tail_.push_back(tokens[0]);
    ++num_tokens_;
    return;
  }
  size_t i = 0;
  BlockHash parent = hashes_.empty() ? kNoneHash : hashes_.back();
  auto emit = [&](const TokenId* p) {
    const int64_t start = static_cast<int64_t>(hashes_.size()) * block_size_;
    if (keys_ == nullptr) {
      parent = XXH3_64bits_withSeed(p, bs * sizeof(TokenId), parent);
    } else {
      parent = HashBlock(parent, {p, bs}, BlockExtraKeys(*keys_, start, start + block_size_));
    }
    hashes_.push_back(parent);
  };
  // Finish the pending tail first.
  if (!tail_.empty()) {
    const size_t take = std::min(bs - tail_.size(), tokens.size());
    tail_.insert(tail_.end(), tokens.begin(), tokens.begin() + take);
    i = take;
    if (tail_.size() == bs) {
      emit(tail_.data());
      tail_.clear();
    }
  }
  if (keys_ == nullptr && tail_.empty()) {
    const size_t full = (tokens.size() - i) / bs;
    hashes_.reserve(hashes_.size() + full);
    const TokenId* p = tokens.data() + i;
    for (size_t b = 0; b < full; ++b, p += bs) {
      parent = XXH3_64bits_withSeed(p, bs * sizeof(TokenId), parent);
      hashes_.push_back(parent);
    }
    i += full * bs;
  } else {
    while (tail_.empty() && tokens.size() - i >= bs) {
      emit(tokens.data() + i);
      i += bs;
    }
  }
  tail_.insert(tail_.end(), tokens.begin() + i, tokens.end());
  num_tokens_ += static_cast<int64_t>(tokens.size());
}

}  // namespace kvsim
