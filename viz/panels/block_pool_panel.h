// The Block pool panel: replay a request trace through core's KvCacheManager on the live
// plan's groups and pool, and show the pool at any request of the trace as a grid of blocks
// (free, cached, in use coloured by request), with a time scrubber and plots of hit rate and
// occupancy over time. Large pools are drawn with several blocks per cell (the cell takes the
// "busiest" state of its blocks: in use > cached > free). Declared in a header so headless
// tests can drive it.
#pragma once

#include <imgui.h>

#include <memory>
#include <string>
#include <vector>

#include "viz/colors.h"
#include "viz/panel.h"
#include "viz/pool_replay.h"

namespace kvsim::viz {

class BlockPoolPanel : public IPanel {
 public:
  const char* id() const override { return "block_pool"; }
  const char* title() const override { return "Block pool"; }
  const char* help() const override {
    return "a trace replayed through the KV cache manager on this plan; drag the scrubber or "
           "press Space (play), PgUp/PgDn (step), Home/End; hover a block";
  }

  // --- for tests ---
  const PoolReplay* replay() const { return replay_.get(); }
  int64_t time() const { return time_; }
  bool playing() const { return playing_; }
  const std::string& error() const { return error_; }
  void set_capacity(int64_t blocks) { capacity_ = blocks; }

  std::string error(const ViewerContext& ctx) const override {
    return !error_.empty() ? error_ : IPanel::error(ctx);
  }
  void Draw(ViewerContext& ctx) override;

 private:
  void DrawControls(PlanModel& pm);
  // Rebuilds the replay for the plan, trace, capacity and concurrency now selected.
  void Load(const KvCachePlan& plan);
  void HandleKeys();
  void DrawScrubber();
  Rgba BlockColour(BlockId b, bool* hit) const;
  void DrawGrid(float width, float height);
  void DrawLegendRow();
  void DrawPlots(float width, float height);

  std::vector<std::string> trace_names_;
  char path_[1024] = {0};
  int64_t capacity_ = 0;
  int64_t concurrency_ = 8;
  std::string loaded_key_;
  std::string error_;
  std::unique_ptr<PoolReplay> replay_;
  int64_t time_ = -1;
  bool playing_ = false;
  float play_acc_ = 0;
  int64_t cells_key_ = -1;
  std::vector<Rgba> cell_colour_;
  std::vector<uint8_t> cell_hit_;
};

}  // namespace kvsim::viz
