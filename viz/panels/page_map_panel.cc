#include "viz/panels/page_map_panel.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "sim/report/plan_report.h"
#include "viz/ui_util.h"

namespace kvsim::viz {
namespace {

constexpr int kMaxStrips = 6;
constexpr float kStripH = 16.0f;

int FloorPow2(int v) {
  int p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

std::string Pct(double f) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f%%", 100.0 * f);
  return b;
}

std::string SideSummary(const PlanModel& m) {
  const PlanKnobs& k = m.knobs();
  std::string s = m.role().empty() ? "" : m.role() + " pool · TP " + std::to_string(k.tp) + " · ";
  s += LayoutKey(k.layout);
  s += " · pack " + std::to_string(k.attn_pack_size);
  if (m.has_plan()) s += " · block " + std::to_string(m.plan().attn_block_size) + " tok";
  return s;
}

// The attention group with the most padding (the first one when none is padded): the page
// most worth seeing first — tokens to hover, and padding if the plan has any.
PageSelection DefaultSelection(const KvCachePlan& p) {
  PageSelection sel;
  sel.block = p.num_blocks > 1 ? 1 : 0;
  int64_t best_pad = -1;
  for (size_t g = 0; g < p.groups.size(); ++g) {
    if (p.groups[g].kind == LayerKind::kMamba || p.groups[g].layers.empty()) continue;
    const int64_t pad = p.groups[g].page_bytes - p.groups[g].real_page_bytes;
    if (pad <= best_pad) continue;
    best_pad = pad;
    sel.group = static_cast<int>(g);
    sel.tensor = std::max(0, p.layers[p.groups[g].layers[0]].slot);
  }
  return sel;
}

// Pages that look alike (same kind, same segment sizes and regions) are drawn once.
std::string Signature(const PageMap& m) {
  std::string sig = std::to_string(static_cast<int>(m.owners().front().kind));
  for (const PageSegment& seg : m.segments()) {
    sig += ";" + std::to_string(seg.range.size()) + ":" +
           std::to_string(static_cast<int>(seg.region)) + (seg.layer < 0 ? "p" : "");
  }
  return sig;
}

int FindLayer(const KvCachePlan& p, const std::string& name) {
  for (size_t i = 0; i < p.layers.size(); ++i) {
    if (p.layers[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

// The line under a side's raster.
std::string FooterText(const PageMap& map, const Raster& r, double zoom) {
  char b[256];
  std::snprintf(
      b, sizeof b, "page %s B = data %s + padding %s B (%s); cell %lld B x %lld rows; zoom %.1fx",
      WithCommas(map.size()).c_str(), WithCommas(map.data_bytes()).c_str(),
      WithCommas(map.padding_bytes()).c_str(),
      Pct(static_cast<double>(map.padding_bytes()) / static_cast<double>(map.size())).c_str(),
      static_cast<long long>(r.cell_bytes), static_cast<long long>(r.rows_per_line), zoom);
  return b;
}

}  // namespace

SideBoxes LayoutSides(float avail_w, float avail_h, bool two, float min_side_w, float gap) {
  SideBoxes b;
  b.w = avail_w;
  b.h = avail_h;
  if (!two) return b;
  const float half = (avail_w - gap) / 2;
  if (half >= min_side_w) {
    b.w = half;
  } else {
    b.stacked = true;
    b.h = (avail_h - gap) / 2;
  }
  return b;
}

void PageMapPanel::SetCompare(CompareWhat what, int64_t value) {
  compare_what_ = what;
  compare_value_ = value;
}

void PageMapPanel::SyncCompare(const PlanModel& a) {
  if (compare_value_ < 0 && a.role() == "prefill") {
    compare_what_ = CompareWhat::kDecodePool;  // P/D: the decode pool's pages
    compare_value_ = 0;
  }
  if (compare_what_ == CompareWhat::kDecodePool) {
    // The other pool of a P/D scenario, as the scenario gives it (its own knobs).
    const std::string other = a.role() == "decode" ? "prefill" : "decode";
    if (!compare_ || compare_->role() != other) {
      compare_.reset();
      auto m = PlanModel::Load(a.scenario_path(), a.base_overrides(), other);
      if (m.ok()) compare_ = std::move(m.value());
    }
    return;
  }
  if (compare_ && !compare_->role().empty() && compare_->role() != a.role()) compare_.reset();
  if (compare_value_ < 0) {
    if (a.model_is_hybrid()) {
      compare_what_ = CompareWhat::kPackSize;
      compare_value_ = a.knobs().attn_pack_size == 1 ? 4 : 1;
    } else {
      compare_what_ = CompareWhat::kLayout;
      compare_value_ = static_cast<int64_t>(
          a.knobs().layout == LayoutChoice::kNhd ? LayoutChoice::kHnd : LayoutChoice::kNhd);
    }
  }
  PlanKnobs k = a.knobs();
  switch (compare_what_) {
    case CompareWhat::kLayout:
      k.layout = static_cast<LayoutChoice>(compare_value_);
      break;
    case CompareWhat::kPackSize:
      k.attn_pack_size = compare_value_;
      break;
    case CompareWhat::kBlockSize:
      k.block_size = compare_value_;
      break;
    case CompareWhat::kDecodePool:
      break;  // handled above
  }
  if (!compare_) compare_ = a;
  compare_->mutable_knobs() = k;
  compare_->ReplanIfChanged();
}

void PageMapPanel::RebuildMaps(Side& s, const KvCachePlan& plan, int64_t replans) {
  s.sel.block = std::clamp<int64_t>(s.sel.block, 0, std::max<int64_t>(0, plan.num_blocks - 1));
  const bool same_sel = s.sel.tensor == s.built_sel.tensor && s.sel.group == s.built_sel.group &&
                        s.sel.block == s.built_sel.block;
  if (replans == s.built_replans && same_sel) return;
  s.built_replans = replans;
  s.map.reset();
  s.group_maps.clear();
  s.error.clear();
  s.built_begin = -1;
  auto m = PageMap::Build(plan, s.sel);
  if (!m.ok()) {
    s.error = m.status().message();
    s.built_sel = s.sel;
    return;
  }
  s.map = std::move(m.value());
  s.sel = s.map->selection();
  s.built_sel = s.sel;
  // Every group's view of the same tensor (or slab) and block: "a few pages" at once.
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    PageSelection gs{s.sel.tensor, static_cast<int>(g), s.sel.block};
    auto gm = PageMap::Build(plan, gs);
    if (gm.ok()) s.group_maps.push_back(std::move(gm.value()));
  }
}

void PageMapPanel::RebuildRaster(Side& s, int cols, int max_rows) {
  if (!s.map) return;
  const int64_t page = s.map->size();
  const int64_t row = s.map->token_row_bytes();
  // Zooming stops at a handful of rows: below that the cells cannot get any finer.
  const int64_t min_bytes = std::min<int64_t>(page, row > 0 ? 8 * row : cols * 8);
  const int64_t view = std::clamp<int64_t>(static_cast<int64_t>(page / s.zoom), min_bytes, page);
  s.zoom = static_cast<double>(page) / static_cast<double>(view);
  s.view_offset = std::clamp<int64_t>(s.view_offset, 0, page - view);
  if (row > 0) s.view_offset -= s.view_offset % row;  // windows start on a token row
  const int64_t begin = s.map->begin() + s.view_offset;
  if (begin != s.built_begin || view != s.built_bytes || cols != s.built_cols ||
      max_rows != s.built_rows) {
    s.raster = MakeRaster(begin, view, row, cols, max_rows);
    s.cells = ClassifyCells(*s.map, s.raster);
    s.built_begin = begin;
    s.built_bytes = view;
    s.built_cols = cols;
    s.built_rows = max_rows;
  }
}

bool PageMapPanel::ScreenPosOfByte(int i, int64_t byte, ImVec2* out) const {
  const Side& s = sides_[i];
  if (!s.map || s.cell_w <= 0) return false;
  const int64_t c = s.raster.CellOf(byte);
  if (c < 0) return false;
  *out = ImVec2(s.origin.x + (static_cast<float>(c % s.raster.cols) + 0.5f) * s.cell_w,
                s.origin.y + (static_cast<float>(c / s.raster.cols) + 0.5f) * s.cell_h);
  return true;
}

std::vector<ByteRange> PageMapPanel::RangesFor(const TokenRef& t, const Side& s,
                                               const KvCachePlan& plan, std::string* note) const {
  note->clear();
  if (!s.map) return {};
  const int li = FindLayer(plan, t.layer_name);
  if (li < 0) {
    *note = t.layer_name + " is not in this plan";
    return {};
  }
  if (!s.map->has_layer(li)) {
    *note = t.layer_name + " is not on this page (see tensor " +
            std::to_string(std::max(0, plan.layers[li].slot)) + ", group " +
            std::to_string(plan.layers[li].group) + ")";
    return {};
  }
  if (t.is_state || plan.layers[li].spec.kind == LayerKind::kMamba) {
    return s.map->TokenRanges(li, 0);
  }
  const int64_t n = s.map->manager_block_tokens();
  if (n <= 0) return {};
  const int64_t tok = t.position - s.sel.block * n;
  if (tok < 0 || tok >= n) {
    *note = "token " + std::to_string(t.position) + " of " + t.layer_name + " lives in block " +
            std::to_string(t.position / n) + " here (" + std::to_string(n) + "-token blocks)";
    return {};
  }
  return s.map->TokenRanges(li, tok);
}

void PageMapPanel::DrawControls(ViewerContext& ctx) {
  ImGui::PushItemWidth(160);
  int cb = static_cast<int>(colour_by_);
  if (ImGui::Combo("colour by", &cb, kColourByNames, IM_ARRAYSIZE(kColourByNames))) {
    colour_by_ = static_cast<ColourBy>(cb);
  }
  ImGui::SameLine();
  ImGui::Checkbox("compare with", &compare_on_);
  if (compare_on_) {
    ImGui::SameLine();
    int what = static_cast<int>(compare_what_);
    ImGui::PushItemWidth(120);
    const int num_what = ctx.plan->has_cluster() ? IM_ARRAYSIZE(kCompareWhatNames)
                                                 : IM_ARRAYSIZE(kCompareWhatNames) - 1;
    if (ImGui::Combo("##what", &what, kCompareWhatNames, num_what)) {
      compare_what_ = static_cast<CompareWhat>(what);
      const PlanKnobs& k = ctx.plan->knobs();
      switch (compare_what_) {
        case CompareWhat::kLayout:
          compare_value_ = static_cast<int64_t>(
              k.layout == LayoutChoice::kNhd ? LayoutChoice::kHnd : LayoutChoice::kNhd);
          break;
        case CompareWhat::kPackSize:
          compare_value_ = k.attn_pack_size == 1 ? 4 : 1;
          break;
        case CompareWhat::kBlockSize:
          compare_value_ = ctx.plan->has_plan()
                               ? std::max<int64_t>(16, ctx.plan->plan().attn_block_size / 2)
                               : 16;
          break;
        case CompareWhat::kDecodePool:
          compare_value_ = 0;
          break;
      }
    }
    ImGui::SameLine();
    if (compare_what_ == CompareWhat::kDecodePool) {
      ImGui::TextDisabled(ctx.plan->role() == "decode" ? "(the prefill pool)"
                                                       : "(the decode pool)");
    } else if (compare_what_ == CompareWhat::kLayout) {
      int v = static_cast<int>(compare_value_);
      if (ImGui::Combo("##layoutB", &v, kLayoutChoiceNames, IM_ARRAYSIZE(kLayoutChoiceNames))) {
        compare_value_ = v;
      }
    } else {
      int v = static_cast<int>(compare_value_);
      if (ImGui::InputInt("##valueB", &v)) {
        compare_value_ = std::max(compare_what_ == CompareWhat::kBlockSize ? 0 : 1, v);
      }
    }
    ImGui::PopItemWidth();
    ImGui::SameLine();
    ImGui::Checkbox("link pages", &link_selection_);
    HelpMarker("side B shows the page holding the same layer and the same tokens as side A");
  }
  ImGui::PopItemWidth();
}

void PageMapPanel::DrawStrip(const PageMap& map, Side& s, float width, float height, bool selected,
                             int group, int alike) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 o = ImGui::GetCursorScreenPos();
  ImGui::PushID(group);
  ImGui::InvisibleButton("##strip", ImVec2(width, height));
  const bool hovered = ImGui::IsItemHovered();
  const bool clicked = ImGui::IsItemClicked();
  ImGui::PopID();
  const double page = static_cast<double>(map.size());
  const ImFont* font = ImGui::GetFont();
  const PageSegment* largest = nullptr;
  for (const PageSegment& seg : map.segments()) {
    if (seg.layer >= 0 && (!largest || seg.range.size() > largest->range.size())) largest = &seg;
  }
  for (const PageSegment& seg : map.segments()) {
    const float x0 = o.x + static_cast<float>((seg.range.begin - map.begin()) / page * width);
    const float x1 =
        std::max(x0 + 1.0f, o.x + static_cast<float>((seg.range.end - map.begin()) / page * width));
    const ImVec2 a(x0, o.y), b(x1, o.y + height);
    if (seg.layer < 0) {
      dl->AddRectFilled(a, b, palette::kPadding);
      DrawHatch(dl, a, b, palette::kHatch, 5.0f);
    } else if (seg.region == Region::kKey) {
      if (colour_by_ == ColourBy::kLayer) {
        dl->AddRectFilled(a, b, CategoricalColour(seg.layer));
      } else {
        // K and V interleave at byte scale inside an attention page: split the bar.
        dl->AddRectFilled(a, ImVec2(b.x, o.y + height * 0.5f), palette::kKey);
        dl->AddRectFilled(ImVec2(a.x, o.y + height * 0.5f), b, palette::kValue);
      }
    } else {
      ByteInfo fake;
      fake.region = seg.region;
      fake.owner = 0;
      fake.layer = seg.layer;
      dl->AddRectFilled(a, b, CellColour(fake, colour_by_, map));
    }
    const std::string label = &seg == largest && alike > 1
                                  ? seg.label + "  (g" + std::to_string(group) + ", " +
                                        std::to_string(alike) + " groups alike)"
                                  : seg.label;
    const ImVec2 ts = ImGui::CalcTextSize(label.c_str());
    if (ts.x + 6 < x1 - x0) {
      dl->AddText(font, ImGui::GetFontSize(), ImVec2(x0 + 3, o.y + (height - ts.y) * 0.5f),
                  IM_COL32(10, 10, 10, 255), label.c_str());
    }
    if (x1 - x0 > 2)
      dl->AddLine(ImVec2(x1 - 0.5f, o.y), ImVec2(x1 - 0.5f, o.y + height), IM_COL32(0, 0, 0, 160));
  }
  if (selected) {
    // The zoom window.
    const float w0 = o.x + static_cast<float>(s.view_offset / page * width);
    const float w1 = o.x + static_cast<float>((s.view_offset + s.raster.bytes) / page * width);
    dl->AddRect(ImVec2(w0, o.y - 1), ImVec2(std::max(w1, w0 + 2), o.y + height + 1),
                IM_COL32(255, 255, 255, 255), 0, 0, 2.0f);
  }
  if (hovered) {
    ImGui::BeginTooltip();
    ImGui::Text("%s", map.title().c_str());
    ImGui::Text("page %s B: data %s B, padding %s B (%s)", WithCommas(map.size()).c_str(),
                WithCommas(map.data_bytes()).c_str(), WithCommas(map.padding_bytes()).c_str(),
                Pct(static_cast<double>(map.padding_bytes()) / page).c_str());
    ImGui::TextDisabled(selected ? "click: move the zoom window here" : "click: show this page");
    ImGui::EndTooltip();
  }
  if (clicked) {
    if (selected) {
      const double f = (ImGui::GetIO().MousePos.x - o.x) / width;
      s.view_offset = static_cast<int64_t>(f * page) - s.raster.bytes / 2;
    } else {
      s.sel.group = group;
    }
  }
}

void PageMapPanel::DrawSide(int i, const PlanModel& model, float width, float height) {
  Side& s = sides_[i];
  const float top_y = ImGui::GetCursorScreenPos().y;
  ImGui::BeginGroup();
  ImGui::TextColored(i == 0 ? ImVec4(0.55f, 0.75f, 1, 1) : ImVec4(1, 0.75f, 0.45f, 1), "%s  %s",
                     i == 0 ? "A" : "B", SideSummary(model).c_str());
  if (!model.has_plan()) {
    ImGui::TextWrapped("no plan: %s", model.error().c_str());
    ImGui::EndGroup();
    return;
  }
  if (!model.ok()) {
    ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + width);
    ImGui::TextColored(ImVec4(1, 0.45f, 0.4f, 1), "planner error (showing the last plan): %s",
                       model.error().c_str());
    ImGui::PopTextWrapPos();
  }
  const KvCachePlan& plan = model.plan();
  // Selection controls.
  ImGui::PushID(i);
  ImGui::PushItemWidth(std::clamp(width / 4 - 40, 60.0f, 140.0f));
  const bool linked = i == 1 && link_selection_;
  if (linked) ImGui::BeginDisabled();
  {
    ImGui::TextUnformatted(plan.cross_layer ? "slab" : "tensor");
    ImGui::SameLine();
    int t = s.sel.tensor;
    if (ImGui::InputInt("##tensor", &t)) {
      s.sel.tensor = std::clamp(t, 0, std::max(0, static_cast<int>(plan.tensors.size()) - 1));
      s.sel.group = -1;
    }
    ImGui::SameLine();
    ImGui::TextUnformatted("group");
    ImGui::SameLine();
    int g = s.sel.group;
    if (ImGui::InputInt("##group", &g)) {
      s.sel.group = std::clamp(g, 0, std::max(0, static_cast<int>(plan.groups.size()) - 1));
    }
    ImGui::SameLine();
  }
  ImGui::TextUnformatted("block");
  ImGui::SameLine();
  int b = static_cast<int>(s.sel.block);
  if (ImGui::InputInt("##block", &b)) s.sel.block = std::max(0, b);
  if (linked) ImGui::EndDisabled();
  ImGui::PopItemWidth();
  ImGui::PopID();

  RebuildMaps(s, plan, model.plan_stamp());
  if (!s.map) {
    ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + width);
    ImGui::TextWrapped("%s", s.error.c_str());
    ImGui::PopTextWrapPos();
    ImGui::EndGroup();
    return;
  }
  const PageMap& map = *s.map;
  ImGui::TextDisabled("%s", DescribeLayout(map.owners().front().layout).c_str());

  // Strips: every group's view of this tensor and block, to scale; alike pages once.
  std::vector<std::pair<size_t, int>> strips;  // (group map index, pages alike)
  std::vector<std::string> sigs;
  for (size_t gi = 0; gi < s.group_maps.size(); ++gi) {
    const std::string sig = Signature(s.group_maps[gi]);
    const auto at = std::find(sigs.begin(), sigs.end(), sig);
    const bool sel = s.group_maps[gi].selection().group == s.sel.group;
    if (at == sigs.end()) {
      sigs.push_back(sig);
      strips.push_back({gi, 1});
    } else {
      auto& st = strips[static_cast<size_t>(at - sigs.begin())];
      ++st.second;
      if (sel) st.first = gi;  // the selected page represents its kind
    }
  }
  size_t hidden = 0;
  for (size_t k = 0; k < strips.size(); ++k) {
    if (k >= kMaxStrips) {
      hidden += strips[k].second;
      continue;
    }
    const PageMap& gm = s.group_maps[strips[k].first];
    const bool selected = gm.selection().group == s.sel.group;
    DrawStrip(gm, s, width, kStripH, selected, gm.selection().group, strips[k].second);
  }
  if (hidden > 0) {
    ImGui::TextDisabled("... %zu more groups on this tensor (set group above)", hidden);
  }

  // The raster: what is left of the height, minus two info lines below it.
  const float line = ImGui::GetTextLineHeightWithSpacing();
  const float used = ImGui::GetCursorScreenPos().y - top_y;
  const float raster_h = std::max(40.0f, height - used - 2 * line - 4);
  const float margin = ImGui::CalcTextSize("L00 h00 t0000").x + 6;  // row labels
  const float raster_w = width - margin;
  const int max_cols = std::clamp(FloorPow2(static_cast<int>(raster_w / 3)), 16, 256);
  const int max_rows = std::max(4, static_cast<int>(raster_h / 3));
  RebuildRaster(s, max_cols, max_rows);
  const Raster& r = s.raster;
  s.cell_w = raster_w / static_cast<float>(r.cols);
  s.cell_h = std::clamp(raster_h / static_cast<float>(r.rows), 1.0f, 28.0f);
  const ImVec2 top = ImGui::GetCursorScreenPos();
  const ImVec2 o(top.x + margin, top.y);
  s.origin = o;
  const ImVec2 size(raster_w, s.cell_h * static_cast<float>(r.rows));
  ImGui::SetCursorScreenPos(o);
  ImGui::PushID(100 + i);
  ImGui::InvisibleButton("##raster", size);
  ImGui::PopID();
  const bool hovered = ImGui::IsItemHovered();
  const bool active = ImGui::IsItemActive();
  ImDrawList* dl = ImGui::GetWindowDrawList();

  std::vector<uint8_t> hl(static_cast<size_t>(r.num_cells()), 0);
  for (const ByteRange& br : highlight_ranges_[i]) {
    for (int64_t c : r.CellsOf(br.begin, br.end)) hl[static_cast<size_t>(c)] = 1;
  }
  // Row labels: which token (and head) each screen row starts with.
  const float fh = ImGui::GetTextLineHeight();
  const int label_every = std::max(1, static_cast<int>(std::ceil((fh + 2) / s.cell_h)));
  for (int row = 0; row < r.rows; row += label_every) {
    const ByteInfo& first = s.cells[static_cast<size_t>(row) * r.cols];
    char label[48];
    if (!first.valid()) {
      std::snprintf(label, sizeof label, "+%s",
                    HumanBytes(static_cast<double>(r.CellBegin(static_cast<int64_t>(row) * r.cols) -
                                                   map.begin()))
                        .c_str());
    } else if (first.region == Region::kKey || first.region == Region::kValue) {
      // The layer only where a page holds several (packs, cross-layer slabs).
      const bool many = map.owners().size() > 1 ||
                        map.owners()[static_cast<size_t>(first.owner)].slot_layers.size() > 1;
      std::string l = many ? first.layer_name + " " : "";
      // The head only where a row holds one head (HND); NHD rows hold every head.
      const KvLayout& ol = map.owners()[static_cast<size_t>(first.owner)].layout;
      if (ol.num_heads > 1 && map.token_row_bytes() < ol.num_heads * ol.content_bytes()) {
        l += "h" + std::to_string(first.coord.head) + " ";
      }
      l += "t" + std::to_string(first.manager_token);
      std::snprintf(label, sizeof label, "%s", l.c_str());
    } else {
      std::snprintf(label, sizeof label, "%s +%s", first.layer_name.c_str(),
                    HumanBytes(static_cast<double>(first.state_byte)).c_str());
    }
    dl->AddText(ImVec2(top.x, o.y + s.cell_h * static_cast<float>(row)),
                IM_COL32(150, 150, 160, 255), label);
  }
  for (int row = 0; row < r.rows; ++row) {
    const float y0 = o.y + s.cell_h * static_cast<float>(row), y1 = y0 + s.cell_h;
    int c = 0;
    while (c < r.cols) {
      const int64_t idx = static_cast<int64_t>(row) * r.cols + c;
      const ByteInfo& ci = s.cells[static_cast<size_t>(idx)];
      const Rgba col = CellColour(ci, colour_by_, map);
      const uint8_t h = hl[static_cast<size_t>(idx)];
      int c2 = c + 1;
      while (c2 < r.cols) {
        const size_t j = static_cast<size_t>(row) * r.cols + c2;
        if (hl[j] != h || CellColour(s.cells[j], colour_by_, map) != col) break;
        ++c2;
      }
      const ImVec2 a(o.x + s.cell_w * static_cast<float>(c), y0);
      const ImVec2 bb(o.x + s.cell_w * static_cast<float>(c2), y1);
      dl->AddRectFilled(a, bb, h ? palette::kHighlight : col);
      if (!ci.valid() && !h) DrawHatch(dl, a, bb, palette::kHatch, 6.0f);
      c = c2;
    }
  }

  // A line where the layer changes between screen rows (pack slots, slab members).
  for (int row = 1; row < r.rows; ++row) {
    const ByteInfo& prev = s.cells[static_cast<size_t>(row - 1) * r.cols];
    const ByteInfo& cur = s.cells[static_cast<size_t>(row) * r.cols];
    if (cur.layer != prev.layer && cur.valid() && prev.valid()) {
      const float y = o.y + s.cell_h * static_cast<float>(row);
      dl->AddLine(ImVec2(o.x - margin * 0.3f, y), ImVec2(o.x + size.x, y),
                  IM_COL32(255, 255, 255, 255), 2.0f);
    }
  }

  ImGuiIO& io = ImGui::GetIO();
  if (hovered) {
    const int col = std::clamp(static_cast<int>((io.MousePos.x - o.x) / s.cell_w), 0, r.cols - 1);
    const int row = std::clamp(static_cast<int>((io.MousePos.y - o.y) / s.cell_h), 0, r.rows - 1);
    const int64_t idx = static_cast<int64_t>(row) * r.cols + col;
    hovered_ = s.cells[static_cast<size_t>(idx)];
    hovered_side_ = i;
    const int64_t cb = r.CellBegin(idx);
    dl->AddRect(ImVec2(o.x + s.cell_w * col - 1, o.y + s.cell_h * row - 1),
                ImVec2(o.x + s.cell_w * (col + 1) + 1, o.y + s.cell_h * (row + 1) + 1),
                IM_COL32(255, 255, 255, 255), 0, 0, 2.0f);
    ImGui::BeginTooltip();
    ImGui::Text("byte %s of the %s (%s into the page)", WithCommas(cb).c_str(),
                plan.cross_layer ? "slab" : "tensor", WithCommas(cb - map.begin()).c_str());
    if (r.cell_bytes > 1 || r.rows_per_line > 1) {
      ImGui::TextDisabled(
          "a cell is %lld bytes x %lld rows; its first byte:", static_cast<long long>(r.cell_bytes),
          static_cast<long long>(r.rows_per_line));
    }
    ImGui::Text("%s: %s", RegionName(hovered_.region), DescribeCoord(map, hovered_).c_str());
    if (hovered_.valid()) ImGui::Text("%s", DescribeOffset(hovered_).c_str());
    ImGui::EndTooltip();
    // Wheel zoom around the byte under the mouse.
    if (io.MouseWheel != 0) {
      const int64_t anchor = cb - map.begin();
      const double rel = static_cast<double>(anchor - s.view_offset) / static_cast<double>(r.bytes);
      s.zoom = std::max(1.0, s.zoom * std::pow(1.25, io.MouseWheel));
      const double view = static_cast<double>(map.size()) / s.zoom;
      s.view_offset = std::max<int64_t>(0, anchor - static_cast<int64_t>(rel * view));
    }
  }
  if (active && ImGui::IsMouseDragging(ImGuiMouseButton_Left, 2.0f)) {
    dragging_ = true;
    drag_rows_ += io.MouseDelta.y / s.cell_h;
    const int64_t whole = static_cast<int64_t>(drag_rows_);
    drag_rows_ -= static_cast<float>(whole);
    s.view_offset = std::max<int64_t>(0, s.view_offset - whole * r.rows_per_line * r.row_bytes);
  }
  if (ImGui::IsItemDeactivated()) {
    if (!dragging_ && hovered && hovered_.valid()) {
      pin_ = TokenRef{hovered_.layer_name,
                      s.sel.block * map.manager_block_tokens() + hovered_.manager_token,
                      hovered_.region != Region::kKey && hovered_.region != Region::kValue};
    }
    dragging_ = false;
    drag_rows_ = 0;
  }
  ImGui::SetCursorScreenPos(ImVec2(top.x, o.y + size.y + 2));
  ImGui::TextUnformatted(FooterText(map, r, s.zoom).c_str());
  if (!highlight_note_[i].empty()) ImGui::TextDisabled("%s", highlight_note_[i].c_str());
  ImGui::EndGroup();
}

void PageMapPanel::HandleKeys(const KvCachePlan& a) {
  ImGuiIO& io = ImGui::GetIO();
  if (io.WantTextInput) return;
  Side& s = sides_[0];
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_PageDown))) {
    s.sel.block = std::min(s.sel.block + 1, a.num_blocks - 1);
  }
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_PageUp))) {
    s.sel.block = std::max<int64_t>(0, s.sel.block - 1);
  }
  for (Side& x : sides_) {
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Home))) {
      x.zoom = 1;
      x.view_offset = 0;
    }
    if (ImGui::IsKeyPressed('=') || ImGui::IsKeyPressed(334 /* keypad + */)) {
      x.view_offset += x.raster.bytes / 4;
      x.zoom *= 2;
    }
    if (ImGui::IsKeyPressed('-') || ImGui::IsKeyPressed(333 /* keypad - */)) {
      x.view_offset -= x.raster.bytes / 2;
      x.zoom = std::max(1.0, x.zoom / 2);
      x.view_offset = std::max<int64_t>(0, x.view_offset);
    }
    if (!ImGui::IsAnyItemActive()) {
      if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_DownArrow)))
        x.view_offset += x.raster.bytes / 8;
      if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_UpArrow))) {
        x.view_offset = std::max<int64_t>(0, x.view_offset - x.raster.bytes / 8);
      }
    }
  }
}

void PageMapPanel::Draw(ViewerContext& ctx) {
  PlanModel& a = *ctx.plan;
  ctx.plan->ReplanIfChanged();
  if (!a.has_plan()) {
    ImGui::TextWrapped("No plan to draw: %s", a.error().c_str());
    return;
  }
  if (!initialised_) {
    sides_[0].sel = DefaultSelection(a.plan());
    initialised_ = true;
    a_replans_ = a.plan_stamp();
  } else if (a.plan_stamp() != a_replans_) {
    // A new plan renumbers groups and tensors: follow the layer that was on show.
    a_replans_ = a.plan_stamp();
    int li = -1;
    if (sides_[0].map) {
      for (const PageOwner& o : sides_[0].map->owners()) {
        for (const auto& n : o.slot_names) {
          if (li < 0 && !n.empty()) li = FindLayer(a.plan(), n);
        }
      }
    }
    const int64_t block = sides_[0].sel.block;
    if (li >= 0) {
      sides_[0].sel.tensor = std::max(0, a.plan().layers[li].slot);
      sides_[0].sel.group = a.plan().layers[li].group;
    } else {
      sides_[0].sel = DefaultSelection(a.plan());
    }
    sides_[0].sel.block = block;
  }
  HandleKeys(a.plan());
  DrawControls(ctx);
  if (compare_on_) SyncCompare(a);

  RebuildMaps(sides_[0], a.plan(), a.plan_stamp());
  // What to highlight this frame: the token under the mouse last frame, else the pinned one.
  highlight_.reset();
  if (hovered_side_ >= 0 && hovered_.valid()) {
    const Side& hs = sides_[hovered_side_];
    const int64_t n = hs.map ? hs.map->manager_block_tokens() : 0;
    highlight_ = TokenRef{hovered_.layer_name, hs.sel.block * n + hovered_.manager_token,
                          hovered_.region != Region::kKey && hovered_.region != Region::kValue};
  } else if (pin_) {
    highlight_ = pin_;
  } else if (sides_[0].map) {
    // Nothing pinned yet: show token 17 (or the last) of A's first attention layer, so a
    // first look (and a screenshot) already shows one token in both layouts.
    for (const PageOwner& o : sides_[0].map->owners()) {
      if (o.kind == LayerKind::kMamba) continue;
      for (const auto& n : o.slot_names) {
        if (n.empty() || highlight_) continue;
        const int64_t tokens = sides_[0].map->manager_block_tokens();
        highlight_ =
            TokenRef{n, sides_[0].sel.block * tokens + std::min<int64_t>(17, tokens - 1), false};
      }
    }
  }
  // Side B follows A: the page holding A's first layer and A's first token.
  if (compare_on_ && link_selection_ && compare_ && compare_->has_plan() && sides_[0].map) {
    const KvCachePlan& bp = compare_->plan();
    const PageMap& am = *sides_[0].map;
    std::string first;
    for (const PageOwner& o : am.owners()) {
      for (const auto& n : o.slot_names) {
        if (first.empty() && !n.empty()) first = n;
      }
    }
    if (highlight_) first = highlight_->layer_name;
    const int li = FindLayer(bp, first);
    if (li >= 0) {
      Side& b = sides_[1];
      b.sel.tensor = bp.cross_layer ? 0 : std::max(0, bp.layers[li].slot);
      b.sel.group = bp.layers[li].group;
      const int64_t na = am.manager_block_tokens();
      const int64_t nb =
          bp.layers[li].spec.kind == LayerKind::kMamba ? 0 : bp.layers[li].spec.block_size;
      int64_t pos = sides_[0].sel.block * na;
      if (highlight_ && !highlight_->is_state) pos = highlight_->position;
      b.sel.block = (na > 0 && nb > 0) ? pos / nb : sides_[0].sel.block;
    }
  }

  if (compare_on_ && compare_ && compare_->has_plan()) {
    RebuildMaps(sides_[1], compare_->plan(), compare_->plan_stamp());
  }
  hovered_ = ByteInfo();
  hovered_side_ = -1;

  const float avail_w = ImGui::GetContentRegionAvail().x;
  const float avail_h =
      ImGui::GetContentRegionAvail().y - 3 * ImGui::GetTextLineHeightWithSpacing();
  const bool two = compare_on_ && compare_.has_value();
  const float gap = 16;
  // The widest fixed line of either side: its summary, its strides, its footer.
  float min_side_w = 0;
  for (int i = 0; i < (two ? 2 : 1); ++i) {
    const PlanModel& m = i == 0 ? a : *compare_;
    const Side& s = sides_[i];
    min_side_w = std::max(min_side_w, ImGui::CalcTextSize(("A  " + SideSummary(m)).c_str()).x);
    if (s.map) {
      const std::string strides = DescribeLayout(s.map->owners().front().layout);
      min_side_w = std::max(min_side_w, ImGui::CalcTextSize(strides.c_str()).x);
      // The raster's cell size is last frame's; one more digit is room for it to change.
      const std::string footer = FooterText(*s.map, s.raster, s.zoom) + "0";
      min_side_w = std::max(min_side_w, ImGui::CalcTextSize(footer.c_str()).x);
    }
  }
  const SideBoxes box = LayoutSides(avail_w, avail_h, two, min_side_w, gap);
  for (int i = 0; i < (two ? 2 : 1); ++i) {
    const PlanModel& m = i == 0 ? a : *compare_;
    highlight_ranges_[i].clear();
    highlight_note_[i].clear();
    if (highlight_ && m.has_plan()) {
      highlight_ranges_[i] = RangesFor(*highlight_, sides_[i], m.plan(), &highlight_note_[i]);
    }
  }
  for (int i = 0; i < (two ? 2 : 1); ++i) {
    if (i == 1 && !box.stacked) ImGui::SameLine(0, gap);
    if (i == 1 && box.stacked) ImGui::Dummy(ImVec2(0, gap - ImGui::GetStyle().ItemSpacing.y));
    DrawSide(i, i == 0 ? a : *compare_, box.w, box.h);
  }
  DrawInfo();
}

void PageMapPanel::DrawInfo() {
  std::vector<const PageMap*> maps;
  for (const Side& s : sides_) {
    for (const PageMap& m : s.group_maps) maps.push_back(&m);
  }
  std::vector<LegendEntry> legend = PageLegend(colour_by_, maps);
  if (highlight_) legend.push_back({"highlighted token", palette::kHighlight, false});
  DrawLegend(legend);
  if (highlight_) {
    ImGui::TextDisabled("%s %s at position %lld: %zu byte ranges in A, %zu in B",
                        pin_ && hovered_side_ < 0 ? "pinned" : "token",
                        highlight_->layer_name.c_str(),
                        static_cast<long long>(highlight_->position), highlight_ranges_[0].size(),
                        highlight_ranges_[1].size());
  }
}

std::unique_ptr<IPanel> MakePageMapPanel() { return std::make_unique<PageMapPanel>(); }

}  // namespace kvsim::viz
