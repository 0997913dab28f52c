// KV transfer math for prefill/decode (P/D) disaggregation: what moving one request's KV from
// a prefill instance to a decode instance costs when the two serve the same model with their
// own KV cache plans (TP, block size, NHD/HND layout, attention pack size). Pure arithmetic
// over two core KvCachePlans; no I/O, no clock. The cluster simulator (sim/cluster) owns time.
//
// What it mirrors (reference §7.4, gpu-notes §4), per attention layer:
//   * vLLM's NIXL connector posts one descriptor per (layer region, remote block) and rank
//     pair; the transfer unit is the *kernel* block (hybrid manager blocks are expanded to
//     kernel granularity, #49612). Block counts are ceil(tokens / unit) over the tokens the
//     decoder does not already hold. PR #30448 counted `ceil((num_tokens - 1) / block)`; on
//     the KV token count that drops the last block whenever tokens % block == 1 — a test pins
//     the right count.
//   * decode block = r × prefill block: NIXL reads r remote blocks into one local block and the
//     decoder re-lays them out after receipt (merged: #26759, #30275). HND needs the re-layout
//     ((r,H,N_r,D) → (H,r·N_r,D)); NHD blocks concatenate and need none.
//   * prefill block = r × decode block: vLLM rejects it. PR #30448 (unmerged) splits each
//     prefill block into r decode-shaped HND blocks on save; it is modelled when the scenario
//     opts in, and it is refused with prefix caching on the prefill side (the PR disables it
//     there: the rewrite happens in place over cached blocks) unless `model_unsupported`.
//   * NHD ↔ HND: remote HND → local NHD is a receive-side permute (enable_permute_local_kv);
//     prefill NHD → decode HND, and any prefill-NHD case that needs per-head slices (TP
//     change), needs PR #30448's permute on save.
//   * TP change: decode rank d needs its heads; it reads them from every prefill rank that
//     holds them (P_TP > D_TP: several sources) or a head slice of one (D_TP > P_TP), one
//     descriptor per contiguous run per rank pair, counted with KvLayout's strides.
//   * hybrid Mamba layers: the final state block maps 1:1 (#49612); one descriptor per state
//     array. P_TP > D_TP reads several state shards (#49297); D_TP > P_TP is refused.
// Transfer time is descriptors × per-descriptor cost + bytes / path bandwidth (+ latency),
// and the re-layout kernels cost launches + bytes read and written / HBM bandwidth
// (KvTransferTimeModel). Invariant (tested): every decode rank receives each of its head
// slots exactly once per transferred unit, so bytes add up to units × unit bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/kv_layout.h"
#include "core/model_spec.h"
#include "core/page_planner.h"
#include "core/status.h"

namespace kvsim {

struct KvTransferOptions {
  // vLLM's kv_transfer_config.enable_permute_local_kv: allows layout permutes (NHD ↔ HND).
  bool enable_permute_local_kv = true;
  // Model PR #30448's save-side post-process (split prefill blocks / permute to HND on save).
  // It was never merged, so a case that needs it is an error unless this is set.
  bool save_side_postprocess = false;
  // Cost out combinations vLLM refuses (save-side with prefix caching, heterogeneous TP over
  // NHD without a permute, D_TP > P_TP for Mamba state, mismatched cross-layer slabs) instead
  // of failing; each such layer gets a note saying why vLLM would refuse it.
  bool model_unsupported = false;
};

// One prefill rank → decode rank stream of one layer.
struct KvRankPair {
  int64_t prefill_rank = 0;
  int64_t decode_rank = 0;
  int64_t head_slots = 0;          // head slots (attention) moved per unit; 0 for Mamba
  int64_t descriptors_per_unit = 0;
  int64_t bytes_per_unit = 0;
};

// How one layer (or one cross-layer slab) moves. Static per plan pair.
struct KvLayerTransfer {
  int layer = -1;          // index into both plans' `layers`; -1 for a cross-layer slab
  std::string name;        // "L3", or "slab" for a cross-layer unit
  LayerKind kind = LayerKind::kFullAttention;
  int decode_group = -1;   // the decode plan's group (-1 for a slab)
  int64_t unit_tokens = 0;         // tokens per wire unit (0: a Mamba state block)
  int64_t prefill_block_tokens = 0;  // prefill kernel block
  int64_t decode_block_tokens = 0;   // decode kernel block
  int64_t window_tokens = 0;  // sliding window W / chunk size C; 0 = every token is needed
  bool chunked_local = false;
  int64_t merge_ratio = 1;  // remote units per decode block merged on receive (nD / nP)
  int64_t split_ratio = 1;  // decode blocks per prefill block split on save (nP / nD)
  bool permute_on_save = false;     // NHD → HND before sending (PR #30448)
  bool relayout_on_receive = false; // merge and/or HND → NHD after receipt
  // Bytes one prefill rank rewrites on save per prefill block; bytes one decode rank rewrites
  // on receive per unit. The ranks of a side work in parallel.
  int64_t save_bytes_per_prefill_block = 0;
  int64_t receive_bytes_per_unit = 0;
  std::vector<KvRankPair> pairs;
  std::vector<std::string> notes;  // why vLLM would refuse this (model_unsupported only)

  // Units of this layer a request moves when the decoder needs tokens [begin, end).
  int64_t Units(int64_t begin, int64_t end) const;
  // Prefill blocks of this layer the save-side kernel rewrites for those tokens.
  int64_t PrefillBlocks(int64_t begin, int64_t end) const;
};

// What one request's transfer moves and rewrites.
struct KvTransferCost {
  int64_t tokens = 0;               // tokens the decoder receives (end − begin)
  int64_t descriptors = 0;          // over every rank pair and layer
  int64_t max_rank_descriptors = 0; // the busiest decode rank (ranks post in parallel)
  int64_t bytes = 0;                // on the wire, whole units (tails of last blocks included)
  int64_t payload_bytes = 0;        // of real tokens only (attention) plus state bytes
  int64_t save_relayout_bytes = 0;      // summed over prefill ranks
  int64_t save_relayout_rank_bytes = 0; // the busiest prefill rank
  int64_t save_relayout_kernels = 0;    // launches per prefill rank (one per layer)
  int64_t receive_relayout_bytes = 0;
  int64_t receive_relayout_rank_bytes = 0;
  int64_t receive_relayout_kernels = 0;
  std::vector<int64_t> group_descriptors;  // per decode group
  std::vector<int64_t> group_bytes;        // per decode group
};

struct KvTransferPlan {
  int64_t prefill_tp = 1;
  int64_t decode_tp = 1;
  bool cross_layer = false;  // both sides use the same cross-layer slab: one unit per block
  std::vector<KvLayerTransfer> layers;
  int64_t num_decode_groups = 0;
  std::vector<std::string> notes;  // deduplicated layer notes

  // The cost of sending tokens [begin, end) of a request (begin = the decoder's own prefix
  // hit, a multiple of its block size; end = the prompt's KV tokens). Nothing moves when
  // begin >= end.
  KvTransferCost ForRequest(int64_t begin, int64_t end) const;
  // A one-paragraph human description (what is split, merged, permuted; per-pair figures).
  std::string Describe() const;
};

// Builds the transfer plan. `target`/`draft` are the model the plans were made from (the
// total KV head counts are needed to map heads to ranks). Errors (code "pd_unsupported" or
// "pd_mismatch") say which layer, what vLLM does and which option would model it.
Result<KvTransferPlan> PlanKvTransfer(const ModelSpec& target, const ModelSpec* draft,
                                      const KvCachePlan& prefill, const KvCachePlan& decode,
                                      const KvTransferOptions& options);

// Head slots a rank holds, as [begin, begin + count) over the model's KV heads: vLLM splits
// heads evenly and replicates them when TP exceeds the heads (rank r then holds head
// r·H/TP). Exposed for tests.
struct HeadRange {
  int64_t begin = 0;
  int64_t count = 0;
};
HeadRange RankHeads(int64_t total_heads, int64_t tp, int64_t rank);

// Contiguous runs (and bytes per run) covering heads [head_begin, head_begin + heads) × every
// token × every content byte of one block of `layout` (every layer slot when `all_layers`).
// K and V halves of split layouts are always separate runs (NIXL posts them separately).
struct KvRuns {
  int64_t runs = 0;
  int64_t run_bytes = 0;
};
KvRuns CountBlockRuns(const KvLayout& layout, int64_t head_begin, int64_t heads, bool all_layers);

// Time model for a transfer and its re-layouts. Defaults and their sources are in
// docs/pd.md (gpu-notes §1.4, §2, §4); calibration may replace them.
struct KvTransferTimeModel {
  double per_descriptor_ns = 2000.0;  // posting cost α per descriptor (NIXL/UCX, ≈ 1–2 µs)
  bool overlap_posting = false;       // false: posting + wire (sum); true: max(posting, wire)
  // Measured on an H100 SXM (docs/pd.md): kvsim's own conversion kernels (kvsim gpu-validate:
  // NHD<->HND, re-chunk 16<->64, unpack) move 2545-2572 GB/s of read + write traffic at 1 GiB;
  // back-to-back launches of a small permute cost 4.1-4.5 µs each (docs/pd_relayout_probe.cu).
  double relayout_bytes_per_ns = 2560.0;  // HBM traffic rate (read + write) of the re-layout
  double relayout_launch_ns = 4000.0;     // per kernel launch (one per layer)

  // Descriptor posting time of the busiest decode rank.
  int64_t PostingNs(const KvTransferCost& c) const;
  // Wire time at `bytes_per_ns` (no latency).
  static int64_t WireNs(int64_t bytes, double bytes_per_ns);
  // Isolated transfer time: posting and wire combined per `overlap_posting`, plus latency.
  int64_t TransferNs(const KvTransferCost& c, double path_bytes_per_ns,
                     int64_t latency_ns) const;
  // Re-layout kernels on the busiest prefill rank (save) and decode rank (receive): each
  // byte is read and written once.
  int64_t SaveRelayoutNs(const KvTransferCost& c) const;
  int64_t ReceiveRelayoutNs(const KvTransferCost& c) const;
};

}  // namespace kvsim
