#include "core/offload/cpu_offload_tier.h"

#include <vector>

#include "core/check.h"

namespace kvsim {

CpuOffloadTier::CpuOffloadTier(const CpuTierConfig& config)
    : config_(config),
      policy_(MakeCpuEvictionPolicy(config.policy, config.num_blocks, config.lru_evictable_list)) {
  KVSIM_CHECK(config.num_blocks >= 0);
  KVSIM_CHECK(config.max_tracker_size >= 1);
}

void CpuOffloadTier::CountLookup(const OffloadKey& key) {
  if (int64_t* c = lookup_counts_.find(key)) {
    ++*c;
    lookup_counts_.move_to_back(key);
    return;
  }
  if (lookup_counts_.size() >= config_.max_tracker_size) lookup_counts_.pop_front();
  lookup_counts_.push_back(key, 1);
}

int64_t CpuOffloadTier::lookup_count(const OffloadKey& key) const {
  const int64_t* c = lookup_counts_.find(key);
  return c == nullptr ? 0 : *c;
}

CpuLookupResult CpuOffloadTier::Lookup(std::span<const OffloadKey> keys) {
  CpuLookupResult r;
  for (const OffloadKey& key : keys) {
    if (tracking()) CountLookup(key);
    const CpuBlock* b = policy_->Find(key);
    if (b == nullptr) break;
    if (!b->ready()) {
      r.deferred = true;  // keep scanning (and counting) until a miss
      continue;
    }
    ++r.hits;
  }
  if (r.deferred) r.hits = 0;
  return r;
}

std::optional<CpuStorePlan> CpuOffloadTier::PrepareStore(std::span<const OffloadKey> keys) {
  // 1. store_threshold: only keys looked up often enough.
  std::vector<OffloadKey> eligible;
  eligible.reserve(keys.size());
  for (const OffloadKey& k : keys)
    if (!tracking() || lookup_count(k) >= config_.store_threshold) eligible.push_back(k);
  // 2. Keys already resident (ready or in flight) are not stored again.
  CpuStorePlan plan;
  for (const OffloadKey& k : eligible)
    if (policy_->Find(k) == nullptr) plan.keys_to_store.push_back(k);
  if (plan.keys_to_store.empty()) return plan;

  // 3. Evict exactly what is missing, all or nothing. The call's own keys are protected: a block
  // that was already stored must still be there when this call returns.
  const int64_t need = static_cast<int64_t>(plan.keys_to_store.size()) - num_free_slots();
  if (need > 0) {
    if (need > num_evictable_) return std::nullopt;
    const OffloadKeySet protected_keys(eligible.begin(), eligible.end());
    if (!policy_->Evict(need, protected_keys, plan.evicted)) return std::nullopt;
    KVSIM_CHECK(static_cast<int64_t>(plan.evicted.size()) == need);
    num_evictable_ -= need;
    for (const EvictedCpuBlock& e : plan.evicted) free_slots_.push_back(e.slot);
  }

  // 4. Slots: fresh ones first, then the free list from its back.
  for (const OffloadKey& k : plan.keys_to_store) {
    int32_t slot;
    if (num_fresh_used_ < config_.num_blocks) {
      slot = static_cast<int32_t>(num_fresh_used_++);
    } else {
      KVSIM_CHECK(!free_slots_.empty());
      slot = free_slots_.back();
      free_slots_.pop_back();
    }
    plan.slots.push_back(slot);
    policy_->Insert(k, CpuBlock{slot, -1});
  }
  num_in_flight_ += static_cast<int64_t>(plan.keys_to_store.size());
  return plan;
}

void CpuOffloadTier::CompleteStore(std::span<const OffloadKey> keys, bool success) {
  for (const OffloadKey& k : keys) {
    CpuBlock* b = policy_->Find(k);
    if (b == nullptr || b->ready()) continue;
    --num_in_flight_;
    if (success) {
      b->ref_cnt = 0;
      ++num_evictable_;
      policy_->MarkEvictable(k);
    } else {
      free_slots_.push_back(b->slot);
      policy_->Remove(k);
    }
  }
}

std::vector<int32_t> CpuOffloadTier::PrepareLoad(std::span<const OffloadKey> keys) {
  std::vector<int32_t> slots;
  slots.reserve(keys.size());
  for (const OffloadKey& k : keys) {
    CpuBlock* b = policy_->Find(k);
    KVSIM_CHECK_MSG(b != nullptr && b->ready(), "load of a CPU block that is not ready");
    if (b->ref_cnt == 0) {
      --num_evictable_;
      policy_->MarkNonEvictable(k);
    }
    ++b->ref_cnt;
    slots.push_back(b->slot);
  }
  return slots;
}

void CpuOffloadTier::CompleteLoad(std::span<const OffloadKey> keys) {
  for (const OffloadKey& k : keys) {
    CpuBlock* b = policy_->Find(k);
    KVSIM_CHECK_MSG(b != nullptr && b->ref_cnt > 0, "load completed on an unpinned CPU block");
    if (--b->ref_cnt == 0) {
      ++num_evictable_;
      policy_->MarkEvictable(k);
    }
  }
}

void CpuOffloadTier::CheckInvariants() const {
  KVSIM_CHECK(num_fresh_used_ <= config_.num_blocks);
  std::vector<int> holders(static_cast<size_t>(config_.num_blocks), 0);
  int64_t evictable = 0, in_flight = 0;
  policy_->ForEach([&](const OffloadKey&, const CpuBlock& b) {
    KVSIM_CHECK(b.slot >= 0 && b.slot < num_fresh_used_);
    KVSIM_CHECK(b.ref_cnt >= -1);
    ++holders[static_cast<size_t>(b.slot)];
    if (b.ref_cnt == 0) ++evictable;
    if (b.ref_cnt == -1) ++in_flight;
  });
  for (int32_t s : free_slots_) {
    KVSIM_CHECK(s >= 0 && s < num_fresh_used_);
    ++holders[static_cast<size_t>(s)];
  }
  for (int64_t s = 0; s < num_fresh_used_; ++s) KVSIM_CHECK(holders[static_cast<size_t>(s)] == 1);
  KVSIM_CHECK(policy_->size() + static_cast<int64_t>(free_slots_.size()) == num_fresh_used_);
  KVSIM_CHECK(evictable == num_evictable_);
  KVSIM_CHECK(in_flight == num_in_flight_);
  KVSIM_CHECK(lookup_counts_.size() <= config_.max_tracker_size);
}

}  // namespace kvsim
