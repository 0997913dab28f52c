// The Block pool panel: the pool as a grid of blocks (free, cached, in use, coloured by
// request) with a time scrubber and hit-rate / occupancy plots. It needs the KV manager and
// replay API of issue 3 (core/block_pool.h, core/kv_cache_manager.h, sim/replay/), which has
// not landed on main yet; until it does the panel says so instead of drawing a made-up pool.
#include <imgui.h>

#include "sim/report/plan_report.h"
#include "viz/panel.h"

namespace kvsim::viz {
namespace {

class BlockPoolPanel : public IPanel {
 public:
  const char* id() const override { return "block_pool"; }
  const char* title() const override { return "Block pool"; }
  const char* help() const override {
    return "the block pool over time: free / cached / in use, coloured by request";
  }
  void Draw(ViewerContext& ctx) override {
    ImGui::PushTextWrapPos(0);
    ImGui::TextColored(ImVec4(1, 0.8f, 0.3f, 1),
                       "Waiting for the KV cache manager and replay API (issue 3: "
                       "core/block_pool.h, core/kv_cache_manager.h, sim/replay/).");
    ImGui::TextUnformatted(
        "This panel will replay a trace or run the scenario and draw the pool as a grid of "
        "blocks with a time scrubber, hit rate and occupancy plots. It draws nothing until "
        "that API exists, rather than an invented pool.");
    ImGui::PopTextWrapPos();
    if (ctx.plan->has_plan()) {
      const KvCachePlan& p = ctx.plan->plan();
      ImGui::Spacing();
      ImGui::Text("The pool this plan would give: %s blocks (block 0 is the null block), %zu "
                  "groups, %s bytes per block id.",
                  WithCommas(p.num_blocks).c_str(), p.groups.size(),
                  WithCommas(p.block_bytes).c_str());
    }
  }
};

}  // namespace

std::unique_ptr<IPanel> MakeBlockPoolPanel() { return std::make_unique<BlockPoolPanel>(); }

}  // namespace kvsim::viz
