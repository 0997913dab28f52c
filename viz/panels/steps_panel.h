// The Steps panel: a step log (the batches a vLLM scheduler formed, one record per step)
// drawn step by step. The log comes from a file (`kvsim schedule --step-log` or `kvsim run
// --step-log`) or from a simulation the panel runs itself (viz/sim_run.h): `kvsim schedule`'s
// step clock over a REQUESTS.jsonl with its flags (and the CPU tier), or the loaded scenario
// through the engine. Opened with none of these given (no --steps, --requests or --run), the
// panel runs the loaded scenario through the engine at once (a single-engine scenario; a P/D
// one keeps the empty state), so it opens on the scenario's own steps. A simulation is shared through the ViewerContext: the Block pool panel
// then shows its pool at the record selected here, and scrubbing either panel moves both.
// Runs started from the UI go to a worker thread; the panel polls it each frame. Per step, a bar
// of the tokens each request got, stacked in scheduler order and coloured by what the chunk
// was (prefill chunk, decode, recompute after a preemption); preemptions marked above the
// bar; free blocks and running/waiting counts as lines below; a scrubber and the selected
// step's record in full. Hover a segment for its request. Declared in a header so headless
// tests can drive it.
#pragma once

#include <future>
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
  // Where the log comes from.
  enum class Source : int { kFile = 0, kSchedule, kScenario };

  const char* id() const override { return "steps"; }
  const char* title() const override { return "Steps"; }
  const char* help() const override {
    return "a step log, or a simulation run here: tokens per request per step (prefill / "
           "decode / recompute), preemptions, free blocks; drag the scrubber, PgUp/PgDn (step), "
           "Home/End; hover a segment";
  }

  ~StepsPanel() override;

  // --- for tests ---
  // The log shown: the file's, or the simulation's (null before either).
  const StepLog* log() const { return log_ ? log_ : file_log_.get(); }
  int64_t selected() const { return selected_; }
  const std::string& error() const { return error_; }
  Source source() const { return source_; }
  bool running() const { return pending_.valid(); }
  Status Open(const std::string& path);
  // Picks where the log comes from; the step-log file drops the shared simulation (the Block
  // pool panel goes back to its trace replay).
  void SetSource(ViewerContext& ctx, Source source);
  // Starts a run of `source` (kSchedule: ctx.schedule; kScenario: the loaded plan's scenario)
  // on a worker thread; `wait` blocks until it is done and installs it in ctx.
  void Run(ViewerContext& ctx, Source source, bool wait = false);

  std::string error(const ViewerContext& ctx) const override {
    return !error_.empty() ? error_ : IPanel::error(ctx);
  }
  void Draw(ViewerContext& ctx) override;

 private:
  void DrawSource(ViewerContext& ctx);
  void DrawScheduleFlags(ViewerContext& ctx);
  void PollRun(ViewerContext& ctx, bool wait);
  void HandleKeys();
  void DrawBars(float width, float height);
  void DrawLines(float width, float height);
  void DrawRecord();

  bool started_ = false;
  Source source_ = Source::kFile;
  char path_[1024] = {0};
  char requests_[1024] = {0};
  std::string loaded_;
  std::string error_;
  std::unique_ptr<StepLog> file_log_;
  const StepLog* log_ = nullptr;  // file_log_'s or ctx.sim's, set each frame
  const SimRun* sim_ = nullptr;   // ctx.sim when it is the log shown
  std::future<Result<std::unique_ptr<SimRun>>> pending_;
  int64_t selected_ = 0;
  int window_ = 120;  // steps visible at once
};

}  // namespace kvsim::viz
