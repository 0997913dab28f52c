#include "core/kv_transfer.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "core/int_math.h"

namespace kvsim {
namespace {

// NHD-like orders put the token axis outside the head axis inside a layer's block.
bool TokenMajor(KvOrder o) { return o == KvOrder::kLBNHC || o == KvOrder::kBLNHC; }

// The head-major order with the same placement of the layer and block axes.
KvOrder HeadMajor(KvOrder o) {
  if (o == KvOrder::kLBNHC) return KvOrder::kLBHNC;
  if (o == KvOrder::kBLNHC) return KvOrder::kBLHNC;
  return o;
}

Status Unsupported(const std::string& msg) { return Status::Error("pd_unsupported", msg); }
Status Mismatch(const std::string& msg) { return Status::Error("pd_mismatch", msg); }

// The model layer a planned layer came from ("L3" → target layer 2, "D1" → draft layer 0).
const LayerSpec* SourceLayer(const ModelSpec& target, const ModelSpec* draft,
                             const PlannedLayer& pl) {
  if (pl.name.size() < 2) return nullptr;
  const ModelSpec* m = pl.is_draft ? draft : &target;
  if (!m) return nullptr;
  const long idx = std::strtol(pl.name.c_str() + 1, nullptr, 10) - 1;
  if (idx < 0 || idx >= static_cast<long>(m->layers.size())) return nullptr;
  return &m->layers[static_cast<size_t>(idx)];
}

// Refuses, or records a note and goes on, per options.model_unsupported.
bool Refuse(const KvTransferOptions& o, KvLayerTransfer& lt, const std::string& why,
            Status* err) {
  if (!o.model_unsupported) {
    *err = Unsupported("layer " + lt.name + ": " + why +
                       " (set cluster.transfer.model_unsupported: true to cost it anyway)");
    return false;
  }
  lt.notes.push_back(why);
  return true;
}

// Which prefill rank serves each head of decode rank d, grouped into runs of consecutive
// heads from one source. Replicated heads (TP > heads) are read from replica d mod copies,
// which spreads decode ranks over the copies.
struct HeadSource {
  int64_t prefill_rank = 0;
  int64_t decode_rank = 0;
  int64_t local_begin = 0;  // first head within the prefill rank's heads
  int64_t count = 0;
};

std::vector<HeadSource> AttentionSources(int64_t heads, int64_t tp_p, int64_t tp_d) {
  std::vector<HeadSource> out;
  for (int64_t d = 0; d < tp_d; ++d) {
    const HeadRange want = RankHeads(heads, tp_d, d);
    for (int64_t h = want.begin; h < want.begin + want.count; ++h) {
      std::vector<int64_t> owners;
      for (int64_t p = 0; p < tp_p; ++p) {
        const HeadRange have = RankHeads(heads, tp_p, p);
        if (h >= have.begin && h < have.begin + have.count) owners.push_back(p);
      }
      KVSIM_CHECK(!owners.empty());
      const int64_t p = owners[static_cast<size_t>(d) % owners.size()];
      const int64_t local = h - RankHeads(heads, tp_p, p).begin;
      if (!out.empty() && out.back().decode_rank == d && out.back().prefill_rank == p &&
          local == out.back().local_begin + out.back().count) {
        ++out.back().count;
        continue;
      }
      out.push_back({p, d, local, 1});
    }
  }
  return out;
}

}  // namespace

HeadRange RankHeads(int64_t total_heads, int64_t tp, int64_t rank) {
  KVSIM_CHECK(total_heads >= 1 && tp >= 1 && rank >= 0 && rank < tp);
  if (tp <= total_heads) {
    const int64_t per = total_heads / tp;
    return {rank * per, per};
  }
  return {rank * total_heads / tp, 1};
}

KvRuns CountBlockRuns(const KvLayout& layout, int64_t head_begin, int64_t heads,
                      bool all_layers) {
  KVSIM_CHECK(heads >= 1 && head_begin >= 0 && head_begin + heads <= layout.num_heads);
  int ord[KvLayout::kNumAxes] = {0, 0, 0, 0, 0, 0};
  layout.AxisOrder(ord);
  int64_t stride[KvLayout::kNumAxes] = {0, 0, 0, 0, 0, 0};
  layout.Strides(stride);
  auto box = [&](int a) -> int64_t {
    switch (a) {
      case KvLayout::kL: return all_layers ? layout.num_layers : 1;
      case KvLayout::kB: return 1;
      case KvLayout::kH: return heads;
      default: return layout.Extent(a);  // S, N, C: whole
    }
  };
  KvRuns r{1, 1};
  bool mergeable = true;
  for (int i = KvLayout::kNumAxes - 1; i >= 0; --i) {
    const int a = ord[i];
    const int64_t e = box(a);
    const int64_t full = layout.Extent(a);
    if (e == 1 && full == 1) continue;
    if (a == KvLayout::kS) {  // K and V halves: separate descriptors
      r.runs *= e;
      mergeable = false;
      continue;
    }
    if (mergeable && stride[a] == r.run_bytes) {
      r.run_bytes *= e;
      if (e != full) mergeable = false;
    } else {
      mergeable = false;
      r.runs *= e;
    }
  }
  return r;
}

int64_t KvLayerTransfer::Units(int64_t begin, int64_t end) const {
  if (end <= begin) return 0;
  if (unit_tokens == 0) return 1;  // a Mamba state block: the state after the last token
  int64_t first = std::max<int64_t>(begin, 0);
  if (window_tokens > 0) {
    const int64_t need = chunked_local ? RoundDown(end - 1, window_tokens)
                                       : std::max<int64_t>(0, end - window_tokens + 1);
    first = std::max(first, need);
  }
  return CeilDiv(end, unit_tokens) - first / unit_tokens;
}

int64_t KvLayerTransfer::PrefillBlocks(int64_t begin, int64_t end) const {
  if (end <= begin) return 0;
  if (unit_tokens == 0) return 1;
  const int64_t u = Units(begin, end);
  if (u == 0) return 0;
  // The units are decode-shaped pieces [first_unit, first_unit + u); map them to the prefill
  // blocks they were cut from.
  const int64_t first_unit = CeilDiv(end, unit_tokens) - u;
  const int64_t first_tok = first_unit * unit_tokens;
  const int64_t last_tok = (first_unit + u) * unit_tokens;  // exclusive
  return CeilDiv(last_tok, prefill_block_tokens) - first_tok / prefill_block_tokens;
}

KvTransferCost KvTransferPlan::ForRequest(int64_t begin, int64_t end) const {
  KvTransferCost c;
  c.group_descriptors.assign(static_cast<size_t>(num_decode_groups), 0);
  c.group_bytes.assign(static_cast<size_t>(num_decode_groups), 0);
  if (end <= begin) return c;
  c.tokens = end - begin;
  std::vector<int64_t> rank_desc(static_cast<size_t>(decode_tp), 0);
  for (const auto& lt : layers) {
    const int64_t u = lt.Units(begin, end);
    if (u == 0) continue;
    int64_t bytes_per_unit = 0;
    for (const auto& p : lt.pairs) {
      const int64_t d = u * p.descriptors_per_unit;
      c.descriptors += d;
      c.bytes += u * p.bytes_per_unit;
      bytes_per_unit += p.bytes_per_unit;
      rank_desc[static_cast<size_t>(p.decode_rank)] += d;
      if (lt.decode_group >= 0) {
        c.group_descriptors[static_cast<size_t>(lt.decode_group)] += d;
        c.group_bytes[static_cast<size_t>(lt.decode_group)] += u * p.bytes_per_unit;
      }
    }
    if (lt.unit_tokens == 0) {
      c.payload_bytes += bytes_per_unit;
    } else {
      // Real tokens only: the units minus the unused tail of the last one and the head of
      // the first one (windowed layers start mid-unit).
      int64_t first = begin;
      if (lt.window_tokens > 0) {
        first = std::max(first, lt.chunked_local ? RoundDown(end - 1, lt.window_tokens)
                                                 : std::max<int64_t>(0, end - lt.window_tokens + 1));
      }
      c.payload_bytes += (end - first) * (bytes_per_unit / lt.unit_tokens);
    }
    if (lt.save_bytes_per_prefill_block > 0) {
      const int64_t rank_bytes = lt.PrefillBlocks(begin, end) * lt.save_bytes_per_prefill_block;
      c.save_relayout_rank_bytes += rank_bytes;
      c.save_relayout_bytes += rank_bytes * prefill_tp;
      ++c.save_relayout_kernels;
    }
    if (lt.receive_bytes_per_unit > 0) {
      const int64_t rank_bytes = u * lt.receive_bytes_per_unit;
      c.receive_relayout_rank_bytes += rank_bytes;
      c.receive_relayout_bytes += rank_bytes * decode_tp;
      ++c.receive_relayout_kernels;
    }
  }
  for (int64_t d : rank_desc) c.max_rank_descriptors = std::max(c.max_rank_descriptors, d);
  return c;
}

std::string KvTransferPlan::Describe() const {
  // One line per run of consecutive layers that move the same way.
  std::ostringstream os;
  os << "TP " << prefill_tp << " -> " << decode_tp << (cross_layer ? ", cross-layer slab" : "")
     << "\n";
  auto line = [](const KvLayerTransfer& lt) {
    std::ostringstream s;
    s << LayerKindName(lt.kind) << ": ";
    if (lt.unit_tokens == 0) {
      s << "state block 1:1";
    } else {
      s << "unit " << lt.unit_tokens << " tokens (kernel blocks " << lt.prefill_block_tokens
        << " -> " << lt.decode_block_tokens << ")";
      if (lt.split_ratio > 1) s << ", split x" << lt.split_ratio << " on save";
      if (lt.permute_on_save) s << ", NHD->HND on save";
      if (lt.merge_ratio > 1) s << ", merge x" << lt.merge_ratio << " on receive";
      if (lt.relayout_on_receive) s << ", re-layout on receive";
    }
    std::map<int64_t, int64_t> sources;
    for (const auto& p : lt.pairs) ++sources[p.decode_rank];
    int64_t most = 0;
    for (const auto& [d, n] : sources) most = std::max(most, n);
    if (!lt.pairs.empty()) {
      s << "; " << most << " source rank" << (most == 1 ? "" : "s") << " per decode rank, "
        << lt.pairs[0].descriptors_per_unit << " desc x " << lt.pairs[0].bytes_per_unit
        << " B per pair per unit";
    }
    return s.str();
  };
  // Layers that move the same way share a line (in order of first appearance).
  std::vector<std::pair<std::string, std::vector<std::string>>> kinds;
  for (const auto& lt : layers) {
    const std::string l = line(lt);
    auto it = std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) { return k.first == l; });
    if (it == kinds.end()) {
      kinds.push_back({l, {}});
      it = kinds.end() - 1;
    }
    it->second.push_back(lt.name);
  }
  for (const auto& [l, names] : kinds) {
    os << "  " << names.size() << (names.size() == 1 ? " layer  " : " layers ") << l << " ("
       << names.front();
    if (names.size() > 1) os << (names.size() > 2 ? " ... " : " ") << names.back();
    os << ")\n";
  }
  for (const auto& n : notes) os << "  note: " << n << "\n";
  return os.str();
}

Result<KvTransferPlan> PlanKvTransfer(const ModelSpec& target, const ModelSpec* draft,
                                      const KvCachePlan& prefill, const KvCachePlan& decode,
                                      const KvTransferOptions& options) {
  if (prefill.layers.size() != decode.layers.size()) {
    return Mismatch("prefill plan has " + std::to_string(prefill.layers.size()) +
                    " layers and decode plan " + std::to_string(decode.layers.size()) +
                    "; both pools must serve the same model");
  }
  KvTransferPlan plan;
  plan.prefill_tp = prefill.config.tp;
  plan.decode_tp = decode.config.tp;
  plan.num_decode_groups = static_cast<int64_t>(decode.groups.size());
  const int64_t tp_p = plan.prefill_tp;
  const int64_t tp_d = plan.decode_tp;
  for (size_t i = 0; i < prefill.layers.size(); ++i) {
    if (prefill.layers[i].name != decode.layers[i].name ||
        prefill.layers[i].spec.kind != decode.layers[i].spec.kind) {
      return Mismatch("layer " + std::to_string(i) + " is " + prefill.layers[i].name + " (" +
                      std::string(LayerKindName(prefill.layers[i].spec.kind)) +
                      ") on prefill and " + decode.layers[i].name + " (" +
                      std::string(LayerKindName(decode.layers[i].spec.kind)) +
                      ") on decode; both pools must serve the same model");
    }
  }

  Status err;
  // --- Cross-layer slabs (#30207): one descriptor per block for every layer at once. -------
  if (prefill.cross_layer || decode.cross_layer) {
    bool same = prefill.cross_layer && decode.cross_layer && tp_p == tp_d &&
                prefill.config.layout == decode.config.layout &&
                prefill.kernel_block_size == decode.kernel_block_size &&
                prefill.block_bytes == decode.block_bytes;
    for (const auto& l : prefill.layers) {
      same = same && l.spec.is_attention() && l.spec == prefill.layers[0].spec;
    }
    if (same && !prefill.layers.empty()) {
      KvLayerTransfer lt;
      lt.name = "slab";
      lt.kind = prefill.layers[0].spec.kind;
      KvLayout slab = prefill.LayoutForLayer(0);
      slab.num_layers = static_cast<int64_t>(prefill.layers.size());
      slab.base_offset = 0;
      lt.unit_tokens = slab.block_tokens;
      lt.prefill_block_tokens = lt.decode_block_tokens = slab.block_tokens;
      const KvRuns r = CountBlockRuns(slab, 0, slab.num_heads, true);
      for (int64_t d = 0; d < tp_d; ++d) {
        lt.pairs.push_back({d, d, slab.num_heads, r.runs, r.runs * r.run_bytes});
      }
      plan.cross_layer = true;
      plan.layers.push_back(std::move(lt));
      return plan;
    }
    KvLayerTransfer probe;
    probe.name = "*";
    if (!Refuse(options, probe,
                "cross-layer blocks (#30207) need the same cross-layer layout, kernel block, "
                "slab size and TP on both sides, and attention-only models",
                &err)) {
      return err;
    }
    plan.notes.push_back(probe.notes.back());
  }

  // --- Per layer. ---------------------------------------------------------------------------
  for (size_t i = 0; i < prefill.layers.size(); ++i) {
    const PlannedLayer& pl = prefill.layers[i];
    const PlannedLayer& dl = decode.layers[i];
    const KvCacheSpec& sp = pl.spec;
    const KvCacheSpec& sd = dl.spec;
    KvLayerTransfer lt;
    lt.layer = static_cast<int>(i);
    lt.name = pl.name;
    lt.kind = sp.kind;
    lt.decode_group = dl.group;

    if (sp.kind == LayerKind::kMamba) {
      // State blocks map 1:1 whatever the block sizes (#49612). Shards: P_TP > D_TP reads
      // P_TP/D_TP shards per decode rank (#49297).
      const int64_t states = static_cast<int64_t>(sd.mamba_states.size());
      if (tp_p % tp_d != 0 && tp_d % tp_p != 0) {
        return Unsupported("layer " + lt.name + ": Mamba state cannot be resharded from TP " +
                           std::to_string(tp_p) + " to TP " + std::to_string(tp_d) +
                           " (neither divides the other)");
      }
      if (tp_d > tp_p &&
          !Refuse(options, lt,
                  "decode TP > prefill TP needs slices of Mamba state shards; vLLM's "
                  "hetero-TP Mamba path (#49297) covers prefill TP > decode TP only",
                  &err)) {
        return err;
      }
      if (tp_p >= tp_d) {
        const int64_t f = tp_p / tp_d;
        for (int64_t d = 0; d < tp_d; ++d) {
          for (int64_t j = 0; j < f; ++j) {
            lt.pairs.push_back({d * f + j, d, 0, states, sp.mamba_state_bytes()});
          }
        }
        // Shards of a state whose TP-split axis is not outermost (the conv state's channels)
        // must be interleaved after receipt; SSM head shards land in place.
        if (f > 1) {
          for (const auto& st : sd.mamba_states) {
            if (st.name == "conv") lt.receive_bytes_per_unit += st.bytes();
          }
          lt.relayout_on_receive = lt.receive_bytes_per_unit > 0;
        }
      } else {
        const int64_t f = tp_d / tp_p;
        for (int64_t d = 0; d < tp_d; ++d) {
          lt.pairs.push_back({d / f, d, 0, states, sd.mamba_state_bytes()});
        }
      }
      plan.layers.push_back(std::move(lt));
      continue;
    }

    // Attention.
    const LayerSpec* src = SourceLayer(target, draft, pl);
    if (!src) return Mismatch("layer " + lt.name + " is not in the model");
    const int64_t heads = sp.kind == LayerKind::kMla ? 1 : src->num_kv_heads;
    const int64_t slots_per_head = sp.num_head_slots() / std::max<int64_t>(1, sp.num_kv_heads);
    if (sp.content_bytes() != sd.content_bytes() ||
        sp.num_head_slots() != slots_per_head * RankHeads(heads, tp_p, 0).count) {
      return Mismatch("layer " + lt.name + ": prefill and decode store different KV rows (" +
                      std::to_string(sp.content_bytes()) + " vs " +
                      std::to_string(sd.content_bytes()) + " B per head and token)");
    }
    if (sp.kind == LayerKind::kSlidingWindow) lt.window_tokens = sp.sliding_window;
    if (sp.kind == LayerKind::kChunkedLocal) {
      lt.window_tokens = sp.attention_chunk_size;
      lt.chunked_local = true;
    }
    const KvLayout lp = prefill.LayoutForLayer(static_cast<int>(i));
    const KvLayout ld = decode.LayoutForLayer(static_cast<int>(i));
    const int64_t np = lp.block_tokens;
    const int64_t nd = ld.block_tokens;
    lt.prefill_block_tokens = np;
    lt.decode_block_tokens = nd;
    if (np % nd != 0 && nd % np != 0) {
      return Unsupported("layer " + lt.name + ": kernel blocks of " + std::to_string(np) +
                         " (prefill) and " + std::to_string(nd) +
                         " (decode) tokens are not multiples of each other; NIXL needs an "
                         "integer block-size ratio");
    }

    const std::vector<HeadSource> srcs = AttentionSources(heads, tp_p, tp_d);
    const int64_t heads_p = RankHeads(heads, tp_p, 0).count;
    bool slice = false;
    std::map<int64_t, int> sources;
    for (const auto& s : srcs) {
      slice = slice || s.count < heads_p;
      ++sources[s.decode_rank];
    }
    bool chunks = false;
    for (const auto& [d, n] : sources) chunks = chunks || n > 1;

    const bool tm_p = TokenMajor(lp.order);
    const bool tm_d = TokenMajor(ld.order);
    // NHD on the wire works only when each decode block comes whole from one prefill rank and
    // the decoder is NHD too: anything else needs per-head runs, which need HND.
    const bool need_hnd = tm_p && (slice || chunks || !tm_d);
    const bool split = np > nd;
    const bool save = split || need_hnd;
    KvLayout wire = lp;
    if (save) {
      std::string what = split ? "prefill kernel block " + std::to_string(np) + " > decode " +
                                     std::to_string(nd)
                               : std::string();
      if (need_hnd) {
        what += std::string(what.empty() ? "" : " and ") + "prefill NHD" +
                (slice ? " with decode TP > prefill TP (head slices)"
                       : chunks ? " with prefill TP > decode TP (head chunks)"
                                : " to decode HND");
      }
      if (!options.save_side_postprocess &&
          !Refuse(options, lt,
                  what + ": vLLM only merges smaller remote blocks and permutes HND->NHD on "
                         "receive; PR #30448's split/permute on save (unmerged) is off "
                         "(cluster.transfer.save_side_postprocess)",
                  &err)) {
        return err;
      }
      if (prefill.config.enable_prefix_caching &&
          !Refuse(options, lt,
                  what + ": PR #30448 disables the save-side post-process when prefix caching "
                         "is on (it rewrites cached blocks in place)",
                  &err)) {
        return err;
      }
      if (need_hnd && !options.enable_permute_local_kv &&
          !Refuse(options, lt, "layout permute needs enable_permute_local_kv", &err)) {
        return err;
      }
      wire.order = HeadMajor(lp.order);
      if (split) {
        lt.split_ratio = np / nd;
        wire.block_tokens = nd;
        wire.num_blocks = lp.num_blocks * lt.split_ratio;
        wire.block_stride = 0;
        wire.kernel_split = 1;
      }
      lt.permute_on_save = tm_p;
      lt.save_bytes_per_prefill_block = sp.num_head_slots() * np * lp.content_bytes();
    }
    lt.unit_tokens = wire.block_tokens;
    lt.merge_ratio = nd > wire.block_tokens ? nd / wire.block_tokens : 1;
    const bool tm_w = TokenMajor(wire.order);
    // What lands in a decode block is r units, each the source ranks' head runs in wire
    // order; it already is the decode layout only for one-unit HND → HND, or whole NHD
    // blocks into NHD (which concatenate).
    lt.relayout_on_receive = tm_w ? false : (lt.merge_ratio > 1 || tm_d);
    if (!tm_w && tm_d && !options.enable_permute_local_kv &&
        !Refuse(options, lt, "remote HND to local NHD needs enable_permute_local_kv", &err)) {
      return err;
    }
    for (const auto& s : srcs) {
      const KvRuns r =
          CountBlockRuns(wire, s.local_begin * slots_per_head, s.count * slots_per_head, false);
      lt.pairs.push_back(
          {s.prefill_rank, s.decode_rank, s.count * slots_per_head, r.runs, r.runs * r.run_bytes});
    }
    if (lt.relayout_on_receive) {
      lt.receive_bytes_per_unit = sd.num_head_slots() * lt.unit_tokens * ld.content_bytes();
    }
    plan.layers.push_back(std::move(lt));
  }
  for (const auto& lt : plan.layers) {
    for (const auto& n : lt.notes) {
      if (std::find(plan.notes.begin(), plan.notes.end(), n) == plan.notes.end()) {
        plan.notes.push_back(n);
      }
    }
  }
  return plan;
}

int64_t KvTransferTimeModel::PostingNs(const KvTransferCost& c) const {
  return static_cast<int64_t>(
      std::ceil(static_cast<double>(c.max_rank_descriptors) * per_descriptor_ns));
}

int64_t KvTransferTimeModel::WireNs(int64_t bytes, double bytes_per_ns) {
  if (bytes <= 0) return 0;
  KVSIM_CHECK(bytes_per_ns > 0);
  return static_cast<int64_t>(std::ceil(static_cast<double>(bytes) / bytes_per_ns));
}

int64_t KvTransferTimeModel::TransferNs(const KvTransferCost& c, double path_bytes_per_ns,
                                        int64_t latency_ns) const {
  if (c.descriptors == 0) return 0;
  const int64_t post = PostingNs(c);
  const int64_t wire = WireNs(c.bytes, path_bytes_per_ns);
  return (overlap_posting ? std::max(post, wire) : post + wire) + latency_ns;
}

int64_t KvTransferTimeModel::SaveRelayoutNs(const KvTransferCost& c) const {
  if (c.save_relayout_kernels == 0) return 0;
  return static_cast<int64_t>(std::ceil(
      static_cast<double>(c.save_relayout_kernels) * relayout_launch_ns +
      2.0 * static_cast<double>(c.save_relayout_rank_bytes) / relayout_bytes_per_ns));
}

int64_t KvTransferTimeModel::ReceiveRelayoutNs(const KvTransferCost& c) const {
  if (c.receive_relayout_kernels == 0) return 0;
  return static_cast<int64_t>(std::ceil(
      static_cast<double>(c.receive_relayout_kernels) * relayout_launch_ns +
      2.0 * static_cast<double>(c.receive_relayout_rank_bytes) / relayout_bytes_per_ns));
}

}  // namespace kvsim
