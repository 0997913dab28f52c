// PageMap: the bytes of one physical page (one block id of one slot tensor, or one block of
// the cross-layer slab) as a KV cache plan lays them out — the model behind the Page map
// panel, free of ImGui so that hover → coordinates → offset is unit-testable.
//
// Every byte question is answered by core's KvLayout: a page's owners are the layouts that
// KvCachePlan::LayoutForSlot (a slot tensor as one group sees it, pack members as layer slots)
// or LayoutForLayer (each layer of a cross-layer slab) return; Locate() is KvLayout::Decode,
// segments and token ranges are KvLayout::offset. The viewer does no stride arithmetic of its
// own. Bytes no owner decodes are padding (padded pages, short packs, slab tails).
//
// Pages are large (a Mamba page is ~1 MiB), so drawing goes through a Raster: the visible
// byte window cut into equal cells, each classified once by the byte it starts with.
//
// A PageMap keeps a copy of the plan's layouts and layer names; it does not point into the
// plan, so it outlives re-planning.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/kv_layout.h"
#include "core/page_planner.h"
#include "core/status.h"

namespace kvsim::viz {

// What a byte of a page holds.
enum class Region : uint8_t { kPadding, kKey, kValue, kConvState, kSsmState, kOtherState };
const char* RegionName(Region r);

struct ByteRange {
  int64_t begin = 0;
  int64_t end = 0;  // exclusive
  int64_t size() const { return end - begin; }
};

// One layout that owns bytes of the page.
struct PageOwner {
  KvLayout layout;
  LayerKind kind = LayerKind::kFullAttention;
  std::vector<int> slot_layers;          // plan layer index per layer slot (-1: unused slot)
  std::vector<std::string> slot_names;   // "L4"... per layer slot ("" when unused)
  std::vector<std::string> state_names;  // Mamba: state names in page order
  std::vector<int64_t> state_bytes;      // Mamba: bytes per state
};

// Everything the viewer says about one byte.
struct ByteInfo {
  Region region = Region::kPadding;
  int owner = -1;  // index into PageMap::owners(); -1 for padding
  int layer = -1;  // plan layer index; -1 for padding
  std::string layer_name;
  KvCoord coord;              // kernel-block coordinates, as KvLayout::Decode returns them
  int64_t manager_token = 0;  // token within the manager block (kernel split undone)
  int state = -1;             // Mamba: state index
  int64_t state_byte = 0;     // Mamba: byte within that state
  int64_t offset = -1;        // KvLayout::offset(coord): the byte itself, recomputed
  bool valid() const { return owner >= 0; }
};

struct PageSelection {
  int tensor = 0;     // slot tensor (ignored for a cross-layer slab, which is tensor 0)
  int group = -1;     // which group's view of the tensor; -1 = the first group using it
  int64_t block = 1;  // manager block id (0 is the null block, still drawable)
};

// A labelled contiguous run of one owner's data (for the to-scale overview strip).
struct PageSegment {
  ByteRange range;
  Region region = Region::kPadding;
  int layer = -1;
  std::string label;  // "L4 K+V", "L1 conv", "padding"
};

class PageMap {
 public:
  static Result<PageMap> Build(const KvCachePlan& plan, const PageSelection& selection);

  const PageSelection& selection() const { return sel_; }
  int64_t begin() const { return page_.begin; }  // absolute byte in the tensor / slab
  int64_t size() const { return page_.size(); }
  const ByteRange& range() const { return page_; }
  const std::vector<PageOwner>& owners() const { return owners_; }
  const std::vector<PageSegment>& segments() const { return segments_; }
  int64_t data_bytes() const { return data_bytes_; }
  int64_t padding_bytes() const { return size() - data_bytes_; }
  int64_t manager_block_tokens() const { return manager_block_tokens_; }
  // Bytes between consecutive tokens of the first attention layer (KvLayout::offset of
  // token 1 minus token 0): H × C for NHD, C for HND. 0 for pages without tokens.
  int64_t token_row_bytes() const { return token_row_bytes_; }
  // "tensor 0 · block 1 · group 3 (full_attention) · L4"
  const std::string& title() const { return title_; }
  bool has_layer(int layer) const;

  // What the absolute byte `byte` of the tensor/slab holds (padding if outside the page).
  ByteInfo Locate(int64_t byte) const;
  // Absolute byte ranges holding token `manager_token` of plan layer `layer` in this page:
  // every head, K and V. Mamba layers have no tokens: their whole state is returned.
  // Empty when the layer is not in this page.
  std::vector<ByteRange> TokenRanges(int layer, int64_t manager_token) const;

 private:
  PageSelection sel_;
  ByteRange page_;
  std::vector<PageOwner> owners_;
  std::vector<PageSegment> segments_;
  int64_t data_bytes_ = 0;
  int64_t manager_block_tokens_ = 0;
  int64_t token_row_bytes_ = 0;
  std::string title_;
};

// The visible byte window of a page cut into equal cells. The window is a stack of byte
// rows of `row_bytes` (a token row when the page has tokens, so NHD and HND read as rows of
// tokens); each row is cut into `cols` cells, and `rows_per_line` consecutive byte rows share
// one screen row when the window has more rows than the screen. Every cell therefore stands
// for the same number of bytes: the picture is to scale.
struct Raster {
  int64_t begin = 0;          // first byte shown (absolute)
  int64_t bytes = 0;          // bytes shown
  int64_t row_bytes = 1;      // bytes per byte row
  int cols = 1;               // cells per row
  int64_t cell_bytes = 1;     // bytes of one row inside one cell (the last cell may be short)
  int64_t rows_per_line = 1;  // byte rows per screen row
  int rows = 1;               // screen rows
  int64_t num_cells() const { return static_cast<int64_t>(cols) * rows; }
  // The first byte a cell stands for (its first byte row).
  int64_t CellBegin(int64_t cell) const {
    return begin + (cell / cols) * rows_per_line * row_bytes + (cell % cols) * cell_bytes;
  }
  // The cell holding `byte`, or -1 when it is outside the window.
  int64_t CellOf(int64_t byte) const;
  // Every cell holding a byte of [b, e), in increasing order.
  std::vector<int64_t> CellsOf(int64_t b, int64_t e) const;
};

// A raster of the window [begin, begin + bytes). `row_bytes` > 0: rows of that many bytes
// (the page's token row); 0: power-of-two rows that fit max_cols × max_rows cells.
Raster MakeRaster(int64_t begin, int64_t bytes, int64_t row_bytes, int max_cols, int max_rows);

// Classifies every cell by the byte it starts with.
std::vector<ByteInfo> ClassifyCells(const PageMap& map, const Raster& raster);

// "(L4 slot 0, block 1, head 0, token 17, byte 600 = V[88])"
std::string DescribeCoord(const PageMap& map, const ByteInfo& info);
// "KvLayout::offset(0, 1, 0, 17, 600) = 1,098,328"
std::string DescribeOffset(const ByteInfo& info);

}  // namespace kvsim::viz
