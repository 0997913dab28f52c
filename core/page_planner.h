// The page planner: a pure function from a model, a TP size and the cache knobs to the KV
// cache plan that vLLM v1 would build, to the byte (reference §1–4 and §7.1):
//   1. per-rank layer specs (heads per rank, Mamba state shapes per rank);
//   2. the hybrid attention block size `align × cdiv(M, align × a1)` (pack-aware: a1 × N),
//      the Mamba cache mode and Mamba page padding;
//   3. the attention pack of PR #35703 (consecutive same-spec attention layers share a page);
//   4. page-size unification: equal → keep; divisible → bump the block size; otherwise pad
//      when the backend indexes by block stride, or fail naming both layers;
//   5. grouping into equal-size groups, which layers share each slot tensor, num_blocks from
//      the KV memory budget, padding waste and capacity;
//   6. the kernel block split and, per layer, the KvLayout that addresses its bytes.
// PlanKvCache runs these as named steps in page_planner.cc (CheckConfig, PlanBlockSizes,
// BuildLayerSpecs, FormAttentionPacks, GroupLayers, AssignGroupsAndTensors,
// LayOutCrossLayerSlab, SizePool, CheckKernelBlocks, ComputeCapacity), each a function of
// the plan so far. Nothing here allocates memory or does I/O; errors are Status values with a
// code and a message. Layer names follow vLLM's tests: target layers "L1".."Ln", draft layers "D1"...
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/kv_cache_spec.h"
#include "core/kv_layout.h"
#include "core/model_spec.h"
#include "core/status.h"
#include "core/vllm_semantics.h"

namespace kvsim {

enum class MambaCacheMode : uint8_t { kNone, kAlign, kAll };
enum class AttentionBackend : uint8_t { kFlashAttn, kFlashInfer, kTriton };

std::string_view MambaCacheModeName(MambaCacheMode m);
std::string_view AttentionBackendName(AttentionBackend b);

struct PlannerConfig {
  int64_t tp = 1;
  int64_t dp = 1;  // data-parallel attention ranks (the step-time model; KV per rank as usual)
  int64_t ep = 1;  // expert-parallel ranks of the MoE layers (1 = experts TP-sharded)
  int64_t block_size = 0;  // 0: the backend's default (16)
  int64_t attn_pack_size = 1;
  DType kv_dtype = DType::kAuto;
  MambaCacheMode mamba_cache_mode = MambaCacheMode::kAlign;
  int64_t mamba_block_size = 0;  // 'all' mode: user Mamba chunk (0 = the model's)
  bool enable_prefix_caching = true;
  int64_t num_speculative_tokens = 0;
  int64_t kv_memory_bytes = 0;  // memory vLLM calls available for KV (per rank)
  double gpu_memory_utilization = 0;  // > 0: the loader derives kv_memory_bytes from it
  int64_t num_gpu_blocks = 0;   // num_gpu_blocks_override; wins over kv_memory_bytes
  int64_t max_model_len = 0;    // 0: the model's
  int64_t max_num_batched_tokens = 8192;  // in-flight tokens for SWA/chunked capacity
  AttentionBackend backend = AttentionBackend::kFlashAttn;
  KvOrder layout = KvOrder::kLBNHC;  // NHD; B-first orders select the cross-layer slab
  KvSplit kv_split = KvSplit::kPackedInContent;
  bool hybrid_kv_cache_manager = true;
  VllmSemantics semantics = VllmSemantics::kLatest;
  // CacheConfig.prefix_cache_retention_interval [latest]: −2 = the profile's default (0 in
  // latest, dense in classic), −1 = null (dense), 0 or k > 0 tokens (KvCacheManagerConfig).
  int64_t prefix_cache_retention_interval = -2;
};

struct PlannedLayer {
  std::string name;         // "L1"... (target), "D1"... (draft)
  bool is_draft = false;
  KvCacheSpec spec;         // final per-layer spec (pack_size > 1 for pack members)
  int group = -1;           // index into KvCachePlan::groups
  int slot = -1;            // index into KvCachePlan::tensors
  int pack_member = 0;      // position inside its pack
  int64_t slab_offset = 0;  // cross-layer slab: byte offset of this layer in a block
};

struct KvCacheGroup {
  LayerKind kind = LayerKind::kFullAttention;
  std::vector<int> layers;  // indices into KvCachePlan::layers, pack members expanded
  KvCacheSpec spec;         // the group's spec (first layer's for uniform-type groups)
  int64_t block_size = 0;
  int64_t page_bytes = 0;       // the page the allocator sees per layer slot
  int64_t real_page_bytes = 0;  // bytes of the page that hold data (one pseudo-layer)
  int64_t data_bytes_per_block = 0;  // Σ over slots of the data this group keeps per block id
};

struct KvCacheTensor {
  int64_t size_bytes = 0;
  std::vector<int> shared_by;  // layer indices
};

enum class PlanShape : uint8_t {
  kNoKv,         // attention-free: only the null block
  kSingleGroup,  // one spec for every layer; one tensor per layer
  kUniformType,  // same type and block size, different pages (UniformTypeKVCacheSpecs)
  kHybrid,       // several groups over shared slot tensors of one page size
};

struct KvCachePlan {
  PlannerConfig config;
  PlanShape shape = PlanShape::kNoKv;
  std::vector<PlannedLayer> layers;
  std::vector<KvCacheGroup> groups;
  std::vector<KvCacheTensor> tensors;

  int64_t attn_block_size = 0;   // attention manager block (after hybrid alignment/bumps)
  int64_t mamba_block_size = 0;  // Mamba group block (attn block, or max_model_len in 'none')
  MambaCacheMode mamba_mode = MambaCacheMode::kNone;  // after downgrades
  int64_t kernel_block_size = 0; // attention kernel block (select_common_block_size)
  int64_t attn_token_bytes = 0;  // a1: one token of one attention layer × pack (hybrid)
  int64_t mamba_real_page_bytes = 0;    // M (hybrid)
  int64_t mamba_padded_page_bytes = 0;  // the page Mamba is padded to (0 = none)

  int64_t page_bytes = 0;   // common page (hybrid), Σ pages (uniform type), page (single)
  int64_t group_size = 0;   // slot tensors per block id (hybrid)
  int64_t block_bytes = 0;  // bytes one block id occupies over all tensors
  int64_t num_blocks = 0;   // including the null block
  bool cross_layer = false; // one slab per block (B-first layout)

  // Capacity ([latest] reporting, §3.3) and the classic log line.
  int64_t blocks_per_request = 0;  // Σ_groups blocks one max_model_len request needs
  double max_concurrency = 0;
  int64_t kv_cache_size_tokens = 0;
  int64_t classic_token_capacity = 0;  // num_blocks // num_groups × min block size
  int64_t max_model_len = 0;

  std::vector<std::string> warnings;

  int64_t usable_blocks() const { return num_blocks > 0 ? num_blocks - 1 : 0; }
  int64_t total_bytes() const;
  // Bytes of every tensor that no layer's data uses, if every block held `group`'s data.
  int64_t padding_bytes_per_block(int group) const;
  // Fraction of allocated KV bytes lost to padding, averaged over groups equally.
  double padding_fraction() const;
  // The KvLayout of one layer's view of its tensor (or of the cross-layer slab).
  KvLayout LayoutForLayer(int layer) const;
  // The layout of a whole slot tensor: every pack member as a layer slot.
  KvLayout LayoutForSlot(int slot, int group) const;
};

// The whole planner. `draft` may be null.
Result<KvCachePlan> PlanKvCache(const ModelSpec& target, const ModelSpec* draft,
                                const PlannerConfig& config);

// Step 4 on its own (reference §2), exposed for tests: unifies page sizes in place.
// `names` label the specs in error messages.
Status UnifyPageSizes(std::vector<KvCacheSpec>& specs, const std::vector<std::string>& names,
                      VllmSemantics semantics);

// The kernel block a backend uses for a manager block (reference §4.3); 0 if none works.
int64_t SelectKernelBlockSize(int64_t block_size, AttentionBackend backend);

// Blocks one request of `max_model_len` tokens needs in a group of this spec (§1.2, §1.3).
int64_t MaxBlocksPerRequest(const KvCacheSpec& spec, int64_t max_model_len,
                            int64_t max_in_flight_tokens, MambaCacheMode mode);

}  // namespace kvsim
