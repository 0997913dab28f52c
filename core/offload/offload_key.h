// OffloadKey: the identity of one offloaded (CPU) block, as vLLM's CPU offloading tier keys it
// (kv-offload.md §2): the request's prefix-cache block hash of the *last* hash block inside the
// offloaded block, plus the KV-cache group index. Because block hashes chain over every earlier
// token, a key matches only when the whole token prefix up to the block's end is equal.
//
// Also here: OrderedKeyMap, the insertion-ordered map (Python's OrderedDict) that the CPU tier's
// policies and the store-threshold tracker are built on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <list>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/block_hash.h"
#include "core/check.h"

namespace kvsim {

struct OffloadKey {
  BlockHash hash = 0;
  int32_t group = 0;
  bool operator==(const OffloadKey&) const = default;
};

struct OffloadKeyHasher {
  size_t operator()(const OffloadKey& k) const {
    return static_cast<size_t>((k.hash ^ (static_cast<uint64_t>(static_cast<uint32_t>(k.group)) *
                                          0x9e3779b97f4a7c15ULL)) *
                               0xbf58476d1ce4e5b9ULL);
  }
};

// Appends to `out` the keys of the offloaded blocks whose hashes are not yet in `out`: offloaded
// block i (of `hashes_per_block` hash blocks) gets hash block (i + 1) · hashes_per_block − 1.
// Only *full* offloaded blocks get keys (the partial tail is never offloaded).
inline void ExtendOffloadKeys(std::span<const BlockHash> block_hashes, int64_t hashes_per_block,
                              int32_t group, std::vector<OffloadKey>& out) {
  KVSIM_CHECK(hashes_per_block >= 1);
  const int64_t n = static_cast<int64_t>(block_hashes.size()) / hashes_per_block;
  for (int64_t i = static_cast<int64_t>(out.size()); i < n; ++i)
    out.push_back({block_hashes[static_cast<size_t>((i + 1) * hashes_per_block - 1)], group});
}

// A map from OffloadKey to V that remembers order: entries are appended at the back (the MRU
// end), can be moved to the back, popped from the front (the LRU end), and spliced into another
// OrderedKeyMap without moving the value (pointers to values stay valid until erased).
template <class V>
class OrderedKeyMap {
 public:
  using Entry = std::pair<OffloadKey, V>;
  using List = std::list<Entry>;
  using iterator = typename List::iterator;
  using const_iterator = typename List::const_iterator;

  int64_t size() const { return static_cast<int64_t>(list_.size()); }
  bool empty() const { return list_.empty(); }
  bool contains(const OffloadKey& k) const { return index_.count(k) != 0; }
  V* find(const OffloadKey& k) {
    auto it = index_.find(k);
    return it == index_.end() ? nullptr : &it->second->second;
  }
  const V* find(const OffloadKey& k) const {
    auto it = index_.find(k);
    return it == index_.end() ? nullptr : &it->second->second;
  }
  // Appends a new key at the back; the key must not be present.
  V& push_back(const OffloadKey& k, V v) {
    list_.emplace_back(k, std::move(v));
    const bool inserted = index_.emplace(k, std::prev(list_.end())).second;
    KVSIM_CHECK(inserted);
    return list_.back().second;
  }
  // Moves a present key to the back; false if absent.
  bool move_to_back(const OffloadKey& k) {
    auto it = index_.find(k);
    if (it == index_.end()) return false;
    list_.splice(list_.end(), list_, it->second);
    return true;
  }
  bool erase(const OffloadKey& k) {
    auto it = index_.find(k);
    if (it == index_.end()) return false;
    list_.erase(it->second);
    index_.erase(it);
    return true;
  }
  void pop_front() {
    KVSIM_CHECK(!list_.empty());
    index_.erase(list_.front().first);
    list_.pop_front();
  }
  // Moves the entry of `k` (present here, absent in `dst`) to the back of `dst`.
  void splice_to_back(const OffloadKey& k, OrderedKeyMap& dst) {
    auto it = index_.find(k);
    KVSIM_CHECK(it != index_.end());
    auto node = it->second;
    index_.erase(it);
    dst.list_.splice(dst.list_.end(), list_, node);
    const bool inserted = dst.index_.emplace(k, node).second;
    KVSIM_CHECK(inserted);
  }
  void clear() {
    list_.clear();
    index_.clear();
  }
  // Front (LRU) to back (MRU).
  iterator begin() { return list_.begin(); }
  iterator end() { return list_.end(); }
  const_iterator begin() const { return list_.begin(); }
  const_iterator end() const { return list_.end(); }

 private:
  List list_;
  std::unordered_map<OffloadKey, iterator, OffloadKeyHasher> index_;
};

}  // namespace kvsim
