// The KV cache manager and its hybrid coordinator (reference §5.3–5.6). Per-type hit
// finders live in core/prefix_hit.h; this file holds the request table, the coordinator's
// fixed point, the block-count math of allocate_slots and the per-type allocation rules.
#include "core/kv_cache_manager.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>

#include "core/check.h"
#include "core/int_math.h"
#include "core/prefix_hit.h"
#include "core/sparse_retention.h"

namespace kvsim {
namespace {


}  // namespace

std::string_view KvGroupKindName(KvGroupKind k) {
  switch (k) {
    case KvGroupKind::kFullAttention: return "full_attention";
    case KvGroupKind::kSlidingWindow: return "sliding_window";
    case KvGroupKind::kChunkedLocal: return "chunked_local";
    case KvGroupKind::kMamba: return "mamba";
  }
  return "?";
}

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
    const std::string where = "group " + std::to_string(i) + " (" +
                              std::string(KvGroupKindName(g.kind)) + ")";
    if (g.block_size <= 0)
      return Status::Error("bad_block_size", where + ": block size must be positive");
    if (g.kind == KvGroupKind::kSlidingWindow && g.sliding_window < 1)
      return Status::Error("bad_window", where + ": sliding window must be at least 1");
    if (g.kind == KvGroupKind::kChunkedLocal && g.attention_chunk_size < 1)
      return Status::Error("bad_chunk", where + ": attention chunk size must be at least 1");
    if (g.kind == KvGroupKind::kMamba && g.mamba_mode == MambaCacheMode::kNone &&
        enable_caching)
      return Status::Error("bad_mamba_mode",
                           where + ": Mamba mode 'none' requires prefix caching off");
    if (g.num_speculative_blocks < 0)
      return Status::Error("bad_spec", where + ": negative speculative blocks");
  }
  if (prefix_cache_retention_interval < kRetentionProfileDefault)
    return Status::Error("bad_retention",
                         "prefix_cache_retention_interval must be null, 0 or a positive number "
                         "of tokens, got " + std::to_string(prefix_cache_retention_interval));
  if (semantics == VllmSemantics::kClassic && prefix_cache_retention_interval >= 0)
    return Status::Error("bad_retention",
                         "prefix_cache_retention_interval is a latest-snapshot setting (vLLM "
                         "2026-08); classic is always dense: drop it or use vllm_semantics "
                         "latest");
  const int64_t hb = resolved_hash_block_size();
  if (hb <= 0) return Status::Error("bad_block_size", "hash block size must be positive");
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
  for (const KvCacheGroup& g : plan.groups) {
    KvGroupConfig gc;
    gc.block_size = g.block_size;
    switch (g.kind) {
      case LayerKind::kFullAttention:
      case LayerKind::kMla: gc.kind = KvGroupKind::kFullAttention; break;
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
  std::vector<std::vector<BlockId>> blocks;  // per group
  std::vector<int64_t> num_cached;           // per group: blocks [0, n) are cached
  std::vector<uint8_t> mamba_allocated;      // per group (align): blocks allocated before
  std::vector<int64_t> mamba_last_state;     // per group (align): index to free later, or −1
  int64_t shared_prefix_boundary = 0;        // [latest] junction of the last lookup, or 0
};

struct KvCacheManager::Impl {
  struct SpecGroup {
    KvGroupConfig cfg;
    std::vector<int32_t> gids;
  };
  std::vector<RequestState> reqs;
  std::vector<RequestHandle> free_handles;
  int64_t hash_block = 16;
  int64_t sched_block = 16;
  std::vector<int64_t> hash_ratio;     // per group: block_size / hash_block
  std::vector<SpecGroup> spec_groups;  // lookup units; full attention first
  bool single_full = false;            // fast path: one full-attention group

  // The pending hit of the last GetComputedBlocks.
  RequestHandle hit_handle = -1;
  uint64_t hit_epoch = 0;
  int64_t hit_tokens = 0;
  std::vector<std::vector<BlockId>> hit_blocks;  // per group
  uint64_t epoch = 1;

  std::vector<BlockId> tmp;
  std::vector<BlockId> lookup;  // one block per gid of a spec group
  // [latest] some group is sliding-window or Mamba and retention is not dense.
  bool sparse_retention = false;
  int64_t retention = KvCacheManagerConfig::kRetentionDense;
  std::vector<uint8_t> mask;
  // Mamba states cached in the current step, as (hash, group); tracked once NewStepStarts
  // has been called.
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
  for (const auto& g : config_.groups) m.hash_ratio.push_back(g.block_size / m.hash_block);
  // Merge identical specs into one lookup unit; full attention first (§5.5).
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < config_.groups.size(); ++i) {
      const auto& g = config_.groups[i];
      if ((g.kind == KvGroupKind::kFullAttention) != (pass == 0)) continue;
      bool merged = false;
      for (auto& sg : m.spec_groups) {
        if (sg.cfg.SameSpec(g)) {
          sg.gids.push_back(static_cast<int32_t>(i));
          merged = true;
          break;
        }
      }
      if (!merged) m.spec_groups.push_back({g, {static_cast<int32_t>(i)}});
    }
  }
  m.single_full = config_.groups.size() == 1 &&
                  config_.groups[0].kind == KvGroupKind::kFullAttention && !config_.use_eagle &&
                  !config_.disable_fast_paths;
  m.hit_blocks.resize(config_.groups.size());
  m.retention = config_.effective_retention_interval();
  if (m.retention != KvCacheManagerConfig::kRetentionDense)
    for (const auto& g : config_.groups)
      if (g.kind == KvGroupKind::kSlidingWindow || g.kind == KvGroupKind::kMamba)
        m.sparse_retention = true;
}

bool KvCacheManager::RetentionMask(size_t g, const RequestState& r, int64_t start, int64_t end,
                                   std::vector<uint8_t>& mask) const {
  const KvGroupConfig& gc = config_.groups[g];
  const Impl& m = *impl_;
  int64_t boundaries[2] = {r.num_prompt_tokens - 1, r.shared_prefix_boundary};
  const std::span<const int64_t> bs(boundaries, r.shared_prefix_boundary > 0 ? 2 : 1);
  switch (gc.kind) {
    case KvGroupKind::kSlidingWindow:
      return SlidingWindowRetentionMask(start, end, gc.block_size, gc.sliding_window,
                                        m.sched_block, config_.use_eagle, m.retention, bs, mask);
    case KvGroupKind::kMamba:
      return MambaRetentionMask(start, end, gc.block_size, m.sched_block, m.retention, bs, mask);
    default:
      return false;
  }
}

KvCacheManager::~KvCacheManager() = default;

// ---- Request table -----------------------------------------------------------------------

RequestHandle KvCacheManager::AddRequest(std::span<const TokenId> prompt,
                                         const RequestKeys& keys) {
  Impl& m = *impl_;
  RequestHandle h;
  if (!m.free_handles.empty()) {
    h = m.free_handles.back();
    m.free_handles.pop_back();
  } else {
    h = static_cast<RequestHandle>(m.reqs.size());
    m.reqs.emplace_back();
    RequestState& r = m.reqs.back();
    const size_t ng = config_.groups.size();
    r.blocks.resize(ng);
    r.num_cached.assign(ng, 0);
    r.mamba_allocated.assign(ng, 0);
    r.mamba_last_state.assign(ng, -1);
  }
  RequestState& r = m.reqs[static_cast<size_t>(h)];
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
  RequestState& r = impl_->reqs[static_cast<size_t>(h)];
  r.hasher.Assign(block_hashes, tail);
  r.num_prompt_tokens = r.hasher.num_tokens();
  return h;
}

void KvCacheManager::AppendTokens(RequestHandle h, std::span<const TokenId> tokens) {
  RequestState& r = impl_->reqs[static_cast<size_t>(h)];
  KVSIM_CHECK(r.live);
  r.hasher.Append(tokens);
}

void KvCacheManager::RemoveRequest(RequestHandle h) {
  Free(h);
  RequestState& r = impl_->reqs[static_cast<size_t>(h)];
  r.live = false;
  r.keys = RequestKeys{};
  impl_->free_handles.push_back(h);
  --num_live_;
}

int64_t KvCacheManager::num_tokens(RequestHandle h) const {
  return impl_->reqs[static_cast<size_t>(h)].hasher.num_tokens();
}

int64_t KvCacheManager::num_prompt_tokens(RequestHandle h) const {
  return impl_->reqs[static_cast<size_t>(h)].num_prompt_tokens;
}

std::span<const BlockId> KvCacheManager::blocks(RequestHandle h, int group) const {
  return impl_->reqs[static_cast<size_t>(h)].blocks[static_cast<size_t>(group)];
}

std::span<const BlockHash> KvCacheManager::block_hashes(RequestHandle h) const {
  return impl_->reqs[static_cast<size_t>(h)].hasher.hashes();
}

// ---- Prefix hits -------------------------------------------------------------------------

PrefixHit KvCacheManager::GetComputedBlocks(RequestHandle h, int64_t num_computed_tokens) {
  Impl& m = *impl_;
  RequestState& r = m.reqs[static_cast<size_t>(h)];
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

  // The coordinator's fixed point over the spec groups (§5.5).
  const int64_t align = m.sched_block;
  int64_t L = max_len;
  int64_t longest_single = 0;
  bool first = true;
  std::vector<int64_t> full_count(m.spec_groups.size(), 0);
  while (true) {
    const int64_t L0 = L;
    for (size_t s = 0; s < m.spec_groups.size(); ++s) {
      const Impl::SpecGroup& sg = m.spec_groups[s];
      const int64_t B = sg.cfg.block_size;
      const int64_t k = B / m.hash_block;
      auto cached = [&](int64_t j, BlockId* out) -> bool {
        const BlockHash hv = hashes[static_cast<size_t>((j + 1) * k - 1)];
        for (size_t q = 0; q < sg.gids.size(); ++q) {
          const BlockId b = pool_.GetCachedBlock(hv, sg.gids[q]);
          if (b == kNoBlock) return false;
          if (out != nullptr) out[q] = b;
        }
        return true;
      };
      int64_t nblocks = 0;
      if (sg.cfg.kind == KvGroupKind::kFullAttention && !first) {
        nblocks = std::min(full_count[s], L / B);
        full_count[s] = nblocks;
      } else {
        for (int32_t g : sg.gids) m.hit_blocks[static_cast<size_t>(g)].clear();
        m.lookup.resize(sg.gids.size());
        // Positions found by the finder are filled through `put`.
        auto put = [&](int64_t j, const BlockId* blocks_for_gids) {
          for (size_t q = 0; q < sg.gids.size(); ++q) {
            auto& v = m.hit_blocks[static_cast<size_t>(sg.gids[q])];
            if (static_cast<int64_t>(v.size()) <= j) v.resize(static_cast<size_t>(j + 1), kNullBlock);
            v[static_cast<size_t>(j)] = blocks_for_gids ? blocks_for_gids[q] : kNullBlock;
          }
        };
        switch (sg.cfg.kind) {
          case KvGroupKind::kFullAttention:
            nblocks = FindFullAttentionHit(L, B, align, config_.use_eagle, cached, put,
                                           m.lookup.data());
            full_count[s] = nblocks;
            break;
          case KvGroupKind::kSlidingWindow:
            nblocks = FindSlidingWindowHit(L, B, sg.cfg.sliding_window, align,
                                           config_.use_eagle, cached, put, m.lookup.data());
            break;
          case KvGroupKind::kChunkedLocal:
            nblocks = FindChunkedLocalHit(L, B, sg.cfg.attention_chunk_size, cached, put,
                                          m.lookup.data());
            break;
          case KvGroupKind::kMamba:
            nblocks = FindMambaHit(L, B, align, cached, put, m.lookup.data());
            break;
        }
        for (int32_t g : sg.gids)
          m.hit_blocks[static_cast<size_t>(g)].resize(static_cast<size_t>(nblocks), kNullBlock);
      }
      const int64_t tok = nblocks * B;
      if (first) longest_single = std::max(longest_single, tok);
      L = std::min(L, tok);
    }
    first = false;
    if (L == L0 || m.spec_groups.size() == 1) break;
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

namespace {

int64_t NumSkippedTokens(const KvGroupConfig& g, int64_t n) {
  switch (g.kind) {
    case KvGroupKind::kFullAttention: return 0;
    case KvGroupKind::kSlidingWindow: return std::max<int64_t>(0, n - g.sliding_window + 1);
    case KvGroupKind::kChunkedLocal: return n / g.attention_chunk_size * g.attention_chunk_size;
    case KvGroupKind::kMamba: return n - 1;
  }
  return 0;
}

}  // namespace

void KvCacheManager::RemoveSkippedBlocks(RequestHandle h, int64_t num_computed_tokens) {
  Impl& m = *impl_;
  ++m.epoch;
  RequestState& r = m.reqs[static_cast<size_t>(h)];
  for (size_t gi = 0; gi < config_.groups.size(); ++gi) {
    const KvGroupConfig& g = config_.groups[gi];
    if (g.kind == KvGroupKind::kFullAttention) continue;
    std::vector<BlockId>& blocks = r.blocks[gi];
    const int64_t skipped = NumSkippedTokens(g, num_computed_tokens);
    if (skipped > 0) {
      const int64_t nb = std::min<int64_t>(skipped / g.block_size, static_cast<int64_t>(blocks.size()));
      m.tmp.clear();
      for (int64_t i = nb - 1; i >= 0; --i) {
        BlockId& b = blocks[static_cast<size_t>(i)];
        if (b == kNullBlock) break;
        m.tmp.push_back(b);
        b = kNullBlock;
      }
      pool_.FreeBlocks(m.tmp);
    }
    if (g.kind == KvGroupKind::kMamba && g.mamba_mode == MambaCacheMode::kAlign) {
      // The state block from two steps back is no longer needed once the running state has
      // moved on (vLLM's last_state_block_idx).
      const int64_t last = r.mamba_last_state[gi];
      if (last >= 0 && last < CeilDiv(num_computed_tokens, g.block_size) - 1 &&
          last < static_cast<int64_t>(blocks.size())) {
        BlockId& b = blocks[static_cast<size_t>(last)];
        if (b != kNullBlock) {
          pool_.FreeBlocks({&b, 1});
          b = kNullBlock;
        }
      }
    }
  }
}

namespace {

// Blocks group `g` must take from the free queue (vLLM's get_num_blocks_to_allocate).
int64_t BlocksToAllocate(const KvGroupConfig& g, const BlockPool& pool, int64_t num_tokens,
                         int64_t num_tokens_main, std::span<const BlockId> hit,
                         int64_t num_held, bool mamba_allocated, int64_t total_computed,
                         int64_t cap_blocks) {
  int64_t evictable = 0;
  for (BlockId b : hit)
    if (b != kNullBlock && pool.ref_cnt(b) == 0) ++evictable;
  const int64_t hitn = static_cast<int64_t>(hit.size());
  if (g.kind == KvGroupKind::kMamba && g.mamba_mode == MambaCacheMode::kAlign) {
    const int64_t required = CeilDiv(num_tokens_main, g.block_size) + g.num_speculative_blocks;
    int64_t n = required - hitn - num_held;
    if (n > 0) n = mamba_allocated ? 1 : 1 + g.num_speculative_blocks;
    else n = 0;
    return n + evictable;
  }
  if (g.kind == KvGroupKind::kMamba) num_tokens += g.block_size * g.num_speculative_blocks;
  int64_t required = CeilDiv(num_tokens, g.block_size);
  if (cap_blocks > 0) required = std::min(required, cap_blocks);
  const int64_t skipped = NumSkippedTokens(g, total_computed) / g.block_size;
  const int64_t n = std::max<int64_t>(required - std::max(skipped, hitn + num_held), 0);
  return n + evictable;
}

}  // namespace

bool KvCacheManager::AllocateSlots(RequestHandle h, int64_t num_computed_tokens,
                                   int64_t num_new_tokens, int64_t num_new_computed_tokens,
                                   int64_t num_lookahead_tokens, bool full_sequence_must_fit,
                                   int64_t num_in_flight_tokens,
                                   int64_t num_external_computed_tokens, bool delay_cache_blocks,
                                   int64_t reserved_blocks) {
  Impl& m = *impl_;
  RequestState& r = m.reqs[static_cast<size_t>(h)];
  KVSIM_CHECK(r.live);
  KVSIM_CHECK(num_new_tokens >= 0 && num_lookahead_tokens >= 0 && num_computed_tokens >= 0 &&
              num_external_computed_tokens >= 0 && reserved_blocks >= 0);
  const bool use_hit = num_new_computed_tokens > 0;
  if (use_hit) {
    KVSIM_CHECK_MSG(m.hit_handle == h && m.hit_epoch == m.epoch &&
                        m.hit_tokens == num_new_computed_tokens,
                    "num_new_computed_tokens must be the hit GetComputedBlocks just returned");
    KVSIM_CHECK(num_computed_tokens == 0);
  }
  const size_t ng = config_.groups.size();
  const int64_t total_computed =
      num_computed_tokens + num_new_computed_tokens + num_external_computed_tokens;
  int64_t need_slots = total_computed + num_new_tokens + num_lookahead_tokens;
  int64_t need_main = total_computed + num_new_tokens;
  if (config_.max_model_len > 0) {
    need_slots = std::min(need_slots, config_.max_model_len);
    need_main = std::min(need_main, config_.max_model_len);
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

  static const std::vector<BlockId> kEmpty;
  auto hit_of = [&](size_t g) -> std::span<const BlockId> {
    return use_hit ? std::span<const BlockId>(m.hit_blocks[g]) : std::span<const BlockId>(kEmpty);
  };
  // A Mamba hit on a state another request cached in this very step waits a step.
  if (use_hit && m.step_tracking && !m.cached_this_step.empty()) {
    const std::vector<BlockHash>& hashes = r.hasher.hashes();
    for (size_t g = 0; g < ng; ++g) {
      const auto& hb = m.hit_blocks[g];
      if (config_.groups[g].kind != KvGroupKind::kMamba || hb.empty()) continue;
      const int64_t last = static_cast<int64_t>(hb.size()) * m.hash_ratio[g] - 1;
      if (m.CachedThisStep(hashes[static_cast<size_t>(last)], static_cast<int32_t>(g)))
        return false;
    }
  }
  const int64_t free = pool_.num_free_blocks();
  if (full_sequence_must_fit) {
    int64_t whole = r.hasher.num_tokens();
    if (config_.max_model_len > 0) whole = std::min(whole, config_.max_model_len);
    int64_t need = 0;
    for (size_t g = 0; g < ng; ++g) {
      const KvGroupConfig& gc = config_.groups[g];
      int64_t cap = 0;
      const int64_t mml = config_.max_model_len > 0 ? config_.max_model_len : whole;
      if (gc.kind == KvGroupKind::kSlidingWindow)
        cap = CeilDiv(std::min(gc.sliding_window - 1 + config_.max_num_batched_tokens, mml),
                      gc.block_size) + 1;
      else if (gc.kind == KvGroupKind::kChunkedLocal)
        cap = CeilDiv(std::min(gc.attention_chunk_size + config_.max_num_batched_tokens, mml),
                      gc.block_size);
      need += BlocksToAllocate(gc, pool_, whole, whole, hit_of(g),
                               static_cast<int64_t>(r.blocks[g].size()), r.mamba_allocated[g],
                               total_computed, cap);
    }
    if (need > free) return false;
  }
  int64_t need = 0;
  for (size_t g = 0; g < ng; ++g) {
    need += BlocksToAllocate(config_.groups[g], pool_, need_slots, need_main, hit_of(g),
                             static_cast<int64_t>(r.blocks[g].size()), r.mamba_allocated[g],
                             total_computed, 0);
  }
  if (need > free - reserved_blocks) return false;

  // 1. Touch every group's hit blocks, then 2. allocate group by group.
  if (use_hit) {
    for (size_t g = 0; g < ng; ++g) {
      KVSIM_CHECK(r.blocks[g].empty());
      pool_.Touch(m.hit_blocks[g]);
      r.blocks[g].assign(m.hit_blocks[g].begin(), m.hit_blocks[g].end());
      r.num_cached[g] = static_cast<int64_t>(m.hit_blocks[g].size());
    }
    m.hit_handle = -1;
  }
  for (size_t g = 0; g < ng; ++g) {
    const KvGroupConfig& gc = config_.groups[g];
    std::vector<BlockId>& blocks = r.blocks[g];
    const int64_t prev = static_cast<int64_t>(blocks.size());
    if (gc.kind == KvGroupKind::kMamba && gc.mamba_mode == MambaCacheMode::kAlign) {
      const int64_t nspec = gc.num_speculative_blocks;
      const int64_t required = CeilDiv(need_main, gc.block_size) + nspec;
      if (required <= prev) continue;
      const bool allocated = r.mamba_allocated[g] != 0;
      if (allocated) {
        r.mamba_last_state[g] = prev - 1 - nspec;
      } else if (prev > 0) {
        r.mamba_last_state[g] = prev - 1;  // the hit block holds the state we start from
      }
      const int64_t skipped_blocks = required - nspec - 1;
      if (prev < skipped_blocks) blocks.resize(static_cast<size_t>(skipped_blocks), kNullBlock);
      if (allocated) {
        // Reuse the previous speculative blocks for this step.
        for (int64_t i = prev - nspec; i < prev; ++i) {
          if (i < skipped_blocks) {
            blocks.push_back(blocks[static_cast<size_t>(i)]);
            blocks[static_cast<size_t>(i)] = kNullBlock;
          } else {
            break;
          }
        }
      }
      const int64_t n = required - static_cast<int64_t>(blocks.size());
      KVSIM_CHECK(n <= (allocated ? 1 : 1 + nspec));
      if (n > 0) {
        const size_t at = blocks.size();
        blocks.resize(at + static_cast<size_t>(n));
        KVSIM_CHECK(pool_.GetNewBlocks(n, blocks.data() + at));
      }
      r.mamba_allocated[g] = 1;
      continue;
    }
    int64_t tokens = need_slots;
    if (gc.kind == KvGroupKind::kMamba) tokens += gc.block_size * gc.num_speculative_blocks;
    const int64_t required = CeilDiv(tokens, gc.block_size);
    if (gc.kind != KvGroupKind::kFullAttention) {
      const int64_t skipped_blocks = NumSkippedTokens(gc, total_computed) / gc.block_size;
      if (prev < skipped_blocks && required > prev)
        blocks.resize(static_cast<size_t>(std::min(skipped_blocks, required)), kNullBlock);
    }
    const int64_t n = required - static_cast<int64_t>(blocks.size());
    if (n > 0) {
      const size_t at = blocks.size();
      blocks.resize(at + static_cast<size_t>(n));
      KVSIM_CHECK(pool_.GetNewBlocks(n, blocks.data() + at));
    }
  }

  // 3. Cache the newly full blocks (never beyond the request's real tokens); a load's
  // blocks wait until their contents have arrived.
  if (!delay_cache_blocks) CacheBlocks(h, total_computed + num_new_tokens);
  return true;
}

void KvCacheManager::CacheBlocks(RequestHandle h, int64_t num_tokens) {
  if (!config_.enable_caching) return;
  Impl& m = *impl_;
  RequestState& r = m.reqs[static_cast<size_t>(h)];
  KVSIM_CHECK(r.live);
  const size_t ng = config_.groups.size();
  int64_t to_cache = std::min(num_tokens, r.hasher.num_tokens());
  if (ng > 1) to_cache = to_cache / m.sched_block * m.sched_block;
  const std::vector<BlockHash>& hashes = r.hasher.hashes();
  for (size_t g = 0; g < ng; ++g) {
    const int64_t B = config_.groups[g].block_size;
    const int64_t k = m.hash_ratio[g];
    const int64_t nfull = std::min<int64_t>(to_cache / B, static_cast<int64_t>(r.blocks[g].size()));
    const int64_t j0 = r.num_cached[g];
    if (nfull > j0) {
      const bool dense = !m.sparse_retention || !RetentionMask(g, r, j0, nfull, m.mask);
      if (m.step_tracking && config_.groups[g].kind == KvGroupKind::kMamba) {
        for (int64_t j = j0; j < nfull; ++j)
          if (r.blocks[g][static_cast<size_t>(j)] != kNullBlock &&
              (dense || m.mask[static_cast<size_t>(j - j0)]))
            m.cached_this_step.emplace_back(hashes[static_cast<size_t>((j + 1) * k - 1)],
                                            static_cast<int32_t>(g));
      }
      if (dense) {
        pool_.CacheBlocks(r.blocks[g].data() + j0, hashes.data() + (j0 + 1) * k - 1, k,
                          nfull - j0, static_cast<int32_t>(g));
      } else {
        // Blocks outside the mask are never hashed: they go back to the free queue
        // unhashed (to its head in latest) and no later hit can end on them.
        for (int64_t j = j0; j < nfull; ++j)
          if (m.mask[static_cast<size_t>(j - j0)])
            pool_.CacheBlocks(r.blocks[g].data() + j, hashes.data() + (j + 1) * k - 1, k, 1,
                              static_cast<int32_t>(g));
      }
    }
    r.num_cached[g] = std::max(r.num_cached[g], nfull);
  }
}

void KvCacheManager::NewStepStarts() {
  impl_->step_tracking = true;
  impl_->cached_this_step.clear();
}

void KvCacheManager::Free(RequestHandle h) {
  Impl& m = *impl_;
  ++m.epoch;
  RequestState& r = m.reqs[static_cast<size_t>(h)];
  for (size_t g = 0; g < config_.groups.size(); ++g) {
    pool_.FreeBlocksReversed(r.blocks[g]);
    r.blocks[g].clear();
    r.num_cached[g] = 0;
    r.mamba_allocated[g] = 0;
    r.mamba_last_state[g] = -1;
  }
}

int64_t KvCacheManager::MambaAlignedSplit(RequestHandle h, int64_t num_computed_tokens,
                                          int64_t num_new_tokens, int64_t shared_prefix_tokens,
                                          int64_t chunk_limit) const {
  if (!config_.has_mamba_align()) return num_new_tokens;
  const RequestState& r = impl_->reqs[static_cast<size_t>(h)];
  const int64_t ntok = r.hasher.num_tokens();
  int64_t B = 0;
  for (const auto& g : config_.groups)
    if (g.kind == KvGroupKind::kMamba && g.mamba_mode == MambaCacheMode::kAlign) B = g.block_size;
  if (config_.semantics == VllmSemantics::kLatest) {
    const int64_t junction =
        r.shared_prefix_boundary > 0 ? r.shared_prefix_boundary : shared_prefix_tokens;
    return LatestMambaAlignedSplit(num_computed_tokens, num_new_tokens, ntok,
                                   r.num_prompt_tokens, B, impl_->hash_block,
                                   config_.hash_block_size > 0 && impl_->hash_block < B,
                                   config_.use_eagle, junction, chunk_limit);
  }
  return ClassicMambaAlignedSplit(num_computed_tokens, num_new_tokens, ntok, r.num_prompt_tokens,
                                  B, config_.use_eagle, chunk_limit);
}

int64_t ClassicMambaAlignedSplit(int64_t start, int64_t num_new_tokens, int64_t num_tokens,
                                 int64_t num_prompt_tokens, int64_t B, bool use_eagle,
                                 int64_t chunk_limit) {
  if (num_tokens > num_prompt_tokens) return num_new_tokens;  // decoding: no split
  int64_t n = num_new_tokens;
  int64_t last = num_tokens - num_tokens % B;
  if (use_eagle) last = std::max<int64_t>(last - B, 0);
  const int64_t after = start + n;
  if (after < last) {
    // Round down to whole blocks, unless a block is more than a step can ever give (then
    // the request would starve: keep the unaligned chunk).
    const int64_t rounded = n / B * B;
    if (rounded > 0 || B <= chunk_limit) n = rounded;
  } else if (start < last && last < after) {
    n = last - start;  // cache the last boundary
  }
  return n;
}

int64_t LatestMambaAlignedSplit(int64_t start, int64_t num_new_tokens, int64_t num_tokens,
                                int64_t num_prompt_tokens, int64_t B, int64_t hash_block,
                                bool partial_hits, bool use_eagle, int64_t junction,
                                int64_t chunk_limit) {
  // Only while prefilling (a resumed request replays its outputs as prefill too).
  const int64_t prefill_end = std::max(num_prompt_tokens, num_tokens - 1);
  if (start >= prefill_end) return num_new_tokens;
  int64_t last_cacheable = num_tokens - num_tokens % B;
  if (use_eagle) last_cacheable = std::max<int64_t>(last_cacheable - B, 0);
  int64_t end = start + num_new_tokens;
  if (end < prefill_end) {
    // A state is written at each chunk end, so chunks that do not finish the prefill end on a
    // block; when a block cannot fit in any chunk, move on sub-block and re-align at the next
    // boundary reached (vLLM #51113).
    const int64_t aligned_end = end / B * B;
    if (aligned_end > start || B <= chunk_limit) end = aligned_end;
  }
  const int64_t next_block = (start / B + 1) * B;
  const int64_t tail = partial_hits ? num_prompt_tokens / hash_block * hash_block : 0;
  const int64_t stops[4] = {
      start % B != 0 ? next_block : 0,
      last_cacheable,
      last_cacheable < tail && tail < num_prompt_tokens ? tail : 0,
      start < junction && junction < end ? start + (junction - start) / B * B : 0,
  };
  int64_t stop = end;
  for (int64_t s : stops)
    if (start < s && s < stop) stop = s;
  return std::max<int64_t>(stop - start, 0);
}

int64_t KvCacheManager::RemainingBlocks(RequestHandle h) const {
  const RequestState& r = impl_->reqs[static_cast<size_t>(h)];
  KVSIM_CHECK(r.live);
  int64_t whole = r.hasher.num_tokens();
  if (config_.max_model_len > 0) whole = std::min(whole, config_.max_model_len);
  int64_t need = 0;
  for (size_t g = 0; g < config_.groups.size(); ++g)
    need += BlocksToAllocate(config_.groups[g], pool_, whole, whole, {},
                             static_cast<int64_t>(r.blocks[g].size()), r.mamba_allocated[g] != 0,
                             0, 0);
  return need;
}

int64_t KvCacheManager::BlocksNeededFresh(int64_t num_tokens) const {
  int64_t need = 0;
  for (const auto& g : config_.groups)
    need += BlocksToAllocate(g, pool_, num_tokens, num_tokens, {}, 0, false, 0, 0);
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
      for (const auto& v : r.blocks) KVSIM_CHECK(v.empty());
      continue;
    }
    for (size_t g = 0; g < r.blocks.size(); ++g) {
      KVSIM_CHECK(r.num_cached[g] >= 0);
      for (BlockId b : r.blocks[g]) {
        KVSIM_CHECK(b >= 0 && b < pool_.num_blocks());
        if (b != kNullBlock) ++refs[static_cast<size_t>(b)];
      }
    }
  }
  for (BlockId b = 1; b < pool_.num_blocks(); ++b)
    KVSIM_CHECK(refs[static_cast<size_t>(b)] == pool_.ref_cnt(b));
}

}  // namespace kvsim
