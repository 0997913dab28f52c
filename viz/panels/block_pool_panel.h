// The Block pool panel: a grid of KV blocks (free, cached, in use coloured by request) with a
// scrubber and plots over time, in one of two modes.
//  * A simulation is loaded (ViewerContext::sim, run by the Steps panel or the command line):
//    the simulation's GPU pool at the record the Steps panel selects (scrubbing here moves
//    there too), and with a CPU offloading tier a second strip of the tier's slots (free,
//    store in flight, ready, pinned by a load); plots of both pools per step.
//  * Otherwise: a request trace replayed through core's KvCacheManager on the live plan's
//    groups and pool (viz/pool_replay.h), scrubbed request by request, with hit-rate plots.
// Large pools are drawn with several blocks per cell (the cell takes the "busiest" state of
// its blocks: in use > cached > free). Declared in a header so headless tests can drive it.
#pragma once

#include <imgui.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "viz/colors.h"
#include "viz/panel.h"
#include "viz/pool_replay.h"
#include "viz/sim_run.h"
#include "viz/sweep_table.h"

namespace kvsim::viz {

// A grid of cells drawn square-ish into a region, several blocks per cell when there are more
// blocks than 6-pixel cells. The cell colours are cached under a key the caller changes when
// the blocks change.
struct CellGrid {
  // Fills block b's colour, rank (the busiest rank of a cell's blocks wins) and whether it gets
  // a white centre mark.
  using BlockFn = std::function<void(int64_t b, Rgba* colour, int* rank, bool* mark)>;
  // Draws `n` blocks at the cursor into width × height (advancing the cursor by the rows
  // used); returns the first block of the hovered cell, or −1. `min_side` caps cell height
  // growth for strips.
  int64_t Draw(const char* id, int64_t n, float width, float height, int64_t key,
               const BlockFn& block);
  int64_t per_cell() const { return per_cell_; }

 private:
  int64_t key_ = -1;
  int64_t per_cell_ = 1;
  std::vector<Rgba> colour_;
  std::vector<uint8_t> mark_;
};

class BlockPoolPanel : public IPanel {
 public:
  const char* id() const override { return "block_pool"; }
  const char* title() const override { return "Block pool"; }
  const char* help() const override {
    return "the Steps panel's simulated pool at its selected step, or else a trace replayed "
           "on this plan; drag the scrubber or press Space (play), PgUp/PgDn (step), Home/End; "
           "hover a block";
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
  // Simulation mode.
  void DrawSim(ViewerContext& ctx);
  void DrawSimGrids(const SimRun& sim, int64_t index, float width, float height);
  void DrawSimLegend(const SimRun& sim);
  void DrawSimPlots(const SimRun& sim, int64_t index, float width, float height);

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
  CellGrid grid_;
  // Simulation mode: the cells of the step shown (moved forward by deltas while scrubbing).
  const SimRun* sim_seen_ = nullptr;
  std::vector<GpuCell> gpu_cells_;
  int64_t gpu_cells_step_ = -1;
  std::vector<CpuCell> cpu_cells_;
  int64_t cpu_cells_step_ = -1;
  CellGrid cpu_grid_;
  std::vector<int32_t> legend_requests_;     // requests holding blocks at the step shown
  ChartData sim_gpu_chart_, sim_cpu_chart_;  // built once per simulation
};

}  // namespace kvsim::viz
