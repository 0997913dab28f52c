#include "core/offload/cpu_eviction_policy.h"

#include <algorithm>
#include <string>

#include "core/offload/arc_policy.h"
#include "core/offload/lru_policy.h"

namespace kvsim {

std::string_view CpuEvictionPolicyKindName(CpuEvictionPolicyKind k) {
  return k == CpuEvictionPolicyKind::kArc ? "arc" : "lru";
}

Result<CpuEvictionPolicyKind> ParseCpuEvictionPolicyKind(std::string_view name) {
  if (name == "lru") return CpuEvictionPolicyKind::kLru;
  if (name == "arc") return CpuEvictionPolicyKind::kArc;
  return Status::Error("bad_eviction_policy",
                       "eviction policy '" + std::string(name) + "' is not one of lru, arc");
}

std::unique_ptr<CpuEvictionPolicy> MakeCpuEvictionPolicy(CpuEvictionPolicyKind kind,
                                                         int64_t capacity,
                                                         bool lru_evictable_list) {
  if (kind == CpuEvictionPolicyKind::kArc) return std::make_unique<ArcCpuPolicy>(capacity);
  return std::make_unique<LruCpuPolicy>(lru_evictable_list);
}

// ---- LRU ----------------------------------------------------------------------------------

void LruCpuPolicy::Insert(const OffloadKey& key, CpuBlock block) {
  blocks_.push_back(key, block);
  if (evictable_list_ && block.ref_cnt == 0) evictable_.push_back(key, 0);
}

void LruCpuPolicy::Remove(const OffloadKey& key) {
  blocks_.erase(key);
  if (evictable_list_) evictable_.erase(key);
}

void LruCpuPolicy::Touch(std::span<const OffloadKey> keys) {
  for (auto it = keys.rbegin(); it != keys.rend(); ++it) {
    if (evictable_list_) {
      evictable_.move_to_back(*it);
    } else {
      blocks_.move_to_back(*it);
    }
  }
}

void LruCpuPolicy::MarkEvictable(const OffloadKey& key) {
  if (!evictable_list_) return;
  evictable_.erase(key);
  evictable_.push_back(key, 0);
}

void LruCpuPolicy::MarkNonEvictable(const OffloadKey& key) {
  if (evictable_list_) evictable_.erase(key);
}

bool LruCpuPolicy::Evict(int64_t n, const OffloadKeySet& protected_keys,
                         std::vector<EvictedCpuBlock>& out) {
  if (n <= 0) return true;
  std::vector<EvictedCpuBlock> picked;
  if (evictable_list_) {
    for (const auto& entry : evictable_) {
      const OffloadKey& key = entry.first;
      if (protected_keys.count(key) != 0) continue;
      const CpuBlock* b = blocks_.find(key);
      KVSIM_CHECK(b != nullptr && b->ref_cnt == 0);
      picked.push_back({key, b->slot});
      if (static_cast<int64_t>(picked.size()) == n) break;
    }
  } else {
    for (const auto& [key, block] : blocks_) {
      if (block.ref_cnt != 0 || protected_keys.count(key) != 0) continue;
      picked.push_back({key, block.slot});
      if (static_cast<int64_t>(picked.size()) == n) break;
    }
  }
  if (static_cast<int64_t>(picked.size()) < n) return false;
  for (const EvictedCpuBlock& e : picked) {
    blocks_.erase(e.key);
    if (evictable_list_) evictable_.erase(e.key);
  }
  out.insert(out.end(), picked.begin(), picked.end());
  return true;
}

void LruCpuPolicy::ForEach(
    const std::function<void(const OffloadKey&, const CpuBlock&)>& f) const {
  for (const auto& [key, block] : blocks_) f(key, block);
}

// ---- ARC ----------------------------------------------------------------------------------

CpuBlock* ArcCpuPolicy::Find(const OffloadKey& key) {
  CpuBlock* b = t1_.find(key);
  return b != nullptr ? b : t2_.find(key);
}

const CpuBlock* ArcCpuPolicy::Find(const OffloadKey& key) const {
  const CpuBlock* b = t1_.find(key);
  return b != nullptr ? b : t2_.find(key);
}

void ArcCpuPolicy::Insert(const OffloadKey& key, CpuBlock block) {
  t1_.push_back(key, block);
  b1_.erase(key);
  b2_.erase(key);
}

void ArcCpuPolicy::Remove(const OffloadKey& key) {
  if (!t1_.erase(key)) t2_.erase(key);
}

void ArcCpuPolicy::Touch(std::span<const OffloadKey> keys) {
  const double cap = static_cast<double>(capacity_);
  for (auto it = keys.rbegin(); it != keys.rend(); ++it) {
    const OffloadKey& key = *it;
    if (const CpuBlock* b = t1_.find(key)) {
      // A block whose store is still in flight was not really used twice: it stays recent.
      if (b->ready()) {
        t1_.splice_to_back(key, t2_);
      } else {
        t1_.move_to_back(key);
      }
    } else if (t2_.move_to_back(key)) {
    } else if (b1_.contains(key)) {
      const double delta =
          std::max(1.0, static_cast<double>(b2_.size()) / static_cast<double>(b1_.size()));
      p_ = std::min(p_ + delta, cap);
      b1_.move_to_back(key);
    } else if (b2_.contains(key)) {
      const double delta =
          std::max(1.0, static_cast<double>(b1_.size()) / static_cast<double>(b2_.size()));
      p_ = std::max(p_ - delta, 0.0);
      b2_.move_to_back(key);
    }
  }
}

bool ArcCpuPolicy::Evict(int64_t n, const OffloadKeySet& protected_keys,
                         std::vector<EvictedCpuBlock>& out) {
  if (n <= 0) return true;
  struct Pick {
    OffloadKey key;
    int32_t slot;
    bool from_t1;
  };
  std::vector<Pick> picked;
  auto t1_it = t1_.begin();
  auto t2_it = t2_.begin();
  // Advances `it` to the next evictable, unprotected entry of a list; false at its end. The
  // scans are monotonic: entries passed over stay unpickable for the rest of this eviction.
  auto next_candidate = [&](auto& it, auto end) {
    for (; it != end; ++it)
      if (it->second.ref_cnt == 0 && protected_keys.count(it->first) == 0) return true;
    return false;
  };
  int64_t virtual_t1 = t1_.size();
  const int64_t target = static_cast<int64_t>(p_);  // Python's int(): truncation, p ≥ 0
  while (static_cast<int64_t>(picked.size()) < n) {
    if (virtual_t1 >= target && next_candidate(t1_it, t1_.end())) {
      picked.push_back({t1_it->first, t1_it->second.slot, true});
      ++t1_it;
      --virtual_t1;
      continue;
    }
    if (!next_candidate(t2_it, t2_.end())) return false;
    picked.push_back({t2_it->first, t2_it->second.slot, false});
    ++t2_it;
  }
  for (const Pick& pk : picked) {
    if (pk.from_t1) {
      t1_.erase(pk.key);
      b1_.push_back(pk.key, 0);
    } else {
      t2_.erase(pk.key);
      b2_.push_back(pk.key, 0);
    }
    out.push_back({pk.key, pk.slot});
  }
  while (b1_.size() > capacity_) b1_.pop_front();
  while (b2_.size() > capacity_) b2_.pop_front();
  return true;
}

void ArcCpuPolicy::ForEach(
    const std::function<void(const OffloadKey&, const CpuBlock&)>& f) const {
  for (const auto& [key, block] : t1_) f(key, block);
  for (const auto& [key, block] : t2_) f(key, block);
}

}  // namespace kvsim
