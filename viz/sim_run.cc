#include "viz/sim_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <unordered_map>
#include <utility>

#include "core/block_hash.h"
#include "core/kv_cache_manager.h"
#include "core/offload/offload_config.h"
#include "sim/engine.h"
#include "sim/metrics_output.h"
#include "sim/instance/offload_driver.h"

namespace kvsim::viz {
namespace {

Status Bad(const std::string& msg) { return Status::Error("bad_flags", "schedule: " + msg); }

}  // namespace


std::string SimRun::holders_note() const {
  int64_t unknown = 0;
  for (const SimHolder& h : holders_) unknown += h.request < 0 ? 1 : 0;
  int64_t unaccounted = 0;
  for (const SimPoolCounts& c : counts_)
    unaccounted = std::max<int64_t>(unaccounted, c.unknown_holder);
  std::string s;
  if (unknown > 0) {
    s += fmt::format("{} of {} block holders not matched to a request", unknown, holders_.size());
  }
  if (ambiguous_ > 0) {
    s += fmt::format("{}{} matched among look-alikes (same prompt)", s.empty() ? "" : "; ",
                     ambiguous_);
  }
  if (unaccounted > 0) {
    s += fmt::format("{}up to {} in-use blocks held by no handle read", s.empty() ? "" : "; ",
                     unaccounted);
  }
  return s;
}

int64_t SimRun::IndexOfStep(int64_t step) const {
  const auto& st = log_.steps;
  auto it = std::lower_bound(st.begin(), st.end(), step,
                             [](const StepRecord& r, int64_t s) { return r.step < s; });
  if (it == st.end()) return st.empty() ? 0 : static_cast<int64_t>(st.size()) - 1;
  return static_cast<int64_t>(it - st.begin());
}

// Builds a SimRun from the records and pools a simulation shows it, one step at a time.
//
// Handle bookkeeping (see the header): `handle_req_[h]` is the request a live handle belongs
// to (or −1), `open_[h]` the holder span the handle is in while it holds blocks. A request is
// *active* from its first scheduled chunk until it is released (finished, blocks freed); an
// active request without a handle is a candidate for a handle that starts holding blocks.
class SimRecorder {
 public:
  struct Oracle {
    // Prompt tokens of the simulator's request `id`.
    std::function<int64_t(int64_t id)> prompt_tokens;
    // The prompt's block hashes at the manager's hash block size, or empty (not known).
    std::function<std::span<const BlockHash>(int64_t id)> prompt_hashes;
  };

  // The run being built (the recorder is SimRun's one friend).
  static std::unique_ptr<SimRun> NewRun(SimRun::Kind kind, int64_t gpu_blocks, int64_t cpu_slots,
                                        int64_t budget, std::string description,
                                        std::string timing_note) {
    auto run = std::unique_ptr<SimRun>(new SimRun(kind, gpu_blocks, cpu_slots, budget));
    run->description_ = std::move(description);
    run->timing_note_ = std::move(timing_note);
    return run;
  }

  SimRecorder(SimRun* run, bool released_before_observe, Oracle oracle, const SimRunLimits& limits,
              std::vector<std::string> names)
      : run_(run),
        released_before_observe_(released_before_observe),
        oracle_(std::move(oracle)),
        limits_(limits),
        names_known_(!names.empty()) {
    run_->log_.request_ids = std::move(names);
    holder_of_block_.assign(static_cast<size_t>(run_->num_gpu_blocks()), -1);
  }

  void Observe(const ::kvsim::StepRecord& rec, const KvCacheManager& kv,
               const OffloadDriver* driver) {
    if (run_->num_steps() >= limits_.max_records) {
      run_->truncated_ = true;
      return;
    }
    StepRecord s = Convert(rec);
    const int64_t index = run_->num_steps();
    std::vector<int32_t> released =
        released_before_observe_ ? s.finished : std::exchange(prev_finished_, s.finished);
    for (const StepChunk& c : s.scheduled) {
      Activate(c.request);
      if (first_token_step_[static_cast<size_t>(c.request)] < 0 &&
          c.before + c.n >= prompt_tokens_[static_cast<size_t>(c.request)]) {
        first_token_step_[static_cast<size_t>(c.request)] = s.step;  // the chunk sampled
      }
    }
    for (const int32_t r : released) Release(r);
    run_->log_.steps.push_back(std::move(s));

    // Every handle below the most requests ever live at once exists (handles are reused
    // before new ones are made); the step clock frees its finished requests before the
    // observer runs, so they count too.
    live_bound_ = std::max<int64_t>(
        live_bound_,
        kv.num_live_requests() +
            (released_before_observe_ ? static_cast<int64_t>(rec.finished.size()) : 0));
    ReadHandles(kv, index);
    // A request scheduled in this step holds blocks (it may have lost them since only to a
    // preemption by the next decision, async): if its handle holds none, the match that gave
    // it that handle was wrong (look-alike prompts) or stale. It is matched again.
    for (const StepChunk& c : run_->log_.steps.back().scheduled) {
      const int32_t h = handle_of_[static_cast<size_t>(c.request)];
      if (h >= 0 && open_[static_cast<size_t>(h)] < 0 && active_[static_cast<size_t>(c.request)]) {
        Unmap(h);
      }
    }
    MatchHandles(kv);

    SimPoolCounts counts;
    Cells(kv, driver, counts);
    if (driver) MarkLoads(rec, kv, *driver);
    run_->counts_.push_back(counts);
    // The budget holds for both histories together: stop before a step that could pass it
    // (at worst a keyframe of each).
    const int64_t worst = static_cast<int64_t>(gpu_cells_.size() * sizeof(GpuCell) +
                                               cpu_cells_.size() * sizeof(CpuCell)) +
                          64;
    if (run_->num_snapshots_ == index && run_->snapshot_bytes() + worst <= run_->budget_ &&
        run_->gpu_.Push(gpu_cells_)) {
      if (run_->cpu_.Push(cpu_cells_)) {
        ++run_->num_snapshots_;
      }
    }
  }

  void Finish(bool has_summary) {
    ClassifyChunks(&run_->log_, first_token_step_);
    run_->log_.has_summary = has_summary;
    run_->holders_ = std::move(holders_);
  }

 private:
  int32_t LogIndex(int64_t id) {
    int32_t r;
    if (names_known_) {
      r = static_cast<int32_t>(id);
    } else {
      auto [it, inserted] = index_.emplace(id, static_cast<int32_t>(run_->log_.request_ids.size()));
      if (inserted) run_->log_.request_ids.push_back(std::to_string(id));
      r = it->second;
    }
    const auto n = static_cast<size_t>(r) + 1;
    if (sim_id_.size() < n) {
      sim_id_.resize(n, -1);
      prompt_tokens_.resize(n, 0);
      first_token_step_.resize(n, -1);
      active_.resize(n, 0);
      handle_of_.resize(n, -1);
    }
    if (sim_id_[static_cast<size_t>(r)] < 0) {
      sim_id_[static_cast<size_t>(r)] = id;
      prompt_tokens_[static_cast<size_t>(r)] = oracle_.prompt_tokens(id);
    }
    return r;
  }

  StepRecord Convert(const ::kvsim::StepRecord& rec) {
    StepRecord s;
    s.step = rec.step;
    for (const auto& c : rec.scheduled) {
      s.scheduled.push_back(
          {LogIndex(c.request), c.num_tokens, c.before, c.hit, ChunkKind::kPrefill});
    }
    for (const int32_t r : rec.preempted) s.preempted.push_back(LogIndex(r));
    for (const int32_t r : rec.finished) s.finished.push_back(LogIndex(r));
    s.num_free_blocks = rec.num_free_blocks;
    s.running = rec.running;
    s.waiting = rec.waiting;
    s.t_start_ns = rec.t_start_ns;
    s.t_end_ns = rec.t_end_ns;
    if (rec.has_offload) {
      s.cpu_blocks_used = rec.cpu_blocks_used;
      s.cpu_blocks_ready = rec.cpu_blocks_ready;
      for (const auto& l : rec.cpu_loads)
        s.cpu_load_blocks += static_cast<int64_t>(l.block_indices.size());
      for (const auto& l : rec.cpu_stores)
        s.cpu_store_blocks += static_cast<int64_t>(l.block_indices.size());
      for (const int32_t r : rec.loading) s.loading.push_back(LogIndex(r));
    }
    return s;
  }

  void Activate(int32_t r) {
    if (active_[static_cast<size_t>(r)]) return;
    active_[static_cast<size_t>(r)] = 1;
    if (handle_of_[static_cast<size_t>(r)] < 0) candidates_.insert(r);
  }

  void Release(int32_t r) {
    active_[static_cast<size_t>(r)] = 0;
    candidates_.erase(r);
    const int32_t h = handle_of_[static_cast<size_t>(r)];
    if (h < 0) return;
    handle_of_[static_cast<size_t>(r)] = -1;
    handle_req_[static_cast<size_t>(h)] = -1;
    open_[static_cast<size_t>(h)] = -1;
  }

  void Unmap(int32_t h) {
    const int32_t r = handle_req_[static_cast<size_t>(h)];
    if (r < 0) return;
    handle_req_[static_cast<size_t>(h)] = -1;
    handle_of_[static_cast<size_t>(r)] = -1;
    if (active_[static_cast<size_t>(r)]) candidates_.insert(r);
  }

  // Reads every handle below the bound: which hold blocks, and the holder span of each.
  void ReadHandles(const KvCacheManager& kv, int64_t index) {
    const auto bound = static_cast<size_t>(live_bound_);
    if (handle_req_.size() < bound) {
      handle_req_.resize(bound, -1);
      open_.resize(bound, -1);
    }
    unmatched_.clear();
    holding_.clear();
    closed_unknown_.clear();
    for (size_t h = 0; h < bound; ++h) {
      const RequestHandle hh{static_cast<int32_t>(h)};
      bool any = false;
      for (int g = 0; g < kv.num_groups() && !any; ++g) {
        for (const BlockId b : kv.blocks(hh, g)) any |= b > kNullBlock;
      }
      if (!any) {
        // Preempted (keeps its handle) or gone. A span nobody was told for is tried once
        // more below: async runs admit in a decision recorded one step later, and the
        // request may be preempted by then.
        if (open_[h] >= 0 && holders_[static_cast<size_t>(open_[h])].request < 0) {
          closed_unknown_.push_back({static_cast<int32_t>(h), open_[h]});
        }
        open_[h] = -1;
        continue;
      }
      const int64_t prompt = kv.num_prompt_tokens(hh);
      const int32_t r = handle_req_[h];
      if (r >= 0 && prompt_tokens_[static_cast<size_t>(r)] != prompt) {
        Unmap(static_cast<int32_t>(h));  // the handle changed hands between two reads
        open_[h] = -1;
      }
      if (open_[h] >= 0 && holders_[static_cast<size_t>(open_[h])].prompt_tokens != prompt) {
        open_[h] = -1;
      }
      if (open_[h] < 0) {
        open_[h] = static_cast<int32_t>(holders_.size());
        holders_.push_back({static_cast<int32_t>(h), handle_req_[h], prompt, index, false});
      }
      holding_.push_back(static_cast<int32_t>(h));
      if (handle_req_[h] < 0) unmatched_.push_back(static_cast<int32_t>(h));
    }
  }

  bool HashesAgree(const KvCacheManager& kv, int32_t h, int32_t r) const {
    if (!oracle_.prompt_hashes) return true;
    const auto want = oracle_.prompt_hashes(sim_id_[static_cast<size_t>(r)]);
    const auto have = kv.block_hashes(RequestHandle{h});
    const size_t n = std::min(want.size(), have.size());
    return std::equal(want.begin(), want.begin() + static_cast<std::ptrdiff_t>(n), have.begin());
  }

  // A handle that holds blocks but is nobody's yet: the earliest active request without a
  // handle whose prompt fits. Async runs admit requests in a decision whose record comes one
  // step later; their holders are named then (the holder span is patched).
  void MatchHandles(const KvCacheManager& kv) {
    for (const int32_t h : unmatched_) Match(kv, h, open_[static_cast<size_t>(h)]);
    // A handle whose request is still unknown stopped holding blocks: its request (now in
    // the records) was preempted; the handle's prompt and hashes are still the request's.
    for (const auto& [h, t] : closed_unknown_) {
      if (kv.num_prompt_tokens(RequestHandle{h}) ==
          holders_[static_cast<size_t>(t)].prompt_tokens) {
        Match(kv, h, t);
      }
    }
  }

  void Match(const KvCacheManager& kv, int32_t h, int32_t holder_index) {
    const int64_t prompt = kv.num_prompt_tokens(RequestHandle{h});
    int32_t pick = -1;
    int fits = 0;
    for (const int32_t r : candidates_) {
      if (prompt_tokens_[static_cast<size_t>(r)] != prompt || !HashesAgree(kv, h, r)) continue;
      if (pick < 0) pick = r;
      ++fits;
    }
    if (pick < 0) return;
    handle_req_[static_cast<size_t>(h)] = pick;
    handle_of_[static_cast<size_t>(pick)] = h;
    candidates_.erase(pick);
    SimHolder& holder = holders_[static_cast<size_t>(holder_index)];
    holder.request = pick;
    if (fits > 1) {
      holder.ambiguous = true;
      ++run_->ambiguous_;
    }
  }

  void Cells(const KvCacheManager& kv, const OffloadDriver* driver, SimPoolCounts& counts) {
    const int64_t n = run_->num_gpu_blocks();
    std::fill(holder_of_block_.begin(), holder_of_block_.end(), -1);
    for (const int32_t h : holding_) {
      const int32_t t = open_[static_cast<size_t>(h)];
      for (int g = 0; g < kv.num_groups(); ++g) {
        for (const BlockId b : kv.blocks(RequestHandle{h}, g)) {
          if (b <= kNullBlock) continue;
          int32_t& cur = holder_of_block_[static_cast<size_t>(b)];
          if (cur < 0 || t < cur) cur = t;  // shared: the oldest holder span
        }
      }
    }
    const BlockPool& pool = kv.pool();
    gpu_cells_.resize(static_cast<size_t>(n));
    gpu_cells_[0] = PackGpuCell(BlockState::kNull, 0, -1);
    for (int64_t b = 1; b < n; ++b) {
      const auto id = static_cast<BlockId>(b);
      const int32_t ref = pool.ref_cnt(id);
      BlockState st;
      if (ref > 0) {
        st = BlockState::kInUse;
        ++counts.in_use;
        if (holder_of_block_[static_cast<size_t>(b)] < 0) ++counts.unknown_holder;
      } else if (pool.is_cached(id)) {
        st = BlockState::kCached;
        ++counts.cached;
      } else {
        st = BlockState::kFree;
        ++counts.free;
      }
      gpu_cells_[static_cast<size_t>(b)] = PackGpuCell(
          st, ref, st == BlockState::kInUse ? holder_of_block_[static_cast<size_t>(b)] : -1);
    }

    const int64_t slots = run_->num_cpu_slots();
    cpu_cells_.assign(static_cast<size_t>(slots), PackCpuCell(CpuSlotState::kFree, 0, -1, 0));
    if (driver == nullptr || slots == 0) return;
    const OffloadConnector& conn = driver->connector();
    conn.tier().policy().ForEach([&](const OffloadKey& key, const CpuBlock& blk) {
      if (blk.slot < 0 || blk.slot >= slots) return;
      const CpuSlotState st = blk.ref_cnt < 0    ? CpuSlotState::kInFlight
                              : blk.ref_cnt == 0 ? CpuSlotState::kReady
                                                 : CpuSlotState::kLoading;
      int64_t req = -1, block = 0;
      if (auto o = conn.origin(key)) {
        req = LogIndex(o->request);
        block = o->block_index;
      }
      cpu_cells_[static_cast<size_t>(blk.slot)] = PackCpuCell(st, blk.ref_cnt, req, block);
    });
    for (const CpuCell c : cpu_cells_) {
      switch (CpuCellState(c)) {
        case CpuSlotState::kFree:
          ++counts.cpu_free;
          break;
        case CpuSlotState::kInFlight:
          ++counts.cpu_in_flight;
          break;
        case CpuSlotState::kReady:
          ++counts.cpu_ready;
          break;
        case CpuSlotState::kLoading:
          ++counts.cpu_loading;
          break;
      }
    }
  }

  // Marks the CPU slots the step's decision loads from and the GPU blocks they fill: with
  // instant copies a load is over by the time the snapshot is taken, so without the mark the
  // step that loads would look like any other. Slots are found by the loading request's
  // offload keys (its block hashes at the offloaded block's last hash block).
  void MarkLoads(const ::kvsim::StepRecord& rec, const KvCacheManager& kv,
                 const OffloadDriver& driver) {
    const OffloadConnector& conn = driver.connector();
    const OffloadConnectorConfig& cc = conn.config();
    const int64_t f = cc.block_size_factor;
    const int64_t per_key = cc.offloaded_block_size(0) / std::max<int64_t>(1, cc.hash_block_size);
    if (per_key < 1) return;
    for (const auto& load : rec.cpu_loads) {
      const int32_t r = LogIndex(load.request);
      const int32_t h = handle_of_[static_cast<size_t>(r)];
      if (h < 0) continue;
      keys_.clear();
      ExtendOffloadKeys(kv.block_hashes(RequestHandle{h}), per_key, 0, keys_);
      const auto table = kv.blocks(RequestHandle{h}, 0);
      for (const int64_t i : load.block_indices) {
        if (i < 0 || i >= static_cast<int64_t>(keys_.size())) continue;
        if (const CpuBlock* blk = conn.tier().Find(keys_[static_cast<size_t>(i)])) {
          if (blk->slot >= 0 && blk->slot < static_cast<int64_t>(cpu_cells_.size())) {
            CpuCell& c = cpu_cells_[static_cast<size_t>(blk->slot)];
            c = MarkCpuCellLoaded(c);
          }
        }
        for (int64_t j = i * f; j < (i + 1) * f && j < static_cast<int64_t>(table.size()); ++j) {
          const BlockId b = table[static_cast<size_t>(j)];
          if (b > kNullBlock) {
            GpuCell& c = gpu_cells_[static_cast<size_t>(b)];
            c = MarkGpuCellLoaded(c);
          }
        }
      }
    }
  }

  SimRun* run_;
  bool released_before_observe_;
  Oracle oracle_;
  SimRunLimits limits_;
  bool names_known_;  // request ids are log indices (the step clock's input order)
  std::unordered_map<int64_t, int32_t> index_;  // simulator id → log index (Engine)
  // Per log request index:
  std::vector<int64_t> sim_id_;
  std::vector<int64_t> prompt_tokens_;
  std::vector<int64_t> first_token_step_;
  std::vector<uint8_t> active_;
  std::vector<int32_t> handle_of_;
  std::set<int32_t> candidates_;  // active, no handle; ordered = earliest first
  // Per handle:
  std::vector<int32_t> handle_req_;
  std::vector<int32_t> open_;
  int64_t live_bound_ = 0;
  std::vector<int32_t> prev_finished_;
  std::vector<SimHolder> holders_;
  std::vector<int32_t> unmatched_, holding_;
  std::vector<std::pair<int32_t, int32_t>> closed_unknown_;  // (handle, holder span)
  std::vector<int32_t> holder_of_block_;
  std::vector<GpuCell> gpu_cells_;
  std::vector<CpuCell> cpu_cells_;
  std::vector<OffloadKey> keys_;
};

Result<std::unique_ptr<SimRun>> RunScheduleSimulation(const ScheduleOptions& options,
                                                      const SimRunLimits& limits) {
  auto cfg = MakeStepClockConfig(options, kMaxViewerBlocks);
  if (!cfg.ok()) return cfg.status();
  if (options.requests.empty()) return Bad("no REQUESTS.jsonl given");
  auto requests = ReadStepRequests(options.requests, 0);
  if (!requests.ok()) return requests.status();
  const std::vector<StepRequest>& reqs = requests.value();
  const int64_t cpu_slots = cfg->offload ? cfg->offload->tier.num_blocks : 0;
  auto run = SimRecorder::NewRun(
      SimRun::Kind::kSchedule, cfg->kv.num_blocks, cpu_slots, limits.snapshot_budget_bytes,
      options.CommandLine(),
      options.async_scheduling
          ? "pool after step k's outputs and the decision of step k+1 (async scheduling decides "
            "before it applies outputs), finished requests' blocks freed"
          : "pool after step k's outputs, finished requests' blocks freed");
  // Block hashes of every prompt, to tell apart requests with equally long prompts.
  std::vector<std::vector<BlockHash>> hashes(reqs.size());
  const int64_t hash_block = cfg->kv.resolved_hash_block_size();
  for (size_t i = 0; i < reqs.size(); ++i) {
    RequestBlockHasher hasher;
    hasher.Reset(hash_block);
    hasher.Append(reqs[i].tokens);
    hashes[i] = hasher.hashes();
  }
  SimRecorder::Oracle oracle;
  oracle.prompt_tokens = [&](int64_t id) {
    return static_cast<int64_t>(reqs[static_cast<size_t>(id)].tokens.size());
  };
  oracle.prompt_hashes = [&](int64_t id) -> std::span<const BlockHash> {
    return hashes[static_cast<size_t>(id)];
  };
  std::vector<std::string> names;
  for (const StepRequest& r : reqs) names.push_back(r.id);
  SimRecorder rec(run.get(), /*released_before_observe=*/true, oracle, limits, std::move(names));
  StepClockConfig config = std::move(cfg.value());
  config.observer = [&](const ::kvsim::StepRecord& r, const KvCacheManager& kv,
                        const OffloadDriver* d) { rec.Observe(r, kv, d); };
  auto summary = RunStepClock(reqs, config, nullptr);
  if (!summary.ok()) return summary.status();
  rec.Finish(/*has_summary=*/true);
  if (run->num_steps() == 0) return Status::Error("empty_run", "the run made no steps");
  return run;
}

Result<std::unique_ptr<SimRun>> RunScenarioSimulation(const Scenario& scenario,
                                                      const std::string& description,
                                                      const SimRunLimits& limits) {
  if (scenario.cluster.enabled) {
    return Status::Error("unsupported",
                         "a P/D scenario runs as a cluster of engines; the Steps panel runs a "
                         "single engine (kvsim run shows the cluster's results)");
  }
  auto engine_or = Engine::Create(scenario);
  if (!engine_or.ok()) return engine_or.status();
  Engine& engine = *engine_or.value();
  if (engine.kv().config().num_blocks > (int64_t{1} << 24)) {
    return Status::Error("too_large", "the viewer records pools of at most 2^24 blocks");
  }
  const int64_t cpu_slots =
      engine.offload() != nullptr ? engine.offload()->connector().tier().num_blocks() : 0;
  if (cpu_slots > (int64_t{1} << 24)) {
    return Status::Error("too_large", "the viewer records CPU tiers of at most 2^24 blocks");
  }
  auto run = SimRecorder::NewRun(
      SimRun::Kind::kScenario, engine.kv().config().num_blocks, cpu_slots,
      limits.snapshot_budget_bytes,
      description,
      scenario.sim.scheduler.async_scheduling && scenario.cache.num_speculative_tokens == 0
          ? "pool at the end of step k, after the decision of step k+1 (async), before finished "
            "requests free their blocks"
          : "pool at the end of step k, before finished requests free their blocks");
  SimRecorder::Oracle oracle;
  oracle.prompt_tokens = [&](int64_t id) {
    const auto& recs = engine.metrics().records();
    return id >= 0 && static_cast<size_t>(id) < recs.size()
               ? recs[static_cast<size_t>(id)].prompt_tokens
               : int64_t{-1};
  };
  SimRecorder rec(run.get(), /*released_before_observe=*/false, oracle, limits, {});
  const StepRecordSink sink = [&](const ::kvsim::StepRecord& r) {
    rec.Observe(r, engine.kv(), engine.offload());
  };
  engine.SetStepLog(&sink);
  engine.Run();
  rec.Finish(/*has_summary=*/false);
  if (run->num_steps() == 0) {
    // The reason `kvsim run` prints for the same scenario.
    const std::string why = DescribeRejections(engine);
    return Status::Error("empty_run", "the scenario ran no steps: " +
                                          (why.empty() ? std::string("no request arrived") : why));
  }
  return run;
}

}  // namespace kvsim::viz
