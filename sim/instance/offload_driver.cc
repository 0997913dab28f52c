#include "sim/instance/offload_driver.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/vllm_semantics.h"

namespace kvsim {

int64_t CopyLinkModel::JobNanos(int64_t num_blocks) const {
  const double wire = static_cast<double>(num_blocks) * static_cast<double>(block_bytes) /
                      std::max(bytes_per_ns, 1e-9);
  return latency_ns + kernels_per_job * launch_ns + static_cast<int64_t>(std::ceil(wire));
}

namespace {
bool HasWindowGroups(const OffloadConnectorConfig& config) {
  return std::any_of(config.groups.begin(), config.groups.end(),
                     [](const OffloadGroupConfig& g) { return g.window_blocks > 0; });
}
}  // namespace

OffloadDriver::OffloadDriver(const OffloadConnectorConfig& config, const KvCacheManager* kv,
                             XferTiming timing)
    : connector_(config), kv_(kv), timing_(timing), has_window_groups_(HasWindowGroups(config)) {}

OffloadDriver::OffloadDriver(const OffloadConnectorConfig& config, const KvCacheManager* kv,
                             const CopyLinkModel& link)
    : OffloadDriver(config, kv, XferTiming::kInstant) {
  timed_ = true;
  link_ = link;
}

void OffloadDriver::Submit(PendingJob& j, int64_t now, int64_t num_blocks) {
  int64_t& free_at = (j.is_load || link_.shared_link) ? h2d_free_ : d2h_free_;
  const int64_t start = std::max(now, free_at);
  j.output_step = start + link_.JobNanos(num_blocks);
  j.submitted = true;
  free_at = j.output_step;
}

int64_t OffloadDriver::NextCompletion() const {
  int64_t t = -1;
  for (const PendingJob& j : pending_)
    if (j.submitted && (t < 0 || j.output_step < t)) t = j.output_step;
  return t;
}

OffloadRequestView OffloadDriver::View(const SimRequest& r) const {
  OffloadRequestView v;
  v.id = r.id.value();
  v.num_tokens = r.num_tokens;  // tokens in flight (async) are not known to the connector
  v.num_prompt_tokens = r.num_prompt_tokens;
  v.num_computed_tokens = r.num_computed_tokens;
  // A released request keeps the keys the connector already derived from its hashes.
  if (r.kv_handle != kNoRequestHandle) v.block_hashes = kv_->block_hashes(r.kv_handle);
  return v;
}

void OffloadDriver::RequestAdded(const SimRequest& r) {
  if (connector_.config().semantics == VllmSemantics::kLatest) {
    unfinished_tracked_.insert(r.id.value());
  }
}

ExternalHit OffloadDriver::MatchedTokens(const SimRequest& r, int64_t gpu_hit_tokens) {
  unfinished_tracked_.insert(r.id.value());
  const CpuHit hit = connector_.Lookup(View(r), gpu_hit_tokens);
  return {hit.deferred, hit.tokens};
}

void OffloadDriver::AfterAlloc(const SimRequest& r, int64_t gpu_hit_tokens, int64_t ext_tokens) {
  // A sliding-window or Mamba group's table holds null blocks where the hit needs no KV (before
  // the window, Mamba padding): the load fills only the blocks after them, whose sources the
  // lookup's window scan found ready. Loading from g / bs would pin CPU blocks no lookup
  // checked, which may have been evicted since.
  std::vector<int64_t> first_pending;
  if (has_window_groups_ && ext_tokens > 0 && r.kv_handle != kNoRequestHandle) {
    for (int g = 0; g < kv_->num_groups(); ++g) {
      const std::span<const BlockId> b = kv_->blocks(r.kv_handle, g);
      const int64_t bs = connector_.config().groups[static_cast<size_t>(g)].gpu_block_size;
      int64_t i = gpu_hit_tokens / bs;
      while (i < static_cast<int64_t>(b.size()) && b[static_cast<size_t>(i)] == kNullBlock) ++i;
      first_pending.push_back(i);
    }
  }
  std::optional<LoadJob> job =
      connector_.OnAllocated(View(r), gpu_hit_tokens, ext_tokens, first_pending);
  if (!job) return;
  if (has_window_groups_ && r.kv_handle != kNoRequestHandle) {
    allocated_for_load_.push_back(r.kv_handle);
  }
  blocks_loaded_ += static_cast<int64_t>(job->keys.size());
  // Started in this step's execution, reported with its output (or the next one's).
  pending_.push_back({job->id, r.id.value(), /*is_load=*/true,
                      step_ + (timing_ == XferTiming::kNextStep ? 1 : 0), {}, {}, true});
  if (timed_) Submit(pending_.back(), step_, static_cast<int64_t>(job->keys.size()));
  record_.loads.push_back({r.id.value(), job->block_indices});
}

bool OffloadDriver::LoadFinished(const SimRequest& r) {
  return finished_recving_.erase(r.id.value()) != 0;
}

void OffloadDriver::BeginDecision(int64_t step) {
  step_ = step;
  record_ = OffloadStepRecord{};
  flush_until_ = 0;
  if (timed_) {
    // The worker starts the stores the previous decision planned as this step runs.
    for (PendingJob& j : pending_)
      if (!j.submitted) Submit(j, step, static_cast<int64_t>(j.block_indices.size()));
  }
}

void OffloadDriver::Flush(OffloadJobId id) {
  for (PendingJob& j : pending_) {
    if (j.id != id) continue;
    if (timed_) {
      // The worker waits for the copy before the step's forward pass (handle_preemptions):
      // the step cannot start its GPU part before the copy ends.
      if (j.submitted) flush_until_ = std::max(flush_until_, j.output_step);
    } else {
      j.output_step = std::min(j.output_step, step_);
    }
  }
}

OffloadStepRecord OffloadDriver::EndDecision(const StepPlan& plan,
                                             std::span<SimRequest* const> finished) {
  // Preempted requests: their in-flight stores are waited for before this step runs.
  for (const SimRequest* p : plan.preempted) {
    for (PendingJob& j : pending_)
      if (j.request == p->id.value() && !j.is_load) Flush(j.id);
  }
  // A finished request's pending store whose source block this decision handed out again.
  for (const auto& [block, job] : source_blocks_)
    if (kv_->pool().ref_cnt(block) > 0) Flush(job);
  if (has_window_groups_) {
    // Window-group source blocks are watched while their request runs, so a reference count
    // cannot tell reuse: what counts is the blocks this decision handed to requests (vLLM
    // fences each request's new block ids against _block_id_to_pending_jobs).
    for (const SimRequest* p : plan.preempted) table_len_.erase(p->id.value());
    if (!window_source_blocks_.empty()) {
      std::unordered_set<BlockId> handed_out;
      auto add = [&](RequestHandle h, const std::vector<size_t>* from) {
        for (int g = 0; g < kv_->num_groups(); ++g) {
          const std::span<const BlockId> b = kv_->blocks(h, g);
          for (size_t i = from ? (*from)[static_cast<size_t>(g)] : 0; i < b.size(); ++i)
            handed_out.insert(b[i]);
        }
      };
      for (const ScheduledChunk& c : plan.scheduled) {
        if (c.req->kv_handle == kNoRequestHandle) continue;
        auto it = table_len_.find(c.req->id.value());
        add(c.req->kv_handle, c.new_admission || it == table_len_.end() ? nullptr : &it->second);
      }
      for (RequestHandle h : allocated_for_load_) add(h, nullptr);
      for (const auto& [block, job] : window_source_blocks_)
        if (handed_out.count(block) != 0) Flush(job);
    }
    allocated_for_load_.clear();
    for (const ScheduledChunk& c : plan.scheduled) {
      if (c.req->kv_handle == kNoRequestHandle) continue;
      std::vector<size_t>& len = table_len_[c.req->id.value()];
      len.resize(static_cast<size_t>(kv_->num_groups()));
      for (int g = 0; g < kv_->num_groups(); ++g)
        len[static_cast<size_t>(g)] = kv_->blocks(c.req->kv_handle, g).size();
    }
  }
  // No tracked request is unfinished: every copy is flushed (not the stores planned below).
  if (unfinished_tracked_.empty()) {
    for (PendingJob& j : pending_) Flush(j.id);
  }
  // build_connector_meta → _build_store_jobs over the step's requests.
  std::vector<StoreCandidate> candidates;
  candidates.reserve(plan.scheduled.size() + finished.size());
  for (const ScheduledChunk& c : plan.scheduled) {
    StoreCandidate sc;
    sc.req = View(*c.req);
    sc.req.num_computed_tokens = c.num_computed_before;  // the chunk is not committed yet
    sc.num_scheduled_tokens = c.num_tokens;
    sc.kind = !c.new_admission ? StoreCandidate::Kind::kRunning
              : c.resumed      ? StoreCandidate::Kind::kResumed
                               : StoreCandidate::Kind::kNew;
    if (kv_->num_groups() > 1) {
      // Null GPU blocks (outside a sliding window, Mamba padding) are not stored.
      const RequestHandle h = c.req->kv_handle;
      const KvCacheManager* kv = kv_;
      sc.is_null_block = [kv, h](int group, int64_t i) {
        const std::span<const BlockId> b = kv->blocks(h, group);
        return i < static_cast<int64_t>(b.size()) && b[static_cast<size_t>(i)] == kNullBlock;
      };
    }
    candidates.push_back(sc);
  }
  if (connector_.config().semantics == VllmSemantics::kLatest) {
    for (SimRequest* r : finished) {
      if (!connector_.has_request(r->id.value())) continue;
      StoreCandidate sc;
      sc.req = View(*r);
      sc.num_scheduled_tokens = 0;
      sc.kind = StoreCandidate::Kind::kFinished;
      candidates.push_back(sc);
    }
  }
  const std::vector<const StoreCandidate*> order =
      StoreVisitOrder(connector_.config().semantics, candidates);
  std::vector<StoreFailure> failures;
  std::vector<StoreJob> jobs = connector_.BuildStoreJobs(order, &failures);
  record_.store_failures = static_cast<int64_t>(failures.size());
  const int64_t store_output = step_ + 1 + (timing_ == XferTiming::kNextStep ? 1 : 0);
  for (StoreJob& j : jobs) {
    blocks_stored_ += static_cast<int64_t>(j.keys.size());
    std::vector<int32_t> groups;
    groups.reserve(j.keys.size());
    for (const OffloadKey& k : j.keys) groups.push_back(k.group);
    pending_.push_back({j.id, j.request, /*is_load=*/false, store_output, j.block_indices,
                        std::move(groups), !timed_});
    for (const EvictedOffloadBlock& e : j.evicted)
      record_.evicted.push_back({e.origin.request, e.origin.block_index});
    if (has_window_groups_) {
      // vLLM watches a store's sliding-window source blocks from its creation.
      auto scheduled = std::find_if(plan.scheduled.begin(), plan.scheduled.end(),
                                    [&](const ScheduledChunk& c) {
                                      return c.req->id.value() == j.request;
                                    });
      const SimRequest* owner = scheduled != plan.scheduled.end() ? scheduled->req : nullptr;
      if (owner != nullptr && owner->kv_handle != kNoRequestHandle) {
        const RequestHandle h = owner->kv_handle;
        WatchWindowBlocks(j, [&](int g) { return kv_->blocks(h, g); });
      } else if (auto it = finished_tables_.find(j.request); it != finished_tables_.end()) {
        const auto& tables = it->second;
        WatchWindowBlocks(j, [&](int g) {
          return std::span<const BlockId>(tables[static_cast<size_t>(g)]);
        });
      }
    }
    record_.stores.push_back({j.request, std::move(j.block_indices)});
  }
  finished_tables_.clear();
  return std::move(record_);
}

void OffloadDriver::WatchWindowBlocks(
    const StoreJob& job, const std::function<std::span<const BlockId>(int group)>& tables) {
  const int64_t f = connector_.config().block_size_factor;
  for (size_t n = 0; n < job.keys.size(); ++n) {
    const int g = job.keys[n].group;
    if (connector_.config().groups[static_cast<size_t>(g)].window_blocks == 0) continue;
    const std::span<const BlockId> blocks = tables(g);
    const int64_t i = job.block_indices[n];
    for (int64_t b = i * f; b < (i + 1) * f && b < static_cast<int64_t>(blocks.size()); ++b)
      if (blocks[static_cast<size_t>(b)] != kNullBlock)
        window_source_blocks_.emplace_back(blocks[static_cast<size_t>(b)], job.id);
  }
}

void OffloadDriver::ApplyOutput(int64_t step) {
  // Completions are reported in submission order.
  auto done = [&](const PendingJob& j) { return j.submitted && j.output_step <= step; };
  completed_last_output_ = 0;
  for (const PendingJob& j : pending_) {
    if (!done(j)) continue;
    ++completed_last_output_;
    connector_.CompleteJob(j.id);
    if (j.is_load) {
      const bool more = std::any_of(pending_.begin(), pending_.end(), [&](const PendingJob& o) {
        return o.is_load && o.request == j.request && !done(o);
      });
      if (!more) finished_recving_.insert(j.request);
    }
  }
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(), done), pending_.end());
  auto job_done = [&](const std::pair<BlockId, OffloadJobId>& sb) {
    return std::none_of(pending_.begin(), pending_.end(),
                        [&](const PendingJob& j) { return j.id == sb.second; });
  };
  source_blocks_.erase(std::remove_if(source_blocks_.begin(), source_blocks_.end(), job_done),
                       source_blocks_.end());
  window_source_blocks_.erase(
      std::remove_if(window_source_blocks_.begin(), window_source_blocks_.end(), job_done),
      window_source_blocks_.end());
}

void OffloadDriver::RequestFinished(const SimRequest& r) {
  unfinished_tracked_.erase(r.id.value());
  connector_.RequestFinished(r.id.value());
  if (r.kv_handle == kNoRequestHandle) return;
  if (has_window_groups_) {
    table_len_.erase(r.id.value());
    if (connector_.config().semantics == VllmSemantics::kLatest) {
      // Latest plans the finished request's last stores at the next decision, from these ids.
      std::vector<std::vector<BlockId>>& tables = finished_tables_[r.id.value()];
      for (int g = 0; g < kv_->num_groups(); ++g) {
        const std::span<const BlockId> b = kv_->blocks(r.kv_handle, g);
        tables.emplace_back(b.begin(), b.end());
      }
    }
  }
  // request_finished registers the GPU blocks its pending stores read from, in each key's
  // group (hybrid models store every group under its own keys).
  const int64_t f = connector_.config().block_size_factor;
  for (const PendingJob& j : pending_) {
    if (j.is_load || j.request != r.id.value()) continue;
    for (size_t n = 0; n < j.block_indices.size(); ++n) {
      const int64_t i = j.block_indices[n];
      const std::span<const BlockId> blocks = kv_->blocks(r.kv_handle, j.groups[n]);
      for (int64_t b = i * f; b < (i + 1) * f && b < static_cast<int64_t>(blocks.size()); ++b)
        if (blocks[static_cast<size_t>(b)] != kNullBlock)
          source_blocks_.emplace_back(blocks[static_cast<size_t>(b)], j.id);
    }
  }
}

}  // namespace kvsim
