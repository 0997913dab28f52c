// The Page map panel: the bytes of physical pages drawn to scale, for the live plan (side A)
// and a variant of it (side B: another layout, pack size or block size), with the same
// token highlighted in both. Declared in a header so headless tests can drive the hover
// logic; the drawing itself lives in page_map_panel.cc.
//
// Per side: a selection (slot tensor, group, block), a zoom window over the page, and a
// cached PageMap + classified Raster that is rebuilt only when the plan, the selection or the
// window changes — so thousands of blocks and megabyte pages stay cheap to draw.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <imgui.h>

#include "viz/colors.h"
#include "viz/page_map.h"
#include "viz/panel.h"

namespace kvsim::viz {

// What side B varies relative to side A.
// kDecodePool (P/D scenarios only, kept last): the other pool's plan as the scenario gives it.
enum class CompareWhat : int { kLayout = 0, kPackSize, kBlockSize, kDecodePool };
inline constexpr const char* kCompareWhatNames[] = {"layout", "attn pack size", "block size",
                                                    "other P/D pool"};

// A token (or a Mamba state) named independently of any plan: the layer by name and the
// token's position in the sequence, so it can be found in a plan with other block sizes.
struct TokenRef {
  std::string layer_name;
  int64_t position = 0;   // block × manager-block tokens + token
  bool is_state = false;  // a Mamba state: the whole state is highlighted
};

// Where the sides go. Side by side when each half of `avail_w` (less `gap`) is at least
// `min_side_w` — the widest line a side writes (its layout and strides, its page footer) —
// else side B below side A at full width, each with half the height: a narrow window
// (1024 px) must not cut side B off at the right edge.
struct SideBoxes {
  bool stacked = false;
  float w = 0;  // width of one side
  float h = 0;  // height of one side
};
SideBoxes LayoutSides(float avail_w, float avail_h, bool two, float min_side_w, float gap);

class PageMapPanel : public IPanel {
 public:
  struct Side {
    PageSelection sel;
    double zoom = 1.0;        // the window shows page_bytes / zoom bytes
    int64_t view_offset = 0;  // window start, bytes from the page start
    std::optional<PageMap> map;
    std::string error;
    std::vector<PageMap> group_maps;  // every group's view of the same tensor and block
    Raster raster;
    std::vector<ByteInfo> cells;
    // Geometry of the last drawn raster (screen space).
    ImVec2 origin{0, 0};
    float cell_w = 0, cell_h = 0;
    // Cache key.
    int64_t built_replans = -1;
    PageSelection built_sel{-2, -2, -2};
    int64_t built_begin = -1, built_bytes = -1;
    int built_cols = -1, built_rows = -1;
  };

  const char* id() const override { return "page_map"; }
  const char* title() const override { return "Page map"; }
  const char* help() const override {
    return "bytes of one page to scale; hover a cell for (layer, block, head, token, byte) and "
           "its KvLayout::offset; click pins a token; wheel or +/- zooms, drag pans, "
           "PgUp/PgDn change block, Home resets";
  }
  void Draw(ViewerContext& ctx) override;

  // --- for tests and the screenshot tool ---
  const Side& side(int i) const { return sides_[i]; }
  Side& mutable_side(int i) { return sides_[i]; }
  const PlanModel* compare_model() const { return compare_ ? &*compare_ : nullptr; }
  // What the mouse is over (valid() false when nothing).
  const ByteInfo& hovered() const { return hovered_; }
  int hovered_side() const { return hovered_side_; }
  const std::optional<TokenRef>& highlighted() const { return highlight_; }
  // Byte ranges highlighted on side i in the last frame.
  const std::vector<ByteRange>& highlight_ranges(int i) const { return highlight_ranges_[i]; }
  // Centre of the cell holding `byte` on side i in the last drawn frame; false if not visible.
  bool ScreenPosOfByte(int i, int64_t byte, ImVec2* out) const;
  void set_colour_by(ColourBy c) { colour_by_ = c; }
  void set_compare(bool on) { compare_on_ = on; }
  void SetCompare(CompareWhat what, int64_t value);

 private:
  void SyncCompare(const PlanModel& a);
  void RebuildMaps(Side& s, const KvCachePlan& plan, int64_t replans);
  void RebuildRaster(Side& s, int cols, int max_rows);
  void DrawControls(ViewerContext& ctx);
  void DrawSide(int i, const PlanModel& model, float width, float height);
  void DrawStrip(const PageMap& map, Side& s, float width, float height, bool selected, int group,
                 int alike);
  void DrawInfo();
  void HandleKeys(const KvCachePlan& a);
  std::vector<ByteRange> RangesFor(const TokenRef& t, const Side& s, const KvCachePlan& plan,
                                   std::string* note) const;

  Side sides_[2];
  ColourBy colour_by_ = ColourBy::kStructure;
  bool compare_on_ = true;
  bool link_selection_ = true;
  CompareWhat compare_what_ = CompareWhat::kLayout;
  int64_t compare_value_ = -1;  // -1: chosen from the plan on first draw
  std::optional<PlanModel> compare_;
  bool initialised_ = false;
  int64_t a_replans_ = -1;  // plan stamp of side A's plan last drawn

  ByteInfo hovered_;
  int hovered_side_ = -1;
  std::optional<TokenRef> pin_;
  std::optional<TokenRef> highlight_;
  std::vector<ByteRange> highlight_ranges_[2];
  std::string highlight_note_[2];
  bool dragging_ = false;
  float drag_rows_ = 0;
};

}  // namespace kvsim::viz
