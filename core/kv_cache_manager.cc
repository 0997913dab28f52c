// The KV cache manager and its hybrid coordinator (reference §5.3–5.6). The rules of each
// group type are its policy (core/kv_group/); this file holds the request table, the
// coordinator's fixed point and the block-count math of allocate_slots common to all types.
#include "core/kv_cache_manager.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>

#include "core/check.h"
#include "core/int_math.h"
#include "core/kv_group/kv_group_policy.h"

namespace kvsim {

// ---- Config ----------------------------------------------------------------------------

int64_t KvCacheManagerConfig::scheduler_block_size() const {
  int64_t l = 1;
  for (const auto& g : groups) l = std::lcm(l, g.block_size);
  return l;
}

bool KvCacheManagerConfig::has_mamba_align() const {
  for (const auto& g : groups)
    if (g.kind == KvGroupKind::kMamba && g.mamba_mode == MambaCacheMode::kAlign) return true;
  return false;
}

int64_t KvCacheManagerConfig::effective_retention_interval() const {
  if (prefix_cache_retention_interval != kRetentionProfileDefault)
    return prefix_cache_retention_interval;
  return semantics == VllmSemantics::kLatest ? 0 : kRetentionDense;
}

int64_t KvCacheManagerConfig::resolved_hash_block_size() const {
  if (hash_block_size > 0) return hash_block_size;
  if (groups.empty()) return 16;
  if (groups.size() == 1) return groups[0].block_size;
  for (const auto& g : groups)
    if (g.kind == KvGroupKind::kMamba && g.mamba_mode != MambaCacheMode::kAlign)
      return scheduler_block_size();
  int64_t d = 0;
  for (const auto& g : groups) d = std::gcd(d, g.block_size);
  return d;
}

Status KvCacheManagerConfig::Validate() const {
  if (num_blocks < 1)
    return Status::Error("bad_num_blocks", "num_blocks must be at least 1 (the null block)");
  if (num_blocks >= (int64_t{1} << 30))
    return Status::Error("bad_num_blocks", "num_blocks must be below 2^30");
  for (size_t i = 0; i < groups.size(); ++i) {
    const auto& g = groups[i];
    const std::string where =
        "group " + std::to_string(i) + " (" + std::string(KvGroupKindName(g.kind)) + ")";
    if (g.block_size <= 0)
      return Status::Error("bad_block_size", where + ": block size must be positive");
    if (g.kind == KvGroupKind::kSlidingWindow && g.sliding_window < 1)
      return Status::Error("bad_window", where + ": sliding window must be at least 1");
    if (g.kind == KvGroupKind::kChunkedLocal && g.attention_chunk_size < 1)
      return Status::Error("bad_chunk", where + ": attention chunk size must be at least 1");
    if (g.kind == KvGroupKind::kMamba && g.mamba_mode == MambaCacheMode::kNone && enable_caching)
      return Status::Error("bad_mamba_mode",
                           where + ": Mamba mode 'none' requires prefix caching off");
    if (g.num_speculative_blocks < 0)
      return Status::Error("bad_spec", where + ": negative speculative blocks");
  }
  if (prefix_cache_retention_interval < kRetentionProfileDefault)
    return Status::Error("bad_retention",
                         "prefix_cache_retention_interval must be null, 0 or a positive number "
                         "of tokens, got " +
                             std::to_string(prefix_cache_retention_interval));
  if (semantics == VllmSemantics::kClassic && prefix_cache_retention_interval >= 0)
    return Status::Error("bad_retention",
                         "prefix_cache_retention_interval is a latest-snapshot setting (vLLM "
                         "2026-08); classic is always dense: drop it or use vllm_semantics "
                         "latest");
  const int64_t hb = resolved_hash_block_size();
  if (hb <= 0) return Status::Error("bad_block_size", "hash block size must be positive");
  // vLLM keeps one checkpoint per interval-sized segment of scheduler blocks, and refuses an
  // interval that is not a whole number of them when a group caches sparsely.
  const bool sparse_capable = std::any_of(groups.begin(), groups.end(), [](const auto& g) {
    return g.kind == KvGroupKind::kSlidingWindow || g.kind == KvGroupKind::kMamba;
  });
  if (sparse_capable && prefix_cache_retention_interval > 0 &&
      prefix_cache_retention_interval % scheduler_block_size() != 0)
    return Status::Error("bad_retention", "prefix_cache_retention_interval " +
                                              std::to_string(prefix_cache_retention_interval) +
                                              " is not a multiple of the scheduler block size " +
                                              std::to_string(scheduler_block_size()));
  for (size_t i = 0; i < groups.size(); ++i) {
    if (groups[i].block_size % hb != 0)
      return Status::Error("bad_block_size", "group " + std::to_string(i) + " block size " +
                                                 std::to_string(groups[i].block_size) +
                                                 " is not a multiple of the hash block size " +
                                                 std::to_string(hb));
  }
  return Status::Ok();
}

Result<KvCacheManagerConfig> KvCacheManagerConfigFromPlan(const KvCachePlan& plan) {
  KvCacheManagerConfig c;
  c.num_blocks = plan.num_blocks;
  c.max_model_len = plan.max_model_len;
  c.max_num_batched_tokens = plan.config.max_num_batched_tokens;
  c.enable_caching = plan.config.enable_prefix_caching;
  c.semantics = plan.config.semantics;
  c.prefix_cache_retention_interval = plan.config.prefix_cache_retention_interval;
  // The groups that hold a drafter's layers are the EAGLE groups; without a drafter in the
  // plan it is not known, and every group is one (vLLM's fallback).
  const bool has_drafter = std::any_of(plan.layers.begin(), plan.layers.end(),
                                       [](const PlannedLayer& l) { return l.is_draft; });
  for (const KvCacheGroup& g : plan.groups) {
    KvGroupConfig gc;
    gc.block_size = g.block_size;
    gc.eagle_group = !has_drafter || std::any_of(g.layers.begin(), g.layers.end(), [&](int l) {
      return plan.layers[static_cast<size_t>(l)].is_draft;
    });
    switch (g.kind) {
      case LayerKind::kFullAttention:
      case LayerKind::kMla:
        gc.kind = KvGroupKind::kFullAttention;
        break;
      case LayerKind::kSlidingWindow:
        gc.kind = KvGroupKind::kSlidingWindow;
        gc.sliding_window = g.spec.sliding_window;
        break;
      case LayerKind::kChunkedLocal:
        gc.kind = KvGroupKind::kChunkedLocal;
        gc.attention_chunk_size = g.spec.attention_chunk_size;
        break;
      case LayerKind::kMamba:
        gc.kind = KvGroupKind::kMamba;
        gc.mamba_mode = plan.mamba_mode;
        gc.num_speculative_blocks = g.spec.num_speculative_blocks;
        break;
    }
    c.groups.push_back(gc);
  }
  if (Status s = c.Validate(); !s.ok()) return s;
  return c;
}

Result<KvCacheManagerConfig> KvCacheManagerConfigFromHybrid(std::string_view hybrid,
                                                            int64_t block_size,
                                                            int64_t num_blocks) {
  KvCacheManagerConfig c;
  c.num_blocks = num_blocks;
  KvGroupConfig full;
  full.block_size = block_size;
  c.groups.push_back(full);
  if (!hybrid.empty() && hybrid != "none") {
    KvGroupConfig g;
    g.block_size = block_size;
    if (hybrid == "mamba-align") {
      g.kind = KvGroupKind::kMamba;
      g.mamba_mode = MambaCacheMode::kAlign;
    } else if (hybrid == "mamba-all") {
      g.kind = KvGroupKind::kMamba;
      g.mamba_mode = MambaCacheMode::kAll;
    } else if (hybrid.substr(0, 4) == "swa:") {
      g.kind = KvGroupKind::kSlidingWindow;
      const std::string w(hybrid.substr(4));
      int64_t v = 0;
      size_t pos = 0;
      try {
        v = std::stoll(w, &pos);
      } catch (...) {
        pos = 0;
      }
      if (w.empty() || pos != w.size() || v < 1)
        return Status::Error("bad_hybrid", "--hybrid swa:W needs a positive integer window, got '" +
                                               std::string(hybrid) + "'");
      g.sliding_window = v;
    } else {
      return Status::Error("bad_hybrid", "unknown --hybrid '" + std::string(hybrid) +
                                             "' (expected mamba-align, mamba-all or swa:W)");
    }
    c.groups.push_back(g);
  }
  if (Status s = c.Validate(); !s.ok()) return s;
  return c;
}

// ---- State -------------------------------------------------------------------------------

struct KvCacheManager::RequestState {
  bool live = false;
  RequestBlockHasher hasher;
  RequestKeys keys;
  int64_t num_prompt_tokens = 0;
  std::vector<GroupBlockTable> groups;  // per group
  int64_t shared_prefix_boundary = 0;   // [latest] junction of the last lookup, or 0
};

struct KvCacheManager::Impl {
  // A lookup unit: groups of one spec, looked up together (§5.5).
  struct SpecGroup {
    const KvGroupPolicy* policy;  // the first group's (all groups of the unit share its rules)
    std::vector<int32_t> gids;
  };
  std::vector<std::unique_ptr<KvGroupPolicy>> policies;  // per group
  std::vector<RequestState> reqs;  // by handle
  std::vector<RequestHandle> free_handles;
  RequestState& req(RequestHandle h) { return reqs[static_cast<size_t>(h.value())]; }
  const RequestState& req(RequestHandle h) const { return reqs[static_cast<size_t>(h.value())]; }
  int64_t hash_block = 16;
  int64_t sched_block = 16;
  std::vector<int64_t> hash_ratio;     // per group: block_size / hash_block
  std::vector<SpecGroup> spec_groups;  // lookup units; prefix-closed kinds first
  bool single_full = false;            // fast path: one full-attention group
  int chunk_aligner = -1;              // the group that trims prefill chunks, or −1

  // The pending hit of the last GetComputedBlocks.
  RequestHandle hit_handle = kNoRequestHandle;
  uint64_t hit_epoch = 0;
  int64_t hit_tokens = 0;
  std::vector<std::vector<BlockId>> hit_blocks;  // per group
  uint64_t epoch = 1;

  std::vector<BlockId> tmp;
  std::vector<BlockId> lookup;  // one block per gid of a spec group
  // The coordinator's per-unit scratch: a prefix-closed unit's hit in blocks, and whether a
  // unit has dropped its EAGLE block at the current candidate length.
  std::vector<int64_t> prefix_closed_count;
  std::vector<uint8_t> eagle_verified;
  // [latest] some group may cache sparsely and retention is not dense.
  bool sparse_retention = false;
  std::vector<uint8_t> mask;
  // Hit states cached in the current step, as (hash, group); tracked once NewStepStarts has
  // been called, for the groups that defer such hits.
  bool step_tracking = false;
  std::vector<std::pair<BlockHash, int32_t>> cached_this_step;
  bool CachedThisStep(BlockHash hv, int32_t g) const {
    for (const auto& e : cached_this_step)
      if (e.first == hv && e.second == g) return true;
    return false;
  }
};

KvCacheManager::KvCacheManager(const KvCacheManagerConfig& config)
    : config_(config),
      pool_(config.num_blocks, config.enable_caching, config.semantics),
      impl_(std::make_unique<Impl>()) {
  const Status s = config_.Validate();
  KVSIM_CHECK_MSG(s.ok(), s.ToString().c_str());
  Impl& m = *impl_;
  m.hash_block = config_.resolved_hash_block_size();
  m.sched_block = config_.scheduler_block_size();
  KvGroupContext ctx;
  ctx.semantics = config_.semantics;
  ctx.use_eagle = config_.use_eagle;
  ctx.scheduler_block_size = m.sched_block;
  ctx.hash_block_size = m.hash_block;
  ctx.prefix_match_unit = config_.hash_block_size > 0;
  ctx.max_num_batched_tokens = config_.max_num_batched_tokens;
  ctx.retention_interval = config_.effective_retention_interval();
  for (size_t i = 0; i < config_.groups.size(); ++i) {
    KvGroupConfig g = config_.groups[i];
    // Resolved for the policy: EAGLE is on and the group's lookup unit (identical specs) has
    // an EAGLE group; vLLM marks the whole unit, and every manager of it.
    g.eagle_group = config_.use_eagle && std::any_of(config_.groups.begin(), config_.groups.end(),
                                                     [&](const KvGroupConfig& o) {
                                                       return o.SameSpec(g) && o.eagle_group;
                                                     });
    m.hash_ratio.push_back(g.block_size / m.hash_block);
    m.policies.push_back(MakeKvGroupPolicy(g, ctx));
    const KvGroupPolicy& p = *m.policies.back();
    if (p.aligns_prefill_chunks()) m.chunk_aligner = static_cast<int>(i);
    if (ctx.retention_interval != KvCacheManagerConfig::kRetentionDense &&
        p.retention_can_be_sparse())
      m.sparse_retention = true;
  }
  // Merge identical specs into one lookup unit; prefix-closed kinds (full attention) first
  // (§5.5).
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < config_.groups.size(); ++i) {
      const KvGroupPolicy* p = m.policies[i].get();
      if (p->hit_is_prefix_closed() != (pass == 0)) continue;
      bool merged = false;
      for (auto& sg : m.spec_groups) {
        if (sg.policy->group().SameSpec(p->group())) {
          sg.gids.push_back(static_cast<int32_t>(i));
          merged = true;
          break;
        }
      }
      if (!merged) m.spec_groups.push_back({p, {static_cast<int32_t>(i)}});
    }
  }
  m.single_full = config_.groups.size() == 1 &&
                  config_.groups[0].kind == KvGroupKind::kFullAttention && !config_.use_eagle &&
                  !config_.disable_fast_paths;
  m.hit_blocks.resize(config_.groups.size());
}

KvCacheManager::~KvCacheManager() = default;

// ---- Request table -----------------------------------------------------------------------

RequestHandle KvCacheManager::AddRequest(std::span<const TokenId> prompt, const RequestKeys& keys) {
  Impl& m = *impl_;
  RequestHandle h;
  if (!m.free_handles.empty()) {
    h = m.free_handles.back();
    m.free_handles.pop_back();
  } else {
    h = RequestHandle{static_cast<int32_t>(m.reqs.size())};
    m.reqs.emplace_back();
    m.reqs.back().groups.resize(config_.groups.size());
  }
  RequestState& r = m.req(h);
  r.live = true;
  r.keys = keys;
  r.shared_prefix_boundary = 0;
  r.hasher.Reset(m.hash_block, keys.empty() ? nullptr : &r.keys);
  r.hasher.Append(prompt);
  r.num_prompt_tokens = static_cast<int64_t>(prompt.size());
  ++num_live_;
  return h;
}

RequestHandle KvCacheManager::AddRequestWithHashes(std::span<const BlockHash> block_hashes,
                                                   std::span<const TokenId> tail) {
  const RequestHandle h = AddRequest({});
  RequestState& r = impl_->req(h);
  r.hasher.Assign(block_hashes, tail);
  r.num_prompt_tokens = r.hasher.num_tokens();
  return h;
}

void KvCacheManager::AppendTokens(RequestHandle h, std::span<const TokenId> tokens) {
  RequestState& r = impl_->req(h);
  KVSIM_CHECK(r.live);
  r.hasher.Append(tokens);
}

void KvCacheManager::RemoveRequest(RequestHandle h) {
  Free(h);
  RequestState& r = impl_->req(h);
  r.live = false;
  r.keys = RequestKeys{};
  impl_->free_handles.push_back(h);
  --num_live_;
}

int64_t KvCacheManager::num_tokens(RequestHandle h) const {
  return impl_->req(h).hasher.num_tokens();
}

int64_t KvCacheManager::num_prompt_tokens(RequestHandle h) const {
  return impl_->req(h).num_prompt_tokens;
}

std::span<const BlockId> KvCacheManager::blocks(RequestHandle h, int group) const {
  return impl_->req(h).groups[static_cast<size_t>(group)].blocks;
}

std::span<const BlockHash> KvCacheManager::block_hashes(RequestHandle h) const {
  return impl_->req(h).hasher.hashes();
}

// ---- Prefix hits -------------------------------------------------------------------------

PrefixHit KvCacheManager::GetComputedBlocks(RequestHandle h, int64_t num_computed_tokens) {
  Impl& m = *impl_;
  RequestState& r = m.req(h);
  KVSIM_CHECK(r.live);
  if (num_computed_tokens == 0) r.shared_prefix_boundary = 0;  // a lookup replaces it
  for (auto& v : m.hit_blocks) v.clear();
  m.hit_handle = h;
  m.hit_epoch = m.epoch;
  m.hit_tokens = 0;
  if (!config_.enable_caching || num_computed_tokens != 0 || config_.groups.empty()) return {};
  const int64_t ntok = r.hasher.num_tokens();
  ++stats_.requests;
  stats_.query_tokens += ntok;
  const int64_t max_len = ntok - 1;  // at least one token is recomputed
  if (max_len <= 0) return {};
  const std::vector<BlockHash>& hashes = r.hasher.hashes();

  if (m.single_full) {
    // Fast path: one full-attention group; scan until the first miss, prefetching ahead.
    const int64_t nmax = max_len / config_.groups[0].block_size;
    const int64_t k = m.hash_ratio[0];
    std::vector<BlockId>& out = m.hit_blocks[0];
    constexpr int64_t kAhead = 64;  // far enough ahead to cover a DRAM miss at large caches
    for (int64_t j = 0; j < std::min(nmax, kAhead); ++j)
      pool_.PrefetchLookup(hashes[static_cast<size_t>((j + 1) * k - 1)], 0);
    for (int64_t j = 0; j < nmax; ++j) {
      if (j + kAhead < nmax)
        pool_.PrefetchLookup(hashes[static_cast<size_t>((j + kAhead + 1) * k - 1)], 0);
      const BlockId b = pool_.GetCachedBlock(hashes[static_cast<size_t>((j + 1) * k - 1)], 0);
      if (b == kNoBlock) break;
      pool_.PrefetchBlock(b);  // Touch() reads it next
      out.push_back(b);
    }
    m.hit_tokens = static_cast<int64_t>(out.size()) * config_.groups[0].block_size;
    stats_.hit_tokens += m.hit_tokens;
    return {m.hit_tokens, m.hit_tokens};
  }

  // The coordinator's fixed point over the spec groups (§5.5): each unit's hit bounds the
  // next unit's search until no unit shortens it. With EAGLE a unit drops its last block at
  // most once per candidate length (vLLM's eagle_verified; a unit that shortens the length
  // without dropping resets that), and a dropping lookup looks one block past the candidate
  // (eagle_margin) so the drop lands back on it. One full-attention unit plus one other
  // converges in one pass, and vLLM stops there (is_simple_hybrid).
  int64_t L = max_len;
  int64_t longest_single = 0;
  bool first = true;
  std::vector<int64_t>& prefix_closed_count = m.prefix_closed_count;
  std::vector<uint8_t>& eagle_verified = m.eagle_verified;
  prefix_closed_count.assign(m.spec_groups.size(), 0);
  eagle_verified.assign(m.spec_groups.size(), 0);
  const bool simple_hybrid =
      m.spec_groups.size() == 2 && m.spec_groups[0].policy->hit_is_prefix_closed();
  while (true) {
    const int64_t L0 = L;
    for (size_t s = 0; s < m.spec_groups.size(); ++s) {
      const Impl::SpecGroup& sg = m.spec_groups[s];
      const KvGroupPolicy& p = *sg.policy;
      const int64_t B = p.block_size();
      int64_t nblocks = 0;
      if (p.hit_is_prefix_closed() && !first) {
        nblocks = std::min(prefix_closed_count[s], L / B);
        prefix_closed_count[s] = nblocks;
      } else {
        const bool drop = p.group().eagle_group && eagle_verified[s] == 0;
        const int64_t search = drop && p.hit_drops_eagle_block() ? std::min(L + B, max_len) : L;
        for (int32_t g : sg.gids) m.hit_blocks[static_cast<size_t>(g)].clear();
        m.lookup.resize(sg.gids.size());
        const HitProbe cached(pool_, hashes.data(), B / m.hash_block, sg.gids);
        const HitSink put(m.hit_blocks, sg.gids);
        nblocks = p.FindHit(search, drop, cached, put, m.lookup.data());
        if (drop)
          eagle_verified[s] = 1;
        else if (nblocks * B < L)
          std::fill(eagle_verified.begin(), eagle_verified.end(), 0);
        if (p.hit_is_prefix_closed()) prefix_closed_count[s] = nblocks;
        for (int32_t g : sg.gids)
          m.hit_blocks[static_cast<size_t>(g)].resize(static_cast<size_t>(nblocks), kNullBlock);
      }
      const int64_t tok = nblocks * B;
      if (first) longest_single = std::max(longest_single, tok);
      L = std::min(L, tok);
    }
    first = false;
    if (L == L0 || m.spec_groups.size() == 1 || simple_hybrid) break;
  }
  for (size_t g = 0; g < config_.groups.size(); ++g) {
    const int64_t n = L / config_.groups[g].block_size;
    auto& v = m.hit_blocks[g];
    v.resize(static_cast<size_t>(n), kNullBlock);
  }
  m.hit_tokens = L;
  stats_.hit_tokens += L;
  PrefixHit hit{L, L};
  if (config_.semantics == VllmSemantics::kLatest) {
    hit.shared_prefix_tokens = std::max(L, longest_single);
    r.shared_prefix_boundary = hit.shared_prefix_boundary();
  }
  return hit;
}

// ---- Allocation --------------------------------------------------------------------------

void KvCacheManager::RemoveSkippedBlocks(RequestHandle h, int64_t num_computed_tokens) {
  Impl& m = *impl_;
  ++m.epoch;
  RequestState& r = m.req(h);
  for (size_t g = 0; g < config_.groups.size(); ++g)
    m.policies[g]->RemoveSkippedBlocks(num_computed_tokens, r.groups[g], pool_, m.tmp);
}

namespace {

// Hit blocks that are free now: touching them takes them out of the free queue, so they
// count against the free blocks like new ones (every group type alike).
int64_t NumEvictable(const BlockPool& pool, std::span<const BlockId> hit) {
  int64_t evictable = 0;
  for (BlockId b : hit)
    if (b != kNullBlock && pool.ref_cnt(b) == 0) ++evictable;
  return evictable;
}

// One group: whether a block past the cached ones is full (within `computed` tokens) and held,
// the only case in which caching has anything to do. Asked once per running request per step
// (most decode steps: no), so no division and no virtual call.
bool HasNewFullBlock(const GroupBlockTable& t, int64_t computed, int64_t block_size) {
  return t.num_cached < static_cast<int64_t>(t.blocks.size()) &&
         computed >= (t.num_cached + 1) * block_size;
}

}  // namespace

bool KvCacheManager::AllocateSlots(RequestHandle h, int64_t num_computed_tokens,
                                   int64_t num_new_tokens, int64_t num_new_computed_tokens,
                                   int64_t num_lookahead_tokens, bool full_sequence_must_fit,
                                   int64_t num_in_flight_tokens,
                                   int64_t num_external_computed_tokens, bool delay_cache_blocks,
                                   int64_t reserved_blocks, int64_t watermark_blocks) {
  Impl& m = *impl_;
  RequestState& r = m.req(h);
  KVSIM_CHECK(r.live);
  KVSIM_CHECK(num_new_tokens >= 0 && num_lookahead_tokens >= 0 && num_computed_tokens >= 0 &&
              num_external_computed_tokens >= 0 && reserved_blocks >= 0 &&
              watermark_blocks >= 0);
  // Fast path, ahead of the general path's setup: one full-attention group whose blocks
  // already cover the demand (a decode step inside its last block, 15 steps in 16 at block
  // 16) allocates nothing, so only the watermark check and the cache of a newly full block
  // are left. The general path below computes exactly this with need = 0.
  if (m.single_full && num_new_computed_tokens <= 0 && !full_sequence_must_fit) {
    const GroupBlockTable& t = r.groups[0];
    const int64_t B = config_.groups[0].block_size;
    const int64_t covered = num_computed_tokens + num_external_computed_tokens + num_new_tokens;
    int64_t slots = covered + num_lookahead_tokens;
    if (config_.max_model_len > 0) slots = std::min(slots, config_.max_model_len);
    const auto held = static_cast<int64_t>(t.blocks.size());
    if (slots <= held * B) {
      ++m.epoch;
      if (watermark_blocks > pool_.num_free_blocks() - reserved_blocks) return false;
      // CacheBlocks' own early-out, tested here to skip the call on most decode steps.
      if (!delay_cache_blocks && config_.enable_caching &&
          HasNewFullBlock(t, std::min(covered, r.hasher.num_tokens()), B))
        CacheBlocks(h, covered);
      return true;
    }
  }
  const bool use_hit = num_new_computed_tokens > 0;
  if (use_hit) {
    KVSIM_CHECK_MSG(
        m.hit_handle == h && m.hit_epoch == m.epoch && m.hit_tokens == num_new_computed_tokens,
        "num_new_computed_tokens must be the hit GetComputedBlocks just returned");
    KVSIM_CHECK(num_computed_tokens == 0);
  }
  const size_t ng = config_.groups.size();
  const int64_t total_computed =
      num_computed_tokens + num_new_computed_tokens + num_external_computed_tokens;
  SlotDemand demand{total_computed + num_new_tokens + num_lookahead_tokens,
                    total_computed + num_new_tokens, total_computed};
  if (config_.max_model_len > 0) {
    demand.num_tokens = std::min(demand.num_tokens, config_.max_model_len);
    demand.num_tokens_main = std::min(demand.num_tokens_main, config_.max_model_len);
  }
  // Out-of-window blocks go first. [latest] only tokens already processed count: the
  // window of a step still in flight must stay readable.
  if (!m.single_full) {
    int64_t processed = num_computed_tokens;
    if (config_.semantics == VllmSemantics::kLatest)
      processed = std::max<int64_t>(0, num_computed_tokens - num_in_flight_tokens);
    RemoveSkippedBlocks(h, processed);
  }
  ++m.epoch;

  auto num_hit = [&](size_t g) -> int64_t {
    return use_hit ? static_cast<int64_t>(m.hit_blocks[g].size()) : 0;
  };
  auto evictable = [&](size_t g) -> int64_t {
    return use_hit ? NumEvictable(pool_, m.hit_blocks[g]) : 0;
  };
  // A hit on a state another request cached in this very step waits a step.
  if (use_hit && m.step_tracking && !m.cached_this_step.empty()) {
    const std::vector<BlockHash>& hashes = r.hasher.hashes();
    for (size_t g = 0; g < ng; ++g) {
      const auto& hb = m.hit_blocks[g];
      if (!m.policies[g]->defers_hits_cached_this_step() || hb.empty()) continue;
      const int64_t last = static_cast<int64_t>(hb.size()) * m.hash_ratio[g] - 1;
      if (m.CachedThisStep(hashes[static_cast<size_t>(last)], static_cast<int32_t>(g)))
        return false;
    }
  }
  const int64_t free = pool_.num_free_blocks();
  if (full_sequence_must_fit) {
    int64_t whole = r.hasher.num_tokens();
    if (config_.max_model_len > 0) whole = std::min(whole, config_.max_model_len);
    const int64_t max_len = config_.max_model_len > 0 ? config_.max_model_len : whole;
    const SlotDemand whole_demand{whole, whole, total_computed};
    int64_t need = 0;
    for (size_t g = 0; g < ng; ++g) {
      const KvGroupPolicy& p = *m.policies[g];
      need += evictable(g) +
              p.NumNewBlocks(whole_demand, num_hit(g), r.groups[g], p.MaxBlocksPerRequest(max_len));
    }
    if (need + watermark_blocks > free) return false;
  }
  int64_t need = 0;
  for (size_t g = 0; g < ng; ++g)
    need += evictable(g) + m.policies[g]->NumNewBlocks(demand, num_hit(g), r.groups[g], 0);
  if (need + watermark_blocks > free - reserved_blocks) return false;

  // 1. Touch every group's hit blocks, then 2. allocate group by group.
  if (use_hit) {
    for (size_t g = 0; g < ng; ++g) {
      GroupBlockTable& t = r.groups[g];
      KVSIM_CHECK(t.blocks.empty());
      pool_.Touch(m.hit_blocks[g]);
      t.blocks.assign(m.hit_blocks[g].begin(), m.hit_blocks[g].end());
      t.num_cached = static_cast<int64_t>(m.hit_blocks[g].size());
    }
    m.hit_handle = kNoRequestHandle;
  }
  for (size_t g = 0; g < ng; ++g) m.policies[g]->AllocateNewBlocks(demand, r.groups[g], pool_);

  // 3. Cache the newly full blocks (never beyond the request's real tokens); a load's
  // blocks wait until their contents have arrived.
  if (!delay_cache_blocks) CacheBlocks(h, total_computed + num_new_tokens);
  return true;
}

void KvCacheManager::CacheBlocks(RequestHandle h, int64_t num_tokens) {
  if (!config_.enable_caching) return;
  Impl& m = *impl_;
  RequestState& r = m.req(h);
  KVSIM_CHECK(r.live);
  const size_t ng = config_.groups.size();
  const int64_t computed = std::min(num_tokens, r.hasher.num_tokens());
  if (ng == 1 && !HasNewFullBlock(r.groups[0], computed, config_.groups[0].block_size)) return;
  // Several groups cache up to a scheduler-block boundary. [latest] With EAGLE each group
  // caches one block more when it has it: the block a dropping lookup peeks at (vLLM #44082).
  const int64_t aligned = ng > 1 ? computed / m.sched_block * m.sched_block : computed;
  const bool eagle_lookahead = ng > 1 && config_.semantics == VllmSemantics::kLatest && aligned > 0;
  const std::vector<BlockHash>& hashes = r.hasher.hashes();
  // The hit boundaries a sparse group must keep: the replay boundary and the junction.
  const int64_t boundaries[2] = {r.num_prompt_tokens - 1, r.shared_prefix_boundary};
  const std::span<const int64_t> bs(boundaries, r.shared_prefix_boundary > 0 ? 2 : 1);
  for (size_t g = 0; g < ng; ++g) {
    const KvGroupPolicy& p = *m.policies[g];
    GroupBlockTable& t = r.groups[g];
    const int64_t B = p.block_size();
    const int64_t k = m.hash_ratio[g];
    const int64_t to_cache =
        eagle_lookahead && p.group().eagle_group ? std::min(computed, aligned + B) : aligned;
    const int64_t nfull = std::min<int64_t>(to_cache / B, static_cast<int64_t>(t.blocks.size()));
    const int64_t j0 = t.num_cached;
    if (nfull > j0) {
      const bool dense = !m.sparse_retention || !p.RetentionMask(j0, nfull, bs, m.mask);
      if (m.step_tracking && p.defers_hits_cached_this_step()) {
        for (int64_t j = j0; j < nfull; ++j)
          if (t.blocks[static_cast<size_t>(j)] != kNullBlock &&
              (dense || m.mask[static_cast<size_t>(j - j0)]))
            m.cached_this_step.emplace_back(hashes[static_cast<size_t>((j + 1) * k - 1)],
                                            static_cast<int32_t>(g));
      }
      if (dense) {
        pool_.CacheBlocks(t.blocks.data() + j0, hashes.data() + (j0 + 1) * k - 1, k, nfull - j0,
                          static_cast<int32_t>(g));
      } else {
        // Blocks outside the mask are never hashed: they go back to the free queue
        // unhashed (to its head in latest) and no later hit can end on them.
        for (int64_t j = j0; j < nfull; ++j)
          if (m.mask[static_cast<size_t>(j - j0)])
            pool_.CacheBlocks(t.blocks.data() + j, hashes.data() + (j + 1) * k - 1, k, 1,
                              static_cast<int32_t>(g));
      }
    }
    t.num_cached = std::max(t.num_cached, nfull);
  }
}

void KvCacheManager::NewStepStarts() {
  impl_->step_tracking = true;
  impl_->cached_this_step.clear();
}

void KvCacheManager::Free(RequestHandle h) {
  Impl& m = *impl_;
  ++m.epoch;
  RequestState& r = m.req(h);
  for (GroupBlockTable& t : r.groups) {
    pool_.FreeBlocksReversed(t.blocks);
    t.blocks.clear();
    t.num_cached = 0;
    t.state_allocated = false;
    t.last_state = -1;
  }
}

int64_t KvCacheManager::MambaAlignedSplit(RequestHandle h, int64_t num_computed_tokens,
                                          int64_t num_new_tokens, int64_t shared_prefix_tokens,
                                          int64_t chunk_limit) const {
  const Impl& m = *impl_;
  if (m.chunk_aligner < 0) return num_new_tokens;
  const RequestState& r = m.req(h);
  PrefillChunk c;
  c.start = num_computed_tokens;
  c.num_new_tokens = num_new_tokens;
  c.num_tokens = r.hasher.num_tokens();
  c.num_prompt_tokens = r.num_prompt_tokens;
  c.junction = r.shared_prefix_boundary > 0 ? r.shared_prefix_boundary : shared_prefix_tokens;
  c.chunk_limit = chunk_limit;
  return m.policies[static_cast<size_t>(m.chunk_aligner)]->AlignPrefillChunk(c);
}

int64_t KvCacheManager::RemainingBlocks(RequestHandle h) const {
  const Impl& m = *impl_;
  const RequestState& r = m.req(h);
  KVSIM_CHECK(r.live);
  int64_t whole = r.hasher.num_tokens();
  if (config_.max_model_len > 0) whole = std::min(whole, config_.max_model_len);
  const SlotDemand demand{whole, whole, 0};
  int64_t need = 0;
  for (size_t g = 0; g < config_.groups.size(); ++g)
    need += m.policies[g]->NumNewBlocks(demand, 0, r.groups[g], 0);
  return need;
}

int64_t KvCacheManager::BlocksNeededFresh(int64_t num_tokens) const {
  const SlotDemand demand{num_tokens, num_tokens, 0};
  const GroupBlockTable empty;
  int64_t need = 0;
  for (const auto& p : impl_->policies) need += p->NumNewBlocks(demand, 0, empty, 0);
  return need;
}

bool KvCacheManager::ResetPrefixCache() {
  ++impl_->epoch;
  return pool_.ResetPrefixCache();
}

void KvCacheManager::CheckInvariants() const {
  pool_.CheckInvariants();
  const Impl& m = *impl_;
  std::vector<int32_t> refs(static_cast<size_t>(pool_.num_blocks()), 0);
  for (const RequestState& r : m.reqs) {
    if (!r.live) {
      for (const GroupBlockTable& t : r.groups) KVSIM_CHECK(t.blocks.empty());
      continue;
    }
    for (const GroupBlockTable& t : r.groups) {
      KVSIM_CHECK(t.num_cached >= 0);
      for (BlockId b : t.blocks) {
        KVSIM_CHECK(b >= 0 && b < pool_.num_blocks());
        if (b != kNullBlock) ++refs[static_cast<size_t>(b)];
      }
    }
  }
  for (BlockId b = 1; b < pool_.num_blocks(); ++b)
    KVSIM_CHECK(refs[static_cast<size_t>(b)] == pool_.ref_cnt(b));
}

}  // namespace kvsim
