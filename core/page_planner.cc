#include "core/page_planner.h"

#include <algorithm>
#include <map>
#include <string>

#include "core/int_math.h"

namespace kvsim {

std::string_view MambaCacheModeName(MambaCacheMode m) {
  switch (m) {
    case MambaCacheMode::kNone: return "none";
    case MambaCacheMode::kAlign: return "align";
    case MambaCacheMode::kAll: return "all";
  }
  return "?";
}
std::string_view AttentionBackendName(AttentionBackend b) {
  switch (b) {
    case AttentionBackend::kFlashAttn: return "flash_attn";
    case AttentionBackend::kFlashInfer: return "flashinfer";
    case AttentionBackend::kTriton: return "triton";
  }
  return "?";
}

namespace {

constexpr int64_t kDefaultBlockSize = 16;    // CacheConfig.DEFAULT_BLOCK_SIZE
constexpr int64_t kMinKernelBlock = 16;      // MultipleOf(16) / [16, 32, 64]
constexpr int64_t kMlaDefaultBlockSize = 64;  // FlashMLA's page
constexpr int64_t kMlaHybridAlign = 128;

std::string Bytes(int64_t b) { return std::to_string(b) + " B"; }

// Whether two specs allocate identically. Full-attention specs that differ only in the
// window they compute with (after promotion) merge, as vLLM's FullAttentionSpec.merge does.
bool SameAllocation(const KvCacheSpec& a, const KvCacheSpec& b) {
  if (a.kind == LayerKind::kFullAttention && b.kind == LayerKind::kFullAttention) {
    KvCacheSpec x = a, y = b;
    x.sliding_window = y.sliding_window = 0;
    x.attention_chunk_size = y.attention_chunk_size = 0;
    return x == y;
  }
  return a == b;
}

// Errors about one layer lead with the key a user changes to fix them: parallel.tp for TP
// divisions, the layers list otherwise. The sim layer maps the key to a file and line.
Status LayerError(const Status& s, const ModelSpec& model, const LayerSpec* layer,
                  bool is_draft) {
  const int64_t i = layer - model.layers.data();
  const std::string name = (is_draft ? "D" : "L") + std::to_string(i + 1);
  const std::string key = s.code() == "tp_not_divisible"
                              ? "parallel.tp"
                              : (is_draft ? "model.draft.layers" : "model.layers");
  const std::string_view kind = layer->kind == LayerKind::kMamba
                                    ? MambaMixerName(layer->mamba.mixer)
                                    : LayerKindName(layer->kind);
  return Status::Error(s.code(), key + ": layer " + name + " (" + std::string(kind) + ") of " +
                                     (model.name.empty() ? "the model" : model.name) + ": " +
                                     s.message());
}

// UniformTypeKVCacheSpecs.is_uniform_type (§1.4, §3.1): one block size, and one type that
// needs the same token slots: full attention (MLAAttentionSpec is a FullAttentionSpec, and
// windows do not matter), sliding windows of one size, chunks of one size, or Mamba with the
// same speculative blocks.
bool SameType(const KvCacheSpec& a, const KvCacheSpec& b) {
  if (a.block_size != b.block_size) return false;
  const auto full = [](const KvCacheSpec& s) {
    return s.kind == LayerKind::kFullAttention || s.kind == LayerKind::kMla;
  };
  if (full(a) || full(b)) return full(a) && full(b);
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case LayerKind::kSlidingWindow: return a.sliding_window == b.sliding_window;
    case LayerKind::kChunkedLocal: return a.attention_chunk_size == b.attention_chunk_size;
    case LayerKind::kMamba: return a.num_speculative_blocks == b.num_speculative_blocks;
    default: return true;
  }
}

// A layer, or a pack of attention layers, as grouping and unification see it.
struct PseudoLayer {
  KvCacheSpec spec;
  std::vector<int> members;  // plan layer indices, in layer order
  std::string name;          // "L2+L3" for packs
};

bool IsB_First(KvOrder o) {
  return o == KvOrder::kBLHNC || o == KvOrder::kBLNHC || o == KvOrder::kBHLNC;
}
bool TokenMajor(KvOrder o) {  // N outside H inside a layer's page (NHD)
  return o == KvOrder::kLBNHC || o == KvOrder::kBLNHC;
}

}  // namespace

int64_t SelectKernelBlockSize(int64_t block_size, AttentionBackend backend) {
  if (block_size <= 0) return 0;
  if (backend == AttentionBackend::kFlashInfer) {
    for (int64_t k : {64, 32, 16}) {
      if (block_size == k) return k;
    }
    for (int64_t k : {64, 32, 16}) {
      if (block_size % k == 0) return k;
    }
    return 0;
  }
  return block_size % kMinKernelBlock == 0 ? block_size : 0;
}

int64_t MaxBlocksPerRequest(const KvCacheSpec& spec, int64_t max_model_len,
                            int64_t max_in_flight_tokens, MambaCacheMode mode) {
  const int64_t b = spec.block_size;
  switch (spec.kind) {
    case LayerKind::kFullAttention:
    case LayerKind::kMla:
      return CeilDiv(max_model_len, b);
    case LayerKind::kSlidingWindow:
      return SlidingWindowMaxBlocks(spec.sliding_window, b, max_in_flight_tokens, max_model_len);
    case LayerKind::kChunkedLocal:
      return ChunkedLocalMaxBlocks(spec.attention_chunk_size, b, max_in_flight_tokens,
                                   max_model_len);
    case LayerKind::kMamba:
      switch (mode) {
        case MambaCacheMode::kAll: return CeilDiv(max_model_len, b) + spec.num_speculative_blocks;
        case MambaCacheMode::kAlign: return 2 + spec.num_speculative_blocks;
        case MambaCacheMode::kNone: return 1 + spec.num_speculative_blocks;
      }
  }
  return 0;
}

Status UnifyPageSizes(std::vector<KvCacheSpec>& specs, const std::vector<std::string>& names,
                      VllmSemantics semantics) {
  if (specs.empty()) return Status::Ok();
  size_t max_i = 0;
  for (size_t i = 1; i < specs.size(); ++i) {
    if (specs[i].page_bytes() > specs[max_i].page_bytes()) max_i = i;
  }
  const int64_t p = specs[max_i].page_bytes();
  for (size_t i = 0; i < specs.size(); ++i) {
    KvCacheSpec& s = specs[i];
    const int64_t page = s.page_bytes();
    if (page == p) continue;
    auto fail = [&](const std::string& why) {
      return Status::Error(
          "page_size_not_divisible",
          "layer " + names[i] + " (" + std::string(LayerKindName(s.kind)) + ", page " +
              Bytes(page) + ") does not divide the largest page " + Bytes(p) + " (layer " +
              names[max_i] + ", " + std::string(LayerKindName(specs[max_i].kind)) + "): " + why);
    };
    if (s.kind == LayerKind::kMamba) {
      if (semantics == VllmSemantics::kClassic) {
        return fail(
            "classic vLLM scales a Mamba spec's block size, which does not change its page "
            "(issue #43626); latest vLLM pads it (PR #45207)");
      }
      s.page_size_padded = p;  // the Mamba page does not scale with the block size
      continue;
    }
    if (p % page == 0 && s.page_size_padded == 0) {
      s.block_size *= p / page;  // bytes per token unchanged
      continue;
    }
    if (semantics == VllmSemantics::kClassic) {
      return fail("classic vLLM raises NotImplementedError (padding arrived in PR #45181)");
    }
    if (!s.indexes_kv_by_block_stride) {
      return fail(
          "its attention backend does not index KV by block stride, so the page cannot be "
          "padded (set indexes_kv_by_block_stride: true for a backend that can)");
    }
    if (p % s.pack_size != 0) {
      return fail("the largest page is not a multiple of the pack size " +
                  std::to_string(s.pack_size));
    }
    s.page_size_padded = p / s.pack_size;
  }
  for (const auto& s : specs) KVSIM_CHECK(s.page_bytes() == p);
  return Status::Ok();
}

int64_t KvCachePlan::total_bytes() const {
  int64_t t = 0;
  for (const auto& x : tensors) t += x.size_bytes;
  return t;
}

int64_t KvCachePlan::padding_bytes_per_block(int group) const {
  return block_bytes - groups[group].data_bytes_per_block;
}

double KvCachePlan::padding_fraction() const {
  if (groups.empty() || block_bytes == 0) return 0;
  double sum = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    sum += static_cast<double>(padding_bytes_per_block(static_cast<int>(g))) /
           static_cast<double>(block_bytes);
  }
  return sum / static_cast<double>(groups.size());
}

KvLayout KvCachePlan::LayoutForLayer(int li) const {
  const PlannedLayer& pl = layers[li];
  const KvCacheSpec& s = pl.spec;
  // What one block id spans for this layer: its slot page, or the whole slab.
  const int64_t block_span = cross_layer ? block_bytes : s.page_bytes();
  KvLayout l;
  l.kv_split = KvSplit::kPackedInContent;
  // Offsets index the layer's slot tensor (or the slab) from its first byte.
  l.allocation = block_span * num_blocks;
  if (s.kind == LayerKind::kMamba) {
    l.order = cross_layer ? KvOrder::kBLHNC : KvOrder::kLBHNC;
    l.num_blocks = num_blocks;
    l.k_bytes = s.mamba_state_bytes();
    l.block_stride = block_span;
    l.base_offset = pl.slab_offset;
    return l;
  }
  const int64_t kernel = SelectKernelBlockSize(s.block_size, config.backend);
  const int64_t split = kernel > 0 ? s.block_size / kernel : 1;
  const bool token_major = TokenMajor(config.layout);
  const bool b_first = cross_layer || s.pack_size > 1;
  l.order = b_first ? (token_major ? KvOrder::kBLNHC : KvOrder::kBLHNC)
                    : (token_major ? KvOrder::kLBNHC : KvOrder::kLBHNC);
  l.kv_split = config.kv_split;
  l.num_blocks = num_blocks * split;
  l.num_heads = s.num_head_slots();
  l.block_tokens = s.block_size / split;
  l.k_bytes = s.k_content_bytes();
  l.v_bytes = s.v_content_bytes();
  l.kernel_split = split;
  l.block_stride = block_span / split;
  l.base_offset = pl.slab_offset + pl.pack_member * (s.layer_page_bytes() / split);
  if (config.kv_split == KvSplit::kKvFirstTensor) {
    // Legacy (2, B, ...): a kernel block's stride is its K half; V blocks follow all K blocks.
    l.block_stride /= 2;
  }
  if (cross_layer && config.layout == KvOrder::kBHLNC) {
    // Heads outside layers: each block of the slab is one [H, L, N, C] grid over the slab's
    // layer positions, so a layer is a view of that grid (PlanKvCache checked that every
    // layer has the same cell shape and no padding).
    KvLayout grid = l;
    grid.order = KvOrder::kBHLNC;
    grid.num_layers = block_bytes / s.page_bytes();
    grid.base_offset = 0;
    return grid.LayerView(pl.slab_offset / s.page_bytes());
  }
  return l;
}

KvLayout KvCachePlan::LayoutForSlot(int slot, int group) const {
  for (int li : groups[group].layers) {
    if (layers[li].slot != slot) continue;
    KvLayout l = LayoutForLayer(li);
    const KvCacheSpec& s = layers[li].spec;
    if (s.kind == LayerKind::kMamba || s.pack_size == 1) return l;
    l.num_layers = s.pack_size;
    l.layer_stride = s.layer_page_bytes() / l.kernel_split;
    l.base_offset -= layers[li].pack_member * l.layer_stride;
    return l;
  }
  return KvLayout{};
}

namespace {

// Groups `items` by identical allocation (SameAllocation of their specs), in order of first
// appearance: the rule both the attention packs (§7.1) and the hybrid groups (§3.2) use.
template <typename SpecOf>
std::vector<std::vector<int>> BucketBySpec(size_t count, SpecOf spec_of,
                                           const std::vector<bool>* eligible = nullptr) {
  std::vector<std::vector<int>> buckets;
  for (size_t i = 0; i < count; ++i) {
    if (eligible && !(*eligible)[i]) continue;
    const KvCacheSpec& s = spec_of(i);
    bool placed = false;
    for (auto& b : buckets) {
      if (SameAllocation(spec_of(static_cast<size_t>(b[0])), s)) {
        b.push_back(static_cast<int>(i));
        placed = true;
        break;
      }
    }
    if (!placed) buckets.push_back({static_cast<int>(i)});
  }
  return buckets;
}

Status InvalidConfig(const std::string& key, const std::string& msg) {
  return Status::Error("invalid_config", key + ": " + msg);
}

// The pipeline's state between steps: what the planner knows that the plan does not keep.
struct PlanDraft {
  MambaCacheMode mode = MambaCacheMode::kNone;  // the Mamba cache mode after downgrades
  int64_t block_size = 0;                       // attention block (hybrid-aligned)
  int64_t mamba_block = 0;
  int64_t mamba_padded = 0;
  std::vector<PseudoLayer> pseudo;              // layers and packs
  std::vector<std::vector<int>> group_pseudo;   // groups as pseudo-layer indices
};

// Step 0: knobs that no plan can satisfy.
Status CheckConfig(const ModelSpec& target, const PlannerConfig& config) {
  if (config.tp < 1) return InvalidConfig("parallel.tp", "must be at least 1");
  if (config.block_size < 0) return InvalidConfig("cache.block_size", "must be positive");
  if (config.attn_pack_size < 1) return InvalidConfig("cache.attn_pack_size", "must be at least 1");
  if (config.num_speculative_tokens < 0)
    return InvalidConfig("cache.num_speculative_tokens", "must not be negative");
  if (config.kv_memory_bytes < 0)
    return InvalidConfig("cache.kv_memory_bytes", "must not be negative");
  if (config.num_gpu_blocks < 0) return InvalidConfig("cache.num_gpu_blocks", "must not be negative");
  if (config.kv_memory_bytes == 0 && config.num_gpu_blocks == 0 && target.num_layers() > 0) {
    return InvalidConfig("cache.kv_memory_bytes",
                         "give the KV memory budget (cache.kv_memory_bytes) or cache.num_gpu_blocks");
  }
  return Status::Ok();
}

// Step 1 (reference §4.1, §4.2): the Mamba cache mode, the hybrid attention block size
// `align × cdiv(M, align × a1)` (pack-aware), the Mamba block and its page padding.
Status PlanBlockSizes(const ModelSpec& target, const PlannerConfig& config, KvCachePlan& plan,
                      PlanDraft& d) {
  const int64_t nspec = config.num_speculative_tokens;
  MambaCacheMode mode = config.mamba_cache_mode;
  const LayerSpec* first_mamba = nullptr;
  const LayerSpec* first_attn = nullptr;
  for (const auto& l : target.layers) {
    if (l.kind == LayerKind::kMamba && !first_mamba) first_mamba = &l;
    if (l.kind != LayerKind::kMamba && !first_attn) first_attn = &l;
  }
  if (!config.enable_prefix_caching) {
    mode = MambaCacheMode::kNone;
  } else if (mode == MambaCacheMode::kNone) {
    mode = MambaCacheMode::kAlign;  // prefix caching on: 'none' becomes the default 'align'
  } else if (mode == MambaCacheMode::kAll && first_mamba && !first_mamba->mamba.supports_all_mode) {
    mode = MambaCacheMode::kAlign;
    plan.warnings.push_back(
        "mamba_cache_mode 'all' needs a model that implements SupportsMambaPrefixCaching "
        "(Mamba1/Mamba2 family); using 'align'");
  }
  plan.mamba_mode = first_mamba ? mode : MambaCacheMode::kNone;
  d.mode = mode;

  const bool has_mla = first_attn && first_attn->kind == LayerKind::kMla;
  int64_t block_size = config.block_size > 0
                           ? config.block_size
                           : (has_mla ? kMlaDefaultBlockSize : kDefaultBlockSize);
  int64_t mamba_block = block_size;
  int64_t mamba_padded = 0;
  if (first_mamba) {
    auto m_spec = first_mamba->ToKvCacheSpec(config.tp, block_size, config.kv_dtype, target.dtype,
                                             nspec);
    if (!m_spec.ok()) return LayerError(m_spec.status(), target, first_mamba, false);
    const int64_t m = m_spec->mamba_state_bytes();
    plan.mamba_real_page_bytes = m;
    if (m > 0 && first_attn) {
      auto a_spec = first_attn->ToKvCacheSpec(config.tp, 1, config.kv_dtype, target.dtype, nspec);
      if (!a_spec.ok()) return LayerError(a_spec.status(), target, first_attn, false);
      KvCacheSpec one = a_spec.value();
      if (one.kind != LayerKind::kMla) one.kind = LayerKind::kFullAttention;
      const int64_t a1 = one.real_page_bytes() * config.attn_pack_size;
      plan.attn_token_bytes = a1;
      int64_t align = std::max(kMinKernelBlock, block_size);
      if (has_mla) align = std::max(align, kMlaHybridAlign);
      int64_t b_attn = 0;
      if (mode == MambaCacheMode::kAll) {
        const int64_t user_chunk =
            config.mamba_block_size > 0 ? config.mamba_block_size : first_mamba->mamba.chunk_size;
        const int64_t chunk = Lcm(user_chunk > 0 ? user_chunk : align, align);
        b_attn = chunk * CeilDiv(CeilDiv(m, a1), chunk);
      } else {
        b_attn = align * CeilDiv(m, align * a1);
      }
      if (block_size < b_attn) block_size = b_attn;
      if (mode == MambaCacheMode::kAll) {
        mamba_block = b_attn;
      } else if (mode == MambaCacheMode::kAlign) {
        mamba_block = block_size;
      }
      const int64_t attn_page = block_size * a1;
      KVSIM_CHECK(attn_page >= m);
      if (attn_page != m) mamba_padded = attn_page;
    }
    if (mode == MambaCacheMode::kNone) {
      if (plan.max_model_len <= 0) {
        return InvalidConfig("model.max_model_len",
                             "needed: with prefix caching off a Mamba state block spans "
                             "max_model_len");
      }
      mamba_block = plan.max_model_len;
    }
  }
  if (config.attn_pack_size > 1 && !(first_mamba && first_attn)) {
    return InvalidConfig("cache.attn_pack_size",
                         "packing attention layers (PR #35703) needs a hybrid attention + Mamba "
                         "model; this model is " +
                             std::string(first_mamba ? "Mamba-only" : "attention-only"));
  }
  if (config.attn_pack_size >= 8) {
    // PR #35703 warns here too: a pack this large wastes memory in short packs and padding.
    plan.warnings.push_back("attn_pack_size " + std::to_string(config.attn_pack_size) +
                            " >= 8 may waste KV memory (short packs, Mamba padding)");
  }
  plan.attn_block_size = first_attn ? block_size : 0;
  plan.mamba_block_size = first_mamba ? mamba_block : 0;
  plan.mamba_padded_page_bytes = mamba_padded;
  d.block_size = block_size;
  d.mamba_block = mamba_block;
  d.mamba_padded = mamba_padded;
  return Status::Ok();
}

// Step 2: per-rank layer specs of the target and the draft at the planned block sizes; with
// the hybrid manager disabled, windowed layers are promoted to full attention (§2).
Status BuildLayerSpecs(const ModelSpec& target, const ModelSpec* draft,
                       const PlannerConfig& config, const PlanDraft& d, KvCachePlan& plan) {
  auto add_layers = [&](const ModelSpec& model, bool is_draft) -> Status {
    for (size_t i = 0; i < model.layers.size(); ++i) {
      const LayerSpec& l = model.layers[i];
      const bool mamba = l.kind == LayerKind::kMamba;
      auto spec = l.ToKvCacheSpec(config.tp, mamba ? d.mamba_block : d.block_size,
                                  config.kv_dtype, model.dtype, config.num_speculative_tokens);
      if (!spec.ok()) return LayerError(spec.status(), model, &l, is_draft);
      PlannedLayer pl;
      pl.name = (is_draft ? "D" : "L") + std::to_string(i + 1);
      pl.is_draft = is_draft;
      pl.spec = spec.value();
      if (mamba && d.mamba_padded > 0) pl.spec.page_size_padded = d.mamba_padded;
      if (pl.spec.is_attention() && pl.spec.content_bytes() <= 0) {
        return LayerError(Status::Error("invalid_config",
                                        "an attention layer with no KV bytes (check head_size "
                                        "and dtype)"),
                          model, &l, is_draft);
      }
      plan.layers.push_back(std::move(pl));
    }
    return Status::Ok();
  };
  if (Status s = add_layers(target, false); !s.ok()) return s;
  if (draft) {
    if (Status s = add_layers(*draft, true); !s.ok()) return s;
  }
  if (config.hybrid_kv_cache_manager) return Status::Ok();
  bool any_full = false, any_local = false;
  for (const auto& l : plan.layers) {
    any_full |= l.spec.kind == LayerKind::kFullAttention;
    any_local |=
        l.spec.kind == LayerKind::kSlidingWindow || l.spec.kind == LayerKind::kChunkedLocal;
  }
  if (any_local && !any_full) {
    return InvalidConfig("cache.hybrid_kv_cache_manager",
                         "disabling the hybrid manager needs at least one full-attention layer "
                         "to promote sliding-window/chunked layers to");
  }
  for (auto& l : plan.layers) {
    if (l.spec.kind == LayerKind::kSlidingWindow || l.spec.kind == LayerKind::kChunkedLocal) {
      l.spec.kind = LayerKind::kFullAttention;  // window kept for compute, not allocation
    }
  }
  return Status::Ok();
}

// Step 3 (PR #35703, §7.1): consecutive same-spec attention layers share a page in packs of
// attn_pack_size; every other layer is a pseudo-layer of its own.
std::vector<PseudoLayer> FormAttentionPacks(const KvCachePlan& plan, int64_t n) {
  std::vector<bool> packable(plan.layers.size());
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    packable[i] = plan.layers[i].spec.is_attention() && n > 1;
  }
  const auto buckets = BucketBySpec(
      plan.layers.size(), [&](size_t i) -> const KvCacheSpec& { return plan.layers[i].spec; },
      &packable);
  std::map<int, std::vector<int>> packs;  // first member → pack members
  for (const auto& b : buckets) {
    for (size_t k = 0; k < b.size(); k += static_cast<size_t>(n)) {
      std::vector<int> members(b.begin() + static_cast<std::ptrdiff_t>(k),
                               b.begin() + static_cast<std::ptrdiff_t>(
                                               std::min(b.size(), k + static_cast<size_t>(n))));
      packs[members[0]] = members;
    }
  }
  std::vector<bool> in_pack(plan.layers.size(), false);
  for (const auto& [first, members] : packs) {
    for (int m : members) in_pack[static_cast<size_t>(m)] = true;
  }
  std::vector<PseudoLayer> pseudo;
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    auto it = packs.find(static_cast<int>(i));
    if (it != packs.end()) {
      PseudoLayer p;
      p.spec = plan.layers[i].spec;
      p.spec.pack_size = n;
      p.members = it->second;
      for (size_t k = 0; k < p.members.size(); ++k) {
        if (k) p.name += "+";
        p.name += plan.layers[static_cast<size_t>(p.members[k])].name;
      }
      pseudo.push_back(std::move(p));
    } else if (!in_pack[i]) {
      pseudo.push_back({plan.layers[i].spec, {static_cast<int>(i)}, plan.layers[i].name});
    }
  }
  return pseudo;
}

// Step 4 (§2, §3.1, §3.2): the plan's shape; for hybrid plans page-size unification and the
// equal-size groups (smaller types padded when the largest bucket is under 1.5× the
// smallest). With MLA plus sliding-window layers whose pages cannot be unified, vLLM
// allocates the sliding-window layers as full attention and, if that gives one type, uses
// one UniformTypeKVCacheSpecs group.
Status GroupLayers(const ModelSpec* draft, const PlannerConfig& config, KvCachePlan& plan,
                   PlanDraft& d) {
  std::vector<PseudoLayer>& pseudo = d.pseudo;
  bool all_same = true, same_type = true;
  for (const auto& p : pseudo) {
    all_same &= SameAllocation(p.spec, pseudo[0].spec);
    same_type &= SameType(p.spec, pseudo[0].spec);
  }
  if (!all_same && !same_type) {
    std::vector<KvCacheSpec> specs;
    std::vector<std::string> names;
    bool has_mla = false, has_swa = false, other = false;
    for (const auto& p : pseudo) {
      specs.push_back(p.spec);
      names.push_back(p.name);
      has_mla |= p.spec.kind == LayerKind::kMla;
      has_swa |= p.spec.kind == LayerKind::kSlidingWindow;
      other |= p.spec.kind == LayerKind::kChunkedLocal || p.spec.kind == LayerKind::kMamba;
    }
    if (has_mla && has_swa && !other && !UnifyPageSizes(specs, names, config.semantics).ok()) {
      std::vector<PseudoLayer> promoted = pseudo;
      for (auto& p : promoted) {
        if (p.spec.kind == LayerKind::kSlidingWindow) p.spec.kind = LayerKind::kFullAttention;
      }
      bool uniform = true;
      for (const auto& p : promoted) uniform &= SameType(p.spec, promoted[0].spec);
      if (uniform) {
        pseudo = std::move(promoted);
        for (auto& l : plan.layers) {
          if (l.spec.kind == LayerKind::kSlidingWindow) l.spec.kind = LayerKind::kFullAttention;
        }
        same_type = true;
        plan.warnings.push_back(
            "page sizes of the MLA and sliding-window layers cannot be unified; the "
            "sliding-window layers are allocated as full attention (compute stays windowed)");
      }
    }
  }

  std::vector<int> all(pseudo.size());
  for (size_t i = 0; i < pseudo.size(); ++i) all[i] = static_cast<int>(i);
  if (all_same) {
    plan.shape = PlanShape::kSingleGroup;
    d.group_pseudo.push_back(all);
    plan.page_bytes = pseudo[0].spec.page_bytes();
    return Status::Ok();
  }
  if (same_type) {
    plan.shape = PlanShape::kUniformType;
    d.group_pseudo.push_back(all);
    plan.page_bytes = 0;
    for (const auto& p : pseudo) plan.page_bytes += p.spec.page_bytes();
    return Status::Ok();
  }
  plan.shape = PlanShape::kHybrid;
  std::vector<KvCacheSpec> specs;
  std::vector<std::string> names;
  for (const auto& p : pseudo) {
    specs.push_back(p.spec);
    names.push_back(p.name);
  }
  if (Status s = UnifyPageSizes(specs, names, config.semantics); !s.ok()) {
    return Status::Error(s.code(), (draft ? "model.draft: " : "model: ") + s.message());
  }
  for (size_t i = 0; i < pseudo.size(); ++i) pseudo[i].spec = specs[i];
  plan.page_bytes = specs[0].page_bytes();
  const auto buckets = BucketBySpec(
      pseudo.size(), [&](size_t i) -> const KvCacheSpec& { return pseudo[i].spec; });
  int64_t min_n = INT64_MAX, max_n = 0;
  for (const auto& b : buckets) {
    min_n = std::min<int64_t>(min_n, static_cast<int64_t>(b.size()));
    max_n = std::max<int64_t>(max_n, static_cast<int64_t>(b.size()));
  }
  // Pad the smaller types instead when the largest bucket is under 1.5× the smallest.
  const int64_t group_size = (2 * max_n < 3 * min_n) ? max_n : min_n;
  for (const auto& b : buckets) {
    const int64_t n = static_cast<int64_t>(b.size());
    const int64_t num_groups = CeilDiv(n, group_size);
    for (int64_t g = 0; g < num_groups; ++g) {
      std::vector<int> members;
      for (int64_t k = g; k < n; k += num_groups) members.push_back(b[static_cast<size_t>(k)]);
      d.group_pseudo.push_back(members);
    }
  }
  return Status::Ok();
}

// Step 5a: the groups, which slot tensor each layer uses, and the bytes of one block id.
// Hybrid plans share group_size slot tensors across groups; others have one per pseudo-layer.
void AssignGroupsAndTensors(KvCachePlan& plan, const PlanDraft& d) {
  const std::vector<PseudoLayer>& pseudo = d.pseudo;
  int64_t group_size = 0;
  for (const auto& g : d.group_pseudo) group_size = std::max<int64_t>(group_size, g.size());
  if (plan.shape != PlanShape::kHybrid) group_size = static_cast<int64_t>(pseudo.size());
  plan.group_size = plan.shape == PlanShape::kHybrid ? group_size : 1;

  for (size_t g = 0; g < d.group_pseudo.size(); ++g) {
    KvCacheGroup grp;
    const KvCacheSpec& first = pseudo[static_cast<size_t>(d.group_pseudo[g][0])].spec;
    grp.kind = first.kind;
    grp.spec = first;
    grp.block_size = first.block_size;
    grp.page_bytes = first.page_bytes();
    grp.real_page_bytes = first.pack_size * first.real_page_bytes();
    for (int pi : d.group_pseudo[g]) {
      const PseudoLayer& p = pseudo[static_cast<size_t>(pi)];
      for (size_t m = 0; m < p.members.size(); ++m) {
        PlannedLayer& pl = plan.layers[static_cast<size_t>(p.members[m])];
        pl.spec = p.spec;
        pl.group = static_cast<int>(g);
        pl.pack_member = static_cast<int>(m);
        grp.layers.push_back(p.members[m]);
        grp.data_bytes_per_block += p.spec.real_page_bytes();
      }
    }
    plan.groups.push_back(std::move(grp));
  }

  if (plan.shape == PlanShape::kHybrid) {
    plan.tensors.resize(static_cast<size_t>(group_size));
    for (const auto& g : d.group_pseudo) {
      for (size_t pos = 0; pos < g.size(); ++pos) {
        for (int li : pseudo[static_cast<size_t>(g[pos])].members) {
          plan.layers[static_cast<size_t>(li)].slot = static_cast<int>(pos);
          plan.tensors[pos].shared_by.push_back(li);
        }
      }
    }
    plan.block_bytes = group_size * plan.page_bytes;
  } else {
    plan.tensors.resize(pseudo.size());
    int64_t bytes = 0;
    for (size_t i = 0; i < pseudo.size(); ++i) {
      for (int li : pseudo[i].members) {
        plan.layers[static_cast<size_t>(li)].slot = static_cast<int>(i);
        plan.tensors[i].shared_by.push_back(li);
      }
      bytes += pseudo[i].spec.page_bytes();
    }
    plan.block_bytes = bytes;
  }
  for (auto& t : plan.tensors) std::sort(t.shared_by.begin(), t.shared_by.end());
}

// Step 5b (§3.3 "packed layout"): B-first layouts put every layer of a block id in one slab;
// each layer's offset in it, and the checks that a slab layout can hold these layers.
Status LayOutCrossLayerSlab(const PlannerConfig& config, const PlanDraft& d, KvCachePlan& plan) {
  if (!plan.cross_layer) return Status::Ok();
  if (config.kv_split == KvSplit::kKvFirstTensor) {
    return InvalidConfig("cache.kv_split",
                         "kv_first_tensor keeps K and V halves per layer tensor; a cross-layer "
                         "slab needs packed_content or kv_in_block");
  }
  for (const auto& l : plan.layers) {
    if (config.layout != KvOrder::kBHLNC) break;
    const KvCacheSpec& a = plan.layers[0].spec;
    const KvCacheSpec& b = l.spec;
    if (!a.is_attention()) {
      return InvalidConfig("cache.layout",
                           "BHLNC interleaves the heads of every layer of a block; layer " +
                               plan.layers[0].name + " (" + std::string(LayerKindName(a.kind)) +
                               ") has no heads to interleave (use BLHNC)");
    }
    if (!b.is_attention() || b.pack_size > 1 || b.page_size_padded > 0 ||
        b.num_head_slots() != a.num_head_slots() || b.block_size != a.block_size ||
        b.k_content_bytes() != a.k_content_bytes() || b.v_content_bytes() != a.v_content_bytes()) {
      return InvalidConfig(
          "cache.layout",
          "BHLNC interleaves the heads of every layer of a block, so every layer needs the same "
          "heads, block size and content width, unpadded and unpacked; layer " +
              l.name + " (" + std::string(LayerKindName(b.kind)) + ") differs from layer " +
              plan.layers[0].name + " (use BLHNC)");
    }
  }
  for (const auto& l : plan.layers) {
    if (l.spec.is_attention() && !l.spec.indexes_kv_by_block_stride) {
      return InvalidConfig("cache.layout",
                           std::string("cross-layer layout ") + KvOrderName(config.layout) +
                               " needs every attention backend to index KV by block stride; "
                               "layer " +
                               l.name + " does not");
    }
  }
  int64_t slab = 0;
  for (const auto& g : d.group_pseudo) {
    int64_t off = 0;
    for (int pi : g) {
      for (int li : d.pseudo[static_cast<size_t>(pi)].members) {
        plan.layers[static_cast<size_t>(li)].slab_offset = off;
      }
      off += d.pseudo[static_cast<size_t>(pi)].spec.page_bytes();
    }
    slab = std::max(slab, off);
  }
  plan.block_bytes = slab;
  return Status::Ok();
}

// Step 5c: num_blocks from the KV memory budget (or the override) and the tensors' sizes.
Status SizePool(const PlannerConfig& config, KvCachePlan& plan) {
  plan.num_blocks = config.num_gpu_blocks > 0 ? config.num_gpu_blocks
                                              : config.kv_memory_bytes / plan.block_bytes;
  // A budget that holds two default-sized blocks but not two of the user's: the block size
  // is what to change, so blame it and say how large it may be.
  if (plan.num_blocks < 2 && config.num_gpu_blocks == 0 && config.block_size > 0 &&
      plan.attn_block_size > 0) {
    const int64_t per_token = std::max<int64_t>(1, plan.block_bytes / plan.attn_block_size);
    const int64_t largest = config.kv_memory_bytes / 2 / per_token;
    if (largest >= kDefaultBlockSize) {
      return InvalidConfig(
          "cache.block_size",
          std::to_string(config.block_size) + " tokens make a " + Bytes(plan.block_bytes) +
              " block, and cache.kv_memory_bytes " + Bytes(config.kv_memory_bytes) +
              " holds fewer than 2 of them (one is the null block); this budget allows a block "
              "of about " +
              std::to_string(largest) + " tokens at most");
    }
  }
  if (plan.num_blocks < 2) {
    return Status::Error(
        "kv_memory_too_small",
        config.num_gpu_blocks > 0
            ? "cache.num_gpu_blocks: " + std::to_string(config.num_gpu_blocks) +
                  " blocks leave none usable (block 0 is the null block); give at least 2"
            : "cache.kv_memory_bytes: " + std::to_string(config.kv_memory_bytes) +
                  " B holds fewer than 2 blocks of " + Bytes(plan.block_bytes) +
                  " (one is the null block)");
  }
  for (auto& t : plan.tensors) {
    const KvCacheSpec& s = plan.layers[static_cast<size_t>(t.shared_by[0])].spec;
    t.size_bytes = (plan.shape == PlanShape::kHybrid ? plan.page_bytes : s.page_bytes()) *
                   plan.num_blocks;
  }
  if (plan.cross_layer) {
    KvCacheTensor slab;
    slab.size_bytes = plan.block_bytes * plan.num_blocks;
    for (size_t i = 0; i < plan.layers.size(); ++i) slab.shared_by.push_back(static_cast<int>(i));
    plan.tensors = {slab};
    for (auto& l : plan.layers) l.slot = 0;
  }
  return Status::Ok();
}

// Step 6 (§4.3): the kernel block each attention layer's manager block splits into, and the
// layouts that cannot be split or K/V-split.
Status CheckKernelBlocks(const PlannerConfig& config, KvCachePlan& plan) {
  for (const auto& l : plan.layers) {
    if (!l.spec.is_attention()) continue;
    const int64_t k = SelectKernelBlockSize(l.spec.block_size, config.backend);
    if (k == 0) {
      // The block may be the planner's, raised from the user's: say how it was derived.
      std::string derived;
      if (config.block_size > 0 && l.spec.block_size != config.block_size &&
          l.spec.block_size % config.block_size == 0) {
        derived = " (derived from cache.block_size " + std::to_string(config.block_size) +
                  ": " +
                  (plan.mamba_real_page_bytes > 0
                       ? "a hybrid model raises the attention block to a multiple of it whose "
                         "page covers the Mamba state of " +
                             Bytes(plan.mamba_real_page_bytes) + ", here "
                       : "page-size unification raised it to ") +
                  std::to_string(l.spec.block_size / config.block_size) + " × " +
                  std::to_string(config.block_size) + " tokens)";
      }
      return InvalidConfig(
          "cache.block_size",
          "block size " + std::to_string(l.spec.block_size) + " of layer " + l.name + derived +
              " is not supported by " + std::string(AttentionBackendName(config.backend)) +
              " kernels (" +
              (config.backend == AttentionBackend::kFlashInfer ? "needs a multiple of 16"
                                                               : "multiple of 16") +
              ")" + (derived.empty() ? "" : "; give a cache.block_size that is a multiple of 16"));
    }
    if (k != l.spec.block_size && l.spec.page_size_padded > 0) {
      return InvalidConfig("cache.block_size",
                           "layer " + l.name + " has a padded page and its " +
                               std::to_string(l.spec.block_size) +
                               "-token block would be split into " + std::to_string(k) +
                               "-token kernel blocks; vLLM's padded-page view does not support "
                               "the split");
    }
    if (k != l.spec.block_size && plan.cross_layer) {
      return InvalidConfig("cache.layout",
                           "a cross-layer layout cannot be combined with kernel block "
                           "splitting (layer " +
                               l.name + ")");
    }
    if (l.spec.pack_size > 1 && l.spec.page_size_padded > 0 && k != l.spec.block_size) {
      return InvalidConfig("cache.attn_pack_size",
                           "padded packs cannot be split into kernel blocks");
    }
  }
  plan.kernel_block_size = SelectKernelBlockSize(plan.attn_block_size, config.backend);
  if (config.kv_split == KvSplit::kPackedInContent) return Status::Ok();
  for (const auto& l : plan.layers) {
    if (l.spec.is_attention() && l.spec.k_content_bytes() != l.spec.v_content_bytes()) {
      return InvalidConfig("cache.kv_split",
                           "K/V split layouts need equal K and V widths (layer " + l.name + ")");
    }
    if (l.spec.is_attention() && config.kv_split == KvSplit::kKvFirstTensor &&
        plan.shape == PlanShape::kHybrid) {
      return InvalidConfig(
          "cache.kv_split",
          "kv_first_tensor puts every V block after every K block, so a block id's bytes are "
          "not one page and cannot share a tensor with other groups (layer " +
              l.name + "; vLLM restrided hybrid models to (B, 2, ...) = kv_in_block)");
    }
    if (l.spec.is_attention() && l.spec.page_size_padded > 0 &&
        config.kv_split == KvSplit::kKvFirstTensor) {
      return InvalidConfig("cache.kv_split", "K/V-first tensors cannot hold padded pages (layer " +
                                                 l.name + "; vLLM rejects them too)");
    }
  }
  return Status::Ok();
}

// Step 7 ([latest] reporting, §3.3): blocks per max_model_len request, concurrency, token
// capacity, and the classic log line's capacity.
void ComputeCapacity(const PlannerConfig& config, MambaCacheMode mode, KvCachePlan& plan) {
  if (plan.max_model_len > 0) {
    for (const auto& g : plan.groups) {
      plan.blocks_per_request +=
          MaxBlocksPerRequest(g.spec, plan.max_model_len, config.max_num_batched_tokens, mode);
    }
    if (plan.blocks_per_request > 0) {
      plan.max_concurrency =
          static_cast<double>(plan.num_blocks) / static_cast<double>(plan.blocks_per_request);
      plan.kv_cache_size_tokens =
          static_cast<int64_t>(plan.max_concurrency * static_cast<double>(plan.max_model_len));
      if (plan.max_concurrency < 1.0) {
        plan.warnings.push_back("one request of max_model_len " +
                                std::to_string(plan.max_model_len) +
                                " tokens does not fit: vLLM would refuse to start");
      }
    }
  }
  int64_t min_block = INT64_MAX;
  for (const auto& g : plan.groups) min_block = std::min(min_block, g.block_size);
  plan.classic_token_capacity =
      plan.num_blocks / static_cast<int64_t>(plan.groups.size()) * min_block;
}

}  // namespace

Result<KvCachePlan> PlanKvCache(const ModelSpec& target, const ModelSpec* draft,
                                const PlannerConfig& config) {
  if (Status s = CheckConfig(target, config); !s.ok()) return s;
  KvCachePlan plan;
  plan.config = config;
  plan.max_model_len = config.max_model_len > 0 ? config.max_model_len : target.max_model_len;
  PlanDraft d;
  if (Status s = PlanBlockSizes(target, config, plan, d); !s.ok()) return s;
  if (Status s = BuildLayerSpecs(target, draft, config, d, plan); !s.ok()) return s;
  if (plan.layers.empty()) {  // attention-free: only the null block
    plan.shape = PlanShape::kNoKv;
    plan.num_blocks = 1;
    return plan;
  }
  plan.cross_layer = IsB_First(config.layout);
  d.pseudo = FormAttentionPacks(plan, config.attn_pack_size);
  if (Status s = GroupLayers(draft, config, plan, d); !s.ok()) return s;
  AssignGroupsAndTensors(plan, d);
  if (Status s = LayOutCrossLayerSlab(config, d, plan); !s.ok()) return s;
  if (Status s = SizePool(config, plan); !s.ok()) return s;
  if (Status s = CheckKernelBlocks(config, plan); !s.ok()) return s;
  ComputeCapacity(config, d.mode, plan);
  return plan;
}

}  // namespace kvsim
