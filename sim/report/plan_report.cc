#include "sim/report/plan_report.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/int_math.h"
#include "core/vllm_semantics.h"

namespace kvsim {

std::string WithCommas(int64_t v) {
  std::string s = std::to_string(v < 0 ? -v : v);
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string HumanBytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024.0 && u < 4) {
    b /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", b) : fmt::format("{:.2f} {}", b, units[u]);
}

std::string LayerList(const KvCachePlan& plan, const std::vector<int>& layers, size_t max_shown) {
  std::string s;
  for (size_t i = 0; i < layers.size() && i < max_shown; ++i) {
    if (i) s += ' ';
    s += plan.layers[layers[i]].name;
  }
  if (layers.size() > max_shown) s += fmt::format(" … ({} layers)", layers.size());
  return s;
}

std::string DescribeLayout(const KvLayout& l) {
  int ord[KvLayout::kNumAxes];
  l.AxisOrder(ord);
  int64_t st[KvLayout::kNumAxes];
  l.Strides(st);
  static const char* kAxis = "SLBHNC";
  std::string dims, extents, strides;
  for (int i = 0; i < KvLayout::kNumAxes; ++i) {
    const int a = ord[i];
    if (a == KvLayout::kS && l.kv_split == KvSplit::kPackedInContent) continue;
    dims += kAxis[a];
    extents += (extents.empty() ? "" : ",") + std::to_string(l.Extent(a));
    strides += (strides.empty() ? "" : ",") + std::to_string(st[a]);
  }
  std::string s = fmt::format("{} [{}] strides [{}] B", dims, extents, strides);
  if (l.kv_split != KvSplit::kPackedInContent) s += fmt::format(" {}", KvSplitName(l.kv_split));
  if (l.base_offset) s += fmt::format(" +{} B", l.base_offset);
  if (l.kernel_split > 1) s += fmt::format(", {} kernel blocks per manager block", l.kernel_split);
  return s;
}

std::string DescribePage(const KvCachePlan& plan, int layer) {
  const PlannedLayer& pl = plan.layers[layer];
  const KvCacheSpec& s = pl.spec;
  const int64_t page = s.page_bytes();
  auto range = [](int64_t a, int64_t b) {
    return fmt::format("[{}, {})", WithCommas(a), WithCommas(b));
  };
  std::string out;
  int64_t end = 0;
  if (s.kind == LayerKind::kMamba) {
    // States back to back in declaration order, padding at the end (reference §1.3).
    for (const auto& st : s.mamba_states) {
      std::string shape;
      for (int64_t d : st.shape) shape += (shape.empty() ? "" : "×") + std::to_string(d);
      out += fmt::format("{}{} {} {} {}", out.empty() ? "" : " | ", st.name, shape,
                         DTypeName(st.dtype), range(end, end + st.bytes()));
      end += st.bytes();
    }
  } else {
    // Pack members one after another, inside each kernel block when the block is split
    // (PR #35703: [kernel block 0: layer 0 | layer 1 | ...][kernel block 1: ...]).
    const KvLayout l = plan.LayoutForLayer(layer);
    const int64_t split = l.kernel_split;
    const int64_t real = s.real_page_bytes() / split;
    const int64_t layer_page = s.layer_page_bytes() / split;
    if (split > 1) {
      out += fmt::format("{} kernel blocks of {} B, each ", split, WithCommas(page / split));
    }
    for (int64_t m = 0; m < s.pack_size; ++m) {
      const std::string who = s.pack_size > 1 ? fmt::format("pack member {}", m) : "K/V";
      out += fmt::format("{}{} {}", m == 0 ? "" : " | ", who,
                         range(m * layer_page, m * layer_page + real));
      if (layer_page > real) {
        out += fmt::format(" | padding {}", range(m * layer_page + real, (m + 1) * layer_page));
      }
    }
    end = s.pack_size * layer_page * split;
  }
  if (end < page) out += fmt::format(" | padding {}", range(end, page));
  return fmt::format("{} B = {}", WithCommas(page), out);
}

namespace {

const char* ShapeName(PlanShape s) {
  switch (s) {
    case PlanShape::kNoKv: return "no KV (attention-free)";
    case PlanShape::kSingleGroup: return "one group (uniform spec)";
    case PlanShape::kUniformType: return "one group (same type, different pages)";
    case PlanShape::kHybrid: return "hybrid (groups share slot tensors and one block pool)";
  }
  return "?";
}

std::string Pct(double f) { return fmt::format("{:.2f}%", 100.0 * f); }

}  // namespace

std::string FormatPlan(const Scenario& sc, const KvCachePlan& plan) {
  const PlannerConfig& c = plan.config;
  std::string o;
  o += fmt::format("KV cache plan: {} — {}{}, TP {}, {} backend, layout {}, vLLM {}\n", sc.name,
                   sc.model.name, sc.draft ? " + " + sc.draft->name : "", c.tp,
                   AttentionBackendName(c.backend), KvOrderName(c.layout),
                   VllmSemanticsName(c.semantics));
  o += fmt::format("  shape:            {}\n", ShapeName(plan.shape));
  if (plan.shape == PlanShape::kNoKv) return o;
  if (plan.attn_block_size > 0) {
    o += fmt::format("  attention block:  {} tokens", plan.attn_block_size);
    if (plan.attn_token_bytes > 0) {
      o += fmt::format("  (hybrid: covers the Mamba page M = {} B at a1 = {} B/token{})",
                       WithCommas(plan.mamba_real_page_bytes), WithCommas(plan.attn_token_bytes),
                       c.attn_pack_size > 1 ? fmt::format(" incl. pack {}", c.attn_pack_size)
                                            : std::string());
    }
    o += "\n";
    o += fmt::format("  kernel block:     {} tokens ({} per manager block)\n",
                     plan.kernel_block_size,
                     plan.kernel_block_size ? plan.attn_block_size / plan.kernel_block_size : 0);
  }
  if (plan.mamba_block_size > 0) {
    o += fmt::format("  mamba:            mode {}, state block {} tokens, page {} B", 
                     MambaCacheModeName(plan.mamba_mode), plan.mamba_block_size,
                     WithCommas(plan.mamba_real_page_bytes));
    if (plan.mamba_padded_page_bytes > 0) {
      o += fmt::format(" padded to {} B (+{})", WithCommas(plan.mamba_padded_page_bytes),
                       Pct(static_cast<double>(plan.mamba_padded_page_bytes -
                                               plan.mamba_real_page_bytes) /
                           static_cast<double>(plan.mamba_real_page_bytes)));
    }
    o += "\n";
  }
  o += fmt::format("\n  groups ({}):\n", plan.groups.size());
  o += fmt::format("    {:>2}  {:<15} {:>7} {:>13} {:>13} {:>8}  {}\n", "#", "kind", "block",
                   "page B", "real page B", "pad", "layers");
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    const auto& grp = plan.groups[g];
    o += fmt::format("    {:>2}  {:<15} {:>7} {:>13} {:>13} {:>8}  {}\n", g,
                     LayerKindName(grp.kind), grp.block_size, WithCommas(grp.page_bytes),
                     WithCommas(grp.real_page_bytes),
                     Pct(static_cast<double>(plan.padding_bytes_per_block(static_cast<int>(g))) /
                         static_cast<double>(plan.block_bytes)),
                     LayerList(plan, grp.layers, 8));
  }
  o += fmt::format("\n  tensors ({}{}):\n", plan.tensors.size(),
                   plan.cross_layer ? ", one cross-layer slab" : "");
  for (size_t t = 0; t < plan.tensors.size() && t < 12; ++t) {
    o += fmt::format("    {:>2}  {:>12}  shared by {}\n", t,
                     HumanBytes(static_cast<double>(plan.tensors[t].size_bytes)),
                     LayerList(plan, plan.tensors[t].shared_by, 10));
  }
  if (plan.tensors.size() > 12) o += fmt::format("    … {} more\n", plan.tensors.size() - 12);
  o += "\n";
  o += fmt::format("  num_blocks:       {} ({} usable; block 0 is the null block)\n",
                   WithCommas(plan.num_blocks), WithCommas(plan.usable_blocks()));
  o += fmt::format("  bytes per block:  {} B over all tensors; total {}\n",
                   WithCommas(plan.block_bytes), HumanBytes(static_cast<double>(plan.total_bytes())));
  o += fmt::format("  padding:          {} of KV memory on average over groups\n",
                   Pct(plan.padding_fraction()));
  if (plan.max_model_len > 0) {
    o += fmt::format(
        "  capacity:         {} tokens = {:.2f} requests of max_model_len {} ({} blocks each)\n",
        WithCommas(plan.kv_cache_size_tokens), plan.max_concurrency,
        WithCommas(plan.max_model_len), WithCommas(plan.blocks_per_request));
  }
  o += fmt::format("  classic capacity: {} tokens (num_blocks / groups × smallest block)\n",
                   WithCommas(plan.classic_token_capacity));
  // One layout per distinct group kind.
  // One layout per kind of group (groups with the same spec read their pages the same way).
  o += "\n  page layouts (bytes of one block's page, and the strides of the layer's view):\n";
  std::vector<bool> shown(plan.groups.size(), false);
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    if (shown[g]) continue;
    std::vector<size_t> same;
    for (size_t h = g; h < plan.groups.size(); ++h) {
      if (!shown[h] && plan.groups[h].spec == plan.groups[g].spec) {
        shown[h] = true;
        same.push_back(h);
      }
    }
    const int li = plan.groups[g].layers[0];
    const PlannedLayer& pl = plan.layers[li];
    std::string which = same.size() == 1 ? fmt::format("group {}", g)
                                         : fmt::format("groups {}–{}", same.front(), same.back());
    if (same.size() > 1 && same.back() - same.front() + 1 != same.size()) {
      which = "groups";
      for (size_t h : same) which += fmt::format(" {}", h);
    }
    o += fmt::format("    {} ({}, e.g. {}): {}\n", which, LayerKindName(pl.spec.kind), pl.name,
                     DescribePage(plan, li));
    if (pl.spec.is_attention()) {
      o += fmt::format("      view: {}\n", DescribeLayout(plan.LayoutForLayer(li)));
    }
  }
  for (const auto& w : plan.warnings) o += "  warning: " + w + "\n";
  return o;
}

nlohmann::json PlanToJson(const Scenario& sc, const KvCachePlan& plan) {
  using nlohmann::json;
  json j;
  j["scenario"] = sc.name;
  j["model"] = sc.model.name;
  if (sc.draft) j["draft"] = sc.draft->name;
  j["tp"] = plan.config.tp;
  j["attn_pack_size"] = plan.config.attn_pack_size;
  j["attn_block_size"] = plan.attn_block_size;
  j["mamba_block_size"] = plan.mamba_block_size;
  j["mamba_cache_mode"] = std::string(MambaCacheModeName(plan.mamba_mode));
  j["kernel_block_size"] = plan.kernel_block_size;
  j["mamba_page_bytes"] = plan.mamba_real_page_bytes;
  j["mamba_padded_page_bytes"] = plan.mamba_padded_page_bytes;
  j["page_bytes"] = plan.page_bytes;
  j["block_bytes"] = plan.block_bytes;
  j["group_size"] = plan.group_size;
  j["num_blocks"] = plan.num_blocks;
  j["total_bytes"] = plan.total_bytes();
  j["padding_fraction"] = plan.padding_fraction();
  j["kv_cache_size_tokens"] = plan.kv_cache_size_tokens;
  j["max_concurrency"] = plan.max_concurrency;
  j["classic_token_capacity"] = plan.classic_token_capacity;
  j["cross_layer"] = plan.cross_layer;
  json groups = json::array();
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    const auto& grp = plan.groups[g];
    json names = json::array();
    for (int li : grp.layers) names.push_back(plan.layers[li].name);
    json jg = {{"kind", std::string(LayerKindName(grp.kind))},
               {"layers", names},
               {"block_size", grp.block_size},
               {"page_bytes", grp.page_bytes},
               {"real_page_bytes", grp.real_page_bytes},
               {"pack_size", grp.spec.pack_size},
               {"padding_bytes_per_block", plan.padding_bytes_per_block(static_cast<int>(g))}};
    if (grp.kind == LayerKind::kMamba) {
      // Where each state lies in the page (back to back; padding after the last).
      json states = json::array();
      int64_t off = 0;
      for (const auto& st : grp.spec.mamba_states) {
        states.push_back({{"name", st.name},
                          {"shape", st.shape},
                          {"dtype", std::string(DTypeName(st.dtype))},
                          {"offset", off},
                          {"bytes", st.bytes()}});
        off += st.bytes();
      }
      jg["states"] = states;
    }
    groups.push_back(jg);
  }
  j["groups"] = groups;
  json tensors = json::array();
  for (const auto& t : plan.tensors) {
    json names = json::array();
    for (int li : t.shared_by) names.push_back(plan.layers[li].name);
    tensors.push_back({{"size_bytes", t.size_bytes}, {"shared_by", names}});
  }
  j["tensors"] = tensors;
  json layouts = json::array();
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    const int li = plan.groups[g].layers[0];
    const KvLayout l = plan.LayoutForLayer(li);
    int64_t st[KvLayout::kNumAxes];
    l.Strides(st);
    layouts.push_back({{"layer", plan.layers[li].name},
                       {"order", KvOrderName(l.order)},
                       {"kv_split", KvSplitName(l.kv_split)},
                       {"extents", {l.num_layers, l.num_blocks, l.num_heads, l.block_tokens,
                                    l.content_bytes()}},
                       {"strides", {st[KvLayout::kL], st[KvLayout::kB], st[KvLayout::kH],
                                    st[KvLayout::kN], st[KvLayout::kC]}},
                       {"base_offset", l.base_offset},
                       {"kernel_split", l.kernel_split}});
  }
  j["layouts"] = layouts;
  j["warnings"] = plan.warnings;
  return j;
}

}  // namespace kvsim
