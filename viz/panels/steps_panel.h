// The Steps panel: a step log (the batches a vLLM scheduler formed, one record per step;
// `kvsim schedule --step-log` or `kvsim run --step-log`) drawn step by step. Per step, a bar
// of the tokens each request got, stacked in scheduler order and coloured by what the chunk
// was (prefill chunk, decode, recompute after a preemption); preemptions marked above the
// bar; free blocks and running/waiting counts as lines below; a scrubber and the selected
// step's record in full. Hover a segment for its request. Declared in a header so headless
// tests can drive it.
#pragma once

#include <memory>
#include <string>

#include "viz/colors.h"
#include "viz/panel.h"
#include "viz/step_log.h"

namespace kvsim::viz {

namespace steps_palette {
constexpr Rgba kPrefill = MakeRgba(66, 133, 244);    // blue
constexpr Rgba kDecode = MakeRgba(52, 168, 83);      // green
constexpr Rgba kRecompute = MakeRgba(244, 160, 36);  // orange
constexpr Rgba kPreempt = MakeRgba(234, 67, 53);     // red
}  // namespace steps_palette

Rgba ChunkColour(ChunkKind k);

class StepsPanel : public IPanel {
 public:
  const char* id() const override { return "steps"; }
  const char* title() const override { return "Steps"; }
  const char* help() const override {
    return "a step log: tokens per request per step (prefill / decode / recompute), "
           "preemptions, free blocks; drag the scrubber, PgUp/PgDn (step), Home/End; hover a "
           "segment";
  }

  // --- for tests ---
  const StepLog* log() const { return log_.get(); }
  int64_t selected() const { return selected_; }
  const std::string& error() const { return error_; }
  Status Open(const std::string& path);

  std::string error(const ViewerContext& ctx) const override {
    return !error_.empty() ? error_ : IPanel::error(ctx);
  }
  void Draw(ViewerContext& ctx) override;

 private:
  void HandleKeys();
  void DrawBars(float width, float height);
  void DrawLines(float width, float height);
  void DrawRecord();

  char path_[1024] = {0};
  std::string loaded_;
  std::string error_;
  std::unique_ptr<StepLog> log_;
  int64_t selected_ = 0;
  int window_ = 120;  // steps visible at once
};

}  // namespace kvsim::viz
