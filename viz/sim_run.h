// SimRun: a simulation the viewer runs itself, recorded step by step for the Steps and Block
// pool panels — either `kvsim schedule`'s step clock over a REQUESTS.jsonl (RunStepClock,
// optionally with the CPU offloading tier) or the loaded scenario through the discrete-event
// Engine (what `kvsim run` does for one point). Per step it keeps the step-log record (as the
// Steps panel's StepLog, classified like a log read from disk) and a compact snapshot of the
// pool: per GPU block its state (null, free, free and cached, in use), ref count and holder,
// and with a CPU tier per CPU slot its state (free, store in flight, ready, pinned by a load)
// and the request whose store filled it.
//
// When a snapshot is taken (the hooks sim/ offers): the step clock's observer runs once a
// record is complete — after the step's outputs are applied and its finished requests have
// freed their blocks (async: also after the next decision, which vLLM's async scheduler makes
// before it applies the outputs); the Engine's step-log sink runs at the end of a step, before
// its finished requests free their blocks. SimRun::timing_note() says which.
//
// Holders. The KV cache manager addresses requests by handle and does not say which handle is
// whose; the recorder reads every handle that can be live (a bound from the live-request count
// it sees) and matches a handle that starts holding blocks to a request admitted in the records
// with the same prompt length (and, for the step clock, the same prompt block hashes). A block
// whose holder could not be told is drawn "held, request unknown"; holders_note() counts them.
//
// Memory: snapshots are keyframes plus per-step deltas (viz/cell_history.h) under a byte budget
// (256 MiB by default); past it, later steps keep their record and counts but no snapshot.
//
// A SimRun is immutable once returned; it may be built on a worker thread and then handed to
// the UI thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "sim/instance/schedule_options.h"
#include "sim/instance/step_clock.h"
#include "sim/scenario_config.h"
#include "viz/cell_history.h"
#include "viz/pool_replay.h"  // BlockState
#include "viz/step_log.h"

namespace kvsim::viz {

// `kvsim schedule`'s flags and the step clock's configuration they make (shared with
// apps/kvsim/cmd_schedule.cc); the viewer bounds the pools at 2^24 blocks (kMaxViewerBlocks),
// since it keeps a cell per block for every step it records.
using kvsim::ScheduleOptions;
inline constexpr int64_t kMaxViewerBlocks = int64_t{1} << 24;

// One GPU block at one step, packed in 32 bits: state (2 bits), a mark (1 bit: filled from the
// CPU tier by a load this step's decision started), ref count (5 bits, saturating at 31) and
// holder (24 bits: index into SimRun::holders() plus one; 0 = none).
using GpuCell = uint32_t;
constexpr GpuCell PackGpuCell(BlockState s, int64_t ref, int64_t holder, bool loaded = false) {
  return (static_cast<uint32_t>(s) << 30) | (static_cast<uint32_t>(loaded) << 29) |
         (static_cast<uint32_t>(ref < 0    ? 0
                                : ref > 31 ? 31
                                           : ref)
          << 24) |
         static_cast<uint32_t>(holder < 0 || holder >= (1 << 24) - 1 ? 0 : holder + 1);
}
constexpr BlockState GpuCellState(GpuCell c) { return static_cast<BlockState>(c >> 30); }
constexpr bool GpuCellLoaded(GpuCell c) { return ((c >> 29) & 1) != 0; }
constexpr int GpuCellRef(GpuCell c) { return static_cast<int>((c >> 24) & 31); }
constexpr int32_t GpuCellHolder(GpuCell c) { return static_cast<int32_t>(c & 0xffffff) - 1; }
constexpr GpuCell MarkGpuCellLoaded(GpuCell c) { return c | (uint32_t{1} << 29); }

// One CPU slot at one step, packed in 64 bits: state (2 bits), a mark (1 bit: read by a load
// this step's decision started), load pins (5 bits, saturating), the request whose store
// filled it (24 bits: log request index plus one; 0 = unknown) and the offloaded block's index
// in that request (32 bits).
enum class CpuSlotState : uint8_t { kFree, kInFlight, kReady, kLoading };
using CpuCell = uint64_t;
constexpr CpuCell PackCpuCell(CpuSlotState s, int64_t pins, int64_t request, int64_t block,
                              bool loaded = false) {
  return (static_cast<uint64_t>(s) << 62) | (static_cast<uint64_t>(loaded) << 61) |
         (static_cast<uint64_t>(pins < 0    ? 0
                                : pins > 31 ? 31
                                            : pins)
          << 56) |
         (static_cast<uint64_t>(request < 0 || request >= (1 << 24) - 1 ? 0 : request + 1) << 32) |
         static_cast<uint64_t>(static_cast<uint32_t>(block < 0 ? 0 : block));
}
constexpr CpuSlotState CpuCellState(CpuCell c) { return static_cast<CpuSlotState>(c >> 62); }
constexpr bool CpuCellLoaded(CpuCell c) { return ((c >> 61) & 1) != 0; }
constexpr int CpuCellPins(CpuCell c) { return static_cast<int>((c >> 56) & 31); }
constexpr int32_t CpuCellRequest(CpuCell c) {
  return static_cast<int32_t>((c >> 32) & 0xffffff) - 1;
}
constexpr int64_t CpuCellBlock(CpuCell c) { return static_cast<int64_t>(c & 0xffffffffu); }
constexpr CpuCell MarkCpuCellLoaded(CpuCell c) { return c | (uint64_t{1} << 61); }

// A span of steps during which one KV handle held blocks without interruption, and whose
// request that was (a log request index, or −1 when it could not be told).
struct SimHolder {
  int32_t handle = -1;
  int32_t request = -1;
  int64_t prompt_tokens = 0;
  int64_t first_index = 0;  // log index of the first snapshot it appears in
  bool ambiguous = false;   // several admitted requests fitted; the earliest was taken
};

// Pool counts per step (every step, snapshot or not). The null block is not counted.
struct SimPoolCounts {
  int32_t free = 0;    // free, no hash
  int32_t cached = 0;  // free with a hash (evictable prefix cache)
  int32_t in_use = 0;  // ref count > 0
  int32_t cpu_free = 0, cpu_in_flight = 0, cpu_ready = 0, cpu_loading = 0;
  int32_t unknown_holder = 0;  // in-use blocks no read handle accounts for
};

struct SimRunLimits {
  int64_t snapshot_budget_bytes = int64_t{256} << 20;
  int64_t max_records = 2'000'000;  // step records kept (a bound on the log's memory)
};

class SimRun {
 public:
  enum class Kind : uint8_t { kSchedule, kScenario };

  Kind kind() const { return kind_; }
  // What ran, as the equivalent command.
  const std::string& description() const { return description_; }
  const std::string& timing_note() const { return timing_note_; }
  const StepLog& log() const { return log_; }
  int64_t num_steps() const { return static_cast<int64_t>(log_.steps.size()); }
  bool truncated() const { return truncated_; }  // records past max_records were dropped

  int64_t num_gpu_blocks() const { return gpu_.num_cells(); }  // including the null block
  int64_t num_cpu_slots() const { return cpu_.num_cells(); }   // 0: no CPU tier
  const std::vector<SimPoolCounts>& counts() const { return counts_; }

  // Log indices [0, num_snapshots()) have pool snapshots.
  int64_t num_snapshots() const { return num_snapshots_; }
  int64_t snapshot_bytes() const { return gpu_.bytes() + cpu_.bytes(); }
  int64_t snapshot_budget() const { return budget_; }
  int64_t num_keyframes() const { return gpu_.num_keyframes(); }
  // The cells at log index i (< num_snapshots()); see CellHistory::Get for `cells_step`.
  void GpuCells(int64_t i, std::vector<GpuCell>& cells, int64_t& cells_step) const {
    gpu_.Get(i, cells, cells_step);
  }
  void CpuCells(int64_t i, std::vector<CpuCell>& cells, int64_t& cells_step) const {
    cpu_.Get(i, cells, cells_step);
  }
  const std::vector<SimHolder>& holders() const { return holders_; }
  // "" when every holder was told, else how many were not (and why that can happen).
  std::string holders_note() const;
  // The log index of the first record whose step is ≥ `step` (the last record if none).
  int64_t IndexOfStep(int64_t step) const;

 private:
  friend class SimRecorder;
  SimRun(Kind kind, int64_t gpu_blocks, int64_t cpu_slots, int64_t budget)
      : kind_(kind), budget_(budget), gpu_(gpu_blocks, budget), cpu_(cpu_slots, budget) {}

  Kind kind_;
  std::string description_;
  std::string timing_note_;
  StepLog log_;
  bool truncated_ = false;
  int64_t budget_;
  CellHistory<GpuCell> gpu_;
  CellHistory<CpuCell> cpu_;
  int64_t num_snapshots_ = 0;
  std::vector<SimPoolCounts> counts_;
  std::vector<SimHolder> holders_;
  int64_t ambiguous_ = 0;
};

// Runs `kvsim schedule` with `options` (reads options.requests).
Result<std::unique_ptr<SimRun>> RunScheduleSimulation(const ScheduleOptions& options,
                                                      const SimRunLimits& limits = {});
// Runs `scenario` (a single engine; P/D scenarios are refused) through the Engine.
// `description` names it in the panels.
Result<std::unique_ptr<SimRun>> RunScenarioSimulation(const Scenario& scenario,
                                                      const std::string& description,
                                                      const SimRunLimits& limits = {});

}  // namespace kvsim::viz
