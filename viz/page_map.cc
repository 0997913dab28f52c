#include "viz/page_map.h"

#include <algorithm>

#include "sim/report/plan_report.h"

namespace kvsim::viz {

const char* RegionName(Region r) {
  switch (r) {
    case Region::kPadding:
      return "padding";
    case Region::kKey:
      return "K";
    case Region::kValue:
      return "V";
    case Region::kConvState:
      return "conv state";
    case Region::kSsmState:
      return "SSM state";
    case Region::kOtherState:
      return "state";
  }
  return "?";
}

namespace {

Region StateRegion(const std::string& name) {
  if (name == "conv") return Region::kConvState;
  if (name == "ssm") return Region::kSsmState;
  return Region::kOtherState;
}

Result<std::vector<PageOwner>> OwnersOf(const KvCachePlan& plan, PageSelection& sel,
                                        std::string* title) {
  std::vector<PageOwner> owners;
  auto fill_states = [&](PageOwner& o, const KvCacheSpec& spec) {
    for (const auto& st : spec.mamba_states) {
      o.state_names.push_back(st.name);
      o.state_bytes.push_back(st.bytes());
    }
  };
  if (plan.cross_layer) {
    // One slab per block id. Layers of different groups share slab regions (a block id
    // belongs to one group at a time), so the page is read as the selected group's layers,
    // each at its own slab offset.
    sel.tensor = 0;
    if (sel.group < 0) sel.group = 0;
    if (sel.group >= static_cast<int>(plan.groups.size())) {
      return Status::Error("bad_selection", "group " + std::to_string(sel.group) +
                                                " does not exist (the plan has " +
                                                std::to_string(plan.groups.size()) + ")");
    }
    const KvCacheGroup& g = plan.groups[sel.group];
    for (int li : g.layers) {
      const PlannedLayer& pl = plan.layers[li];
      PageOwner o;
      o.layout = plan.LayoutForLayer(li);
      o.kind = pl.spec.kind;
      o.slot_layers = {li};
      o.slot_names = {pl.name};
      fill_states(o, pl.spec);
      owners.push_back(std::move(o));
    }
    *title = "cross-layer slab · block " + std::to_string(sel.block) + " · group " +
             std::to_string(sel.group) + " (" + std::string(LayerKindName(g.kind)) + ") · " +
             std::to_string(g.layers.size()) + " layers";
    return owners;
  }
  if (sel.tensor < 0 || sel.tensor >= static_cast<int>(plan.tensors.size())) {
    return Status::Error("bad_selection", "tensor " + std::to_string(sel.tensor) +
                                              " does not exist (the plan has " +
                                              std::to_string(plan.tensors.size()) + ")");
  }
  if (sel.group < 0) {
    for (size_t g = 0; g < plan.groups.size() && sel.group < 0; ++g) {
      for (int li : plan.groups[g].layers) {
        if (plan.layers[li].slot == sel.tensor) {
          sel.group = static_cast<int>(g);
          break;
        }
      }
    }
  }
  if (sel.group < 0 || sel.group >= static_cast<int>(plan.groups.size())) {
    return Status::Error("bad_selection",
                         "no group keeps a layer on tensor " + std::to_string(sel.tensor));
  }
  const KvCacheGroup& g = plan.groups[sel.group];
  PageOwner o;
  o.layout = plan.LayoutForSlot(sel.tensor, sel.group);
  o.kind = g.kind;
  o.slot_layers.assign(static_cast<size_t>(std::max<int64_t>(1, o.layout.num_layers)), -1);
  o.slot_names.assign(o.slot_layers.size(), "");
  std::string names;
  for (int li : g.layers) {
    const PlannedLayer& pl = plan.layers[li];
    if (pl.slot != sel.tensor) continue;
    const size_t slot = o.layout.num_layers > 1 ? static_cast<size_t>(pl.pack_member) : 0;
    if (slot < o.slot_layers.size()) {
      o.slot_layers[slot] = li;
      o.slot_names[slot] = pl.name;
    }
    if (o.state_names.empty()) fill_states(o, pl.spec);
    names += (names.empty() ? "" : " ") + pl.name;
  }
  if (names.empty()) {
    return Status::Error("bad_selection", "group " + std::to_string(sel.group) +
                                              " keeps no layer on tensor " +
                                              std::to_string(sel.tensor));
  }
  *title = "tensor " + std::to_string(sel.tensor) + " · block " + std::to_string(sel.block) +
           " · group " + std::to_string(sel.group) + " (" + std::string(LayerKindName(g.kind)) +
           ") · " + names;
  owners.push_back(std::move(o));
  return owners;
}

}  // namespace

Result<PageMap> PageMap::Build(const KvCachePlan& plan, const PageSelection& selection) {
  if (plan.layers.empty() || plan.num_blocks <= 0) {
    return Status::Error("no_kv", "this plan has no KV cache pages (attention-free model)");
  }
  PageMap m;
  m.sel_ = selection;
  if (m.sel_.block < 0 || m.sel_.block >= plan.num_blocks) {
    return Status::Error("bad_selection", "block " + std::to_string(m.sel_.block) +
                                              " is outside [0, " + std::to_string(plan.num_blocks) +
                                              ")");
  }
  auto owners = OwnersOf(plan, m.sel_, &m.title_);
  if (!owners.ok()) return owners.status();
  m.owners_ = std::move(owners.value());
  for (const PageOwner& o : m.owners_) {
    if (o.layout.kv_split == KvSplit::kKvFirstTensor) {
      return Status::Error("unsupported",
                           "legacy K/V-first tensors keep a block's K and V pages in two halves "
                           "of the tensor; the page map draws contiguous pages only");
    }
  }

  // Data segments, straight from KvLayout::offset: the first and last byte of each layer
  // slot's (or Mamba state's) data in every kernel block of this manager block.
  const int64_t block = m.sel_.block;
  for (int oi = 0; oi < static_cast<int>(m.owners_.size()); ++oi) {
    const PageOwner& o = m.owners_[oi];
    const KvLayout& l = o.layout;
    const int64_t kb0 = block * l.kernel_split;
    for (size_t s = 0; s < o.slot_layers.size(); ++s) {
      if (o.slot_layers[s] < 0) continue;
      const std::string& name = o.slot_names[s];
      if (o.kind == LayerKind::kMamba) {
        int64_t at = 0;
        for (size_t st = 0; st < o.state_bytes.size(); ++st) {
          PageSegment seg;
          seg.range = {l.offset(0, kb0, 0, 0, at),
                       l.offset(0, kb0, 0, 0, at + o.state_bytes[st] - 1) + 1};
          seg.region = StateRegion(o.state_names[st]);
          seg.layer = o.slot_layers[s];
          seg.label = name + " " + o.state_names[st];
          m.segments_.push_back(seg);
          at += o.state_bytes[st];
        }
        continue;
      }
      for (int64_t kb = kb0; kb < kb0 + l.kernel_split; ++kb) {
        const int64_t s64 = static_cast<int64_t>(s);
        PageSegment seg;
        seg.range = {
            l.offset(s64, kb, 0, 0, 0),
            l.offset(s64, kb, l.num_heads - 1, l.block_tokens - 1, l.content_bytes() - 1) + 1};
        seg.region = Region::kKey;
        seg.layer = o.slot_layers[s];
        seg.label = name + (l.v_bytes > 0 ? " K+V" : " K");
        if (!m.segments_.empty() && m.segments_.back().layer == seg.layer &&
            m.segments_.back().range.end == seg.range.begin) {
          m.segments_.back().range.end = seg.range.end;
        } else {
          m.segments_.push_back(seg);
        }
      }
    }
    if (m.manager_block_tokens_ == 0 && o.kind != LayerKind::kMamba) {
      m.manager_block_tokens_ = l.manager_block_tokens();
      if (l.block_tokens > 1) {
        m.token_row_bytes_ = l.offset(0, kb0, 0, 1, 0) - l.offset(0, kb0, 0, 0, 0);
      }
    }
  }
  // Remember which owner each data segment came from (for Locate).
  const KvLayout& first = m.owners_.front().layout;
  m.page_.begin = first.offset(0, block * first.kernel_split, 0, 0, 0) - first.base_offset;
  m.page_.end = m.page_.begin + first.manager_page_bytes();
  std::sort(m.segments_.begin(), m.segments_.end(), [](const PageSegment& a, const PageSegment& b) {
    return a.range.begin < b.range.begin;
  });
  std::vector<PageSegment> all;
  int64_t at = m.page_.begin;
  for (const PageSegment& s : m.segments_) {
    if (s.range.begin > at) all.push_back({{at, s.range.begin}, Region::kPadding, -1, "padding"});
    all.push_back(s);
    m.data_bytes_ += s.range.size();
    at = std::max(at, s.range.end);
  }
  if (at < m.page_.end) all.push_back({{at, m.page_.end}, Region::kPadding, -1, "padding"});
  m.segments_ = std::move(all);
  return m;
}

bool PageMap::has_layer(int layer) const {
  for (const PageOwner& o : owners_) {
    for (int l : o.slot_layers) {
      if (l == layer) return true;
    }
  }
  return false;
}

ByteInfo PageMap::Locate(int64_t byte) const {
  ByteInfo info;
  if (byte < page_.begin || byte >= page_.end) return info;
  // The segment holding the byte says which layer (and so which owner) to ask.
  auto it = std::upper_bound(segments_.begin(), segments_.end(), byte,
                             [](int64_t b, const PageSegment& s) { return b < s.range.begin; });
  if (it == segments_.begin()) return info;
  const PageSegment& seg = *std::prev(it);
  if (seg.layer < 0 || byte >= seg.range.end) return info;
  for (int oi = 0; oi < static_cast<int>(owners_.size()); ++oi) {
    const PageOwner& o = owners_[oi];
    const auto slot = std::find(o.slot_layers.begin(), o.slot_layers.end(), seg.layer);
    if (slot == o.slot_layers.end()) continue;
    KvCoord c;
    if (!o.layout.Decode(byte, &c)) return info;
    const int64_t kb0 = sel_.block * o.layout.kernel_split;
    if (c.block < kb0 || c.block >= kb0 + o.layout.kernel_split) return info;
    if (c.layer < 0 || c.layer >= static_cast<int64_t>(o.slot_layers.size())) return info;
    const int layer = o.slot_layers[static_cast<size_t>(c.layer)];
    if (layer < 0) return info;  // an unused slot of a short pack
    info.owner = oi;
    info.layer = layer;
    info.layer_name = o.slot_names[static_cast<size_t>(c.layer)];
    info.coord = c;
    info.offset = o.layout.offset(c.layer, c.block, c.head, c.token, c.byte);
    if (o.kind == LayerKind::kMamba) {
      int64_t at = 0;
      for (size_t st = 0; st < o.state_bytes.size(); ++st) {
        if (c.byte < at + o.state_bytes[st]) {
          info.state = static_cast<int>(st);
          info.state_byte = c.byte - at;
          info.region = StateRegion(o.state_names[st]);
          break;
        }
        at += o.state_bytes[st];
      }
      if (info.state < 0) info.region = Region::kOtherState;
    } else {
      info.manager_token = (c.block - kb0) * o.layout.block_tokens + c.token;
      info.region = c.byte < o.layout.k_bytes ? Region::kKey : Region::kValue;
    }
    return info;
  }
  return info;
}

std::vector<ByteRange> PageMap::TokenRanges(int layer, int64_t manager_token) const {
  std::vector<ByteRange> out;
  for (const PageOwner& o : owners_) {
    const auto it = std::find(o.slot_layers.begin(), o.slot_layers.end(), layer);
    if (it == o.slot_layers.end()) continue;
    const int64_t slot = it - o.slot_layers.begin();
    const KvLayout& l = o.layout;
    const int64_t kb0 = sel_.block * l.kernel_split;
    if (o.kind == LayerKind::kMamba) {
      out.push_back({l.offset(0, kb0, 0, 0, 0), l.offset(0, kb0, 0, 0, l.k_bytes - 1) + 1});
      return out;
    }
    if (manager_token < 0 || manager_token >= l.manager_block_tokens()) return out;
    const int64_t kb = kb0 + manager_token / l.block_tokens;
    const int64_t t = manager_token % l.block_tokens;
    for (int64_t h = 0; h < l.num_heads; ++h) {
      if (l.kv_split == KvSplit::kPackedInContent) {
        const int64_t b = l.offset(slot, kb, h, t, 0);
        out.push_back({b, l.offset(slot, kb, h, t, l.content_bytes() - 1) + 1});
      } else {
        out.push_back({l.offset(slot, kb, h, t, 0), l.offset(slot, kb, h, t, l.k_bytes - 1) + 1});
        if (l.v_bytes > 0) {
          out.push_back({l.offset(slot, kb, h, t, l.k_bytes),
                         l.offset(slot, kb, h, t, l.k_bytes + l.v_bytes - 1) + 1});
        }
      }
    }
    return out;
  }
  return out;
}

int64_t Raster::CellOf(int64_t byte) const {
  if (byte < begin || byte >= begin + bytes) return -1;
  const int64_t rel = byte - begin;
  const int64_t line = rel / row_bytes / rows_per_line;
  const int64_t col = (rel % row_bytes) / cell_bytes;
  return line < rows ? line * cols + col : -1;
}

std::vector<int64_t> Raster::CellsOf(int64_t b, int64_t e) const {
  std::vector<int64_t> out;
  b = std::max(b, begin);
  e = std::min(e, begin + bytes);
  if (b >= e) return out;
  auto line_of = [&](int64_t byte_row) { return byte_row / rows_per_line; };
  auto add_cols = [&](int64_t byte_row, int64_t lo, int64_t hi) {  // bytes [lo, hi) of a row
    const int64_t line = line_of(byte_row);
    if (line >= rows) return;
    for (int64_t c = lo / cell_bytes; c <= (hi - 1) / cell_bytes && c < cols; ++c) {
      out.push_back(line * cols + c);
    }
  };
  const int64_t r0 = (b - begin) / row_bytes, r1 = (e - 1 - begin) / row_bytes;
  if (r0 == r1) {
    add_cols(r0, (b - begin) % row_bytes, (e - 1 - begin) % row_bytes + 1);
  } else {
    add_cols(r0, (b - begin) % row_bytes, row_bytes);
    // Whole byte rows in between cover whole screen rows.
    for (int64_t line = line_of(r0 + 1); line <= line_of(r1 - 1) && r0 + 1 <= r1 - 1; ++line) {
      if (line >= rows) break;
      for (int c = 0; c < cols; ++c) out.push_back(line * cols + c);
    }
    add_cols(r1, 0, (e - 1 - begin) % row_bytes + 1);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Raster MakeRaster(int64_t begin, int64_t bytes, int64_t row_bytes, int max_cols, int max_rows) {
  Raster r;
  r.begin = begin;
  r.bytes = std::max<int64_t>(1, bytes);
  max_cols = std::max(1, max_cols);
  max_rows = std::max(1, max_rows);
  if (row_bytes <= 0) {
    const int64_t max_cells = static_cast<int64_t>(max_cols) * max_rows;
    r.cell_bytes = 1;
    while ((r.bytes + r.cell_bytes - 1) / r.cell_bytes > max_cells) r.cell_bytes *= 2;
    r.cols = max_cols;
    r.row_bytes = r.cell_bytes * r.cols;
    r.rows_per_line = 1;
    r.rows = static_cast<int>((r.bytes + r.row_bytes - 1) / r.row_bytes);
    return r;
  }
  r.row_bytes = row_bytes;
  r.cell_bytes = (row_bytes + max_cols - 1) / max_cols;
  r.cols = static_cast<int>((row_bytes + r.cell_bytes - 1) / r.cell_bytes);
  const int64_t byte_rows = (r.bytes + row_bytes - 1) / row_bytes;
  r.rows_per_line = (byte_rows + max_rows - 1) / max_rows;
  r.rows = static_cast<int>((byte_rows + r.rows_per_line - 1) / r.rows_per_line);
  return r;
}

std::vector<ByteInfo> ClassifyCells(const PageMap& map, const Raster& raster) {
  std::vector<ByteInfo> cells(static_cast<size_t>(raster.num_cells()));
  for (int64_t c = 0; c < raster.num_cells(); ++c) {
    const int64_t b = raster.CellBegin(c);
    if (b >= raster.begin + raster.bytes) continue;  // past the window: stays padding
    cells[static_cast<size_t>(c)] = map.Locate(b);
  }
  return cells;
}

std::string DescribeCoord(const PageMap& map, const ByteInfo& info) {
  if (!info.valid()) return "padding (no layer's data)";
  const PageOwner& o = map.owners()[static_cast<size_t>(info.owner)];
  const KvCoord& c = info.coord;
  std::string s = "(layer " + info.layer_name;
  if (o.layout.num_layers > 1) s += " = slot " + std::to_string(c.layer);
  s += ", block " + std::to_string(map.selection().block);
  if (o.layout.kernel_split > 1) s += " [kernel block " + std::to_string(c.block) + "]";
  if (o.kind == LayerKind::kMamba) {
    s += ", " + (info.state >= 0 ? o.state_names[static_cast<size_t>(info.state)] : "state") +
         " byte " + WithCommas(info.state_byte) + ")";
    return s;
  }
  s += ", head " + std::to_string(c.head) + ", token " + std::to_string(info.manager_token) +
       ", byte " + std::to_string(c.byte);
  if (o.layout.v_bytes > 0) {
    s += info.region == Region::kKey ? " = K[" + std::to_string(c.byte) + "]"
                                     : " = V[" + std::to_string(c.byte - o.layout.k_bytes) + "]";
  }
  return s + ")";
}

std::string DescribeOffset(const ByteInfo& info) {
  if (!info.valid()) return "";
  const KvCoord& c = info.coord;
  return "KvLayout::offset(" + std::to_string(c.layer) + ", " + std::to_string(c.block) + ", " +
         std::to_string(c.head) + ", " + std::to_string(c.token) + ", " + std::to_string(c.byte) +
         ") = " + WithCommas(info.offset);
}

}  // namespace kvsim::viz
