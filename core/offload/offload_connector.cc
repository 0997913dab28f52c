#include "core/offload/offload_connector.h"

#include <algorithm>
#include <string>

#include "core/check.h"
#include "core/int_math.h"

namespace kvsim {

Status OffloadConnectorConfig::Validate() const {
  auto err = [](const std::string& m) { return Status::Error("bad_offload_config", m); };
  if (groups.empty()) return err("offloading needs at least one KV-cache group");
  if (block_size_factor < 1) return err("the offloaded block must be at least one GPU block");
  if (hash_block_size < 1) return err("hash_block_size must be positive");
  for (size_t i = 0; i < groups.size(); ++i) {
    const OffloadGroupConfig& g = groups[i];
    if (g.gpu_block_size < 1) return err("group " + std::to_string(i) + ": GPU block size < 1");
    if (g.gpu_block_size % hash_block_size != 0)
      return err("group " + std::to_string(i) + ": GPU block size " +
                 std::to_string(g.gpu_block_size) + " is not a multiple of the hash block size " +
                 std::to_string(hash_block_size) +
                 " (vLLM asserts this; hybrid Mamba models need prefix caching to align them)");
    if (g.window_blocks < 0) return err("group " + std::to_string(i) + ": negative window");
  }
  if (tier.num_blocks < 0) return err("num_cpu_blocks must not be negative");
  if (tier.store_threshold < 0) return err("store_threshold must not be negative");
  if (tier.max_tracker_size < 1) return err("max_tracker_size must be at least 1");
  return Status::Ok();
}

std::vector<const StoreCandidate*> StoreVisitOrder(VllmSemantics semantics,
                                                   std::span<const StoreCandidate> scheduled) {
  using Kind = StoreCandidate::Kind;
  std::vector<const StoreCandidate*> out;
  out.reserve(scheduled.size());
  auto take = [&](Kind k) {
    for (const StoreCandidate& c : scheduled)
      if (c.kind == k) out.push_back(&c);
  };
  if (semantics == VllmSemantics::kClassic) {
    // yield_req_data: scheduled_new_reqs, then the cached requests (running, then resumed).
    take(Kind::kNew);
    take(Kind::kRunning);
    take(Kind::kResumed);
  } else {
    for (const StoreCandidate& c : scheduled)
      if (c.kind != Kind::kFinished) out.push_back(&c);
    take(Kind::kFinished);
  }
  return out;
}

int64_t NumCpuBlocksFromBytes(int64_t cpu_bytes, int64_t gpu_block_bytes, int64_t block_size_factor,
                              VllmSemantics semantics) {
  KVSIM_CHECK(gpu_block_bytes > 0 && block_size_factor > 0 && cpu_bytes >= 0);
  int64_t per_block = gpu_block_bytes * block_size_factor;
  if (semantics == VllmSemantics::kLatest) per_block = RoundUp(per_block, 4096);
  return cpu_bytes / per_block;
}

namespace {
CpuTierConfig TierConfigOf(const OffloadConnectorConfig& c) {
  CpuTierConfig t = c.tier;
  t.lru_evictable_list = c.semantics == VllmSemantics::kLatest;
  return t;
}
}  // namespace

OffloadConnector::OffloadConnector(const OffloadConnectorConfig& config)
    : config_(config), tier_(TierConfigOf(config)) {
  const Status s = config_.Validate();
  KVSIM_CHECK_MSG(s.ok(), s.ToString().c_str());
  for (int g = 0; g < static_cast<int>(config_.groups.size()); ++g) {
    if (config_.groups[static_cast<size_t>(g)].window_blocks == 0) {
      lookup_groups_.push_back(g);
    } else {
      window_groups_.push_back(g);
    }
  }
  std::stable_sort(window_groups_.begin(), window_groups_.end(), [&](int a, int b) {
    return config_.groups[static_cast<size_t>(a)].window_blocks >
           config_.groups[static_cast<size_t>(b)].window_blocks;
  });
  lookup_groups_.insert(lookup_groups_.end(), window_groups_.begin(), window_groups_.end());
}

OffloadConnector::RequestState& OffloadConnector::StateOf(const OffloadRequestView& req,
                                                          bool* created) {
  auto [it, inserted] = reqs_.try_emplace(req.id);
  if (inserted) it->second.groups.resize(config_.groups.size());
  if (created != nullptr) *created = inserted;
  UpdateKeys(it->second, req);
  return it->second;
}

void OffloadConnector::UpdateKeys(RequestState& st, const OffloadRequestView& req) const {
  for (size_t g = 0; g < config_.groups.size(); ++g) {
    const int64_t per_block = config_.offloaded_block_size(static_cast<int>(g)) /
                              config_.hash_block_size;
    ExtendOffloadKeys(req.block_hashes, per_block, static_cast<int32_t>(g), st.groups[g].keys);
  }
}

int64_t OffloadConnector::SlidingWindowLookup(std::span<const OffloadKey> keys, int64_t window,
                                              bool* deferred) {
  // From the end: the last run of `window` consecutive ready blocks ends the hit. A run that
  // reaches the first block counts even if shorter (the window reaches before the sequence).
  int64_t run = 0;
  for (int64_t i = static_cast<int64_t>(keys.size()) - 1; i >= 0; --i) {
    const CpuLookupResult r = tier_.Lookup(keys.subspan(static_cast<size_t>(i), 1));
    if (r.deferred) *deferred = true;
    if (r.hits == 0) {
      run = 0;
      continue;
    }
    if (++run == window) return i + window;
  }
  return run;
}

CpuHit OffloadConnector::FindHit(RequestState& st, int64_t num_tokens, int64_t g) {
  // The GPU hit is capped at num_tokens − 1; the CPU hit may cover every token, except with a
  // sliding-window or Mamba group, where one token must stay to be recomputed.
  int64_t max_hit = num_tokens - (window_groups_.empty() ? 0 : 1);
  int64_t hit = 0;
  bool deferred = false;
  std::vector<int> pass = lookup_groups_;
  while (!pass.empty()) {
    bool looked_up_window = false;
    std::vector<int> groups = std::move(pass);
    pass.clear();
    for (int grp : groups) {
      const int64_t obs = config_.offloaded_block_size(grp);
      const GroupState& gs = st.groups[static_cast<size_t>(grp)];
      const int64_t window = config_.groups[static_cast<size_t>(grp)].window_blocks;
      const int64_t nkeys = static_cast<int64_t>(gs.keys.size());
      max_hit = std::min(max_hit, nkeys * obs);
      if (max_hit - g < obs) return {};  // less than one offloaded block to gain
      const int64_t end = std::min(CeilDiv(max_hit, obs), nkeys);
      const int64_t start = g / obs;
      const std::span<const OffloadKey> scan(gs.keys.data() + start,
                                             static_cast<size_t>(end - start));
      bool group_deferred = false;
      int64_t n;
      if (window == 0) {
        const CpuLookupResult r = tier_.Lookup(scan);
        group_deferred = r.deferred;
        n = r.hits;
      } else {
        n = SlidingWindowLookup(scan, window, &group_deferred);
      }
      if (group_deferred) {
        deferred = true;
      } else {
        if (n == 0) return {};
        max_hit = std::min(max_hit, obs * (start + n));
      }
      const int64_t new_hit = max_hit - g;
      if (new_hit < obs) return {};
      if (new_hit < hit) {
        // A later group shortened the hit: the earlier groups' answers must be checked again.
        if (deferred) {
          deferred = false;
          pass = lookup_groups_;
        } else if (looked_up_window && pass.empty()) {
          pass = window_groups_;
        }
      }
      looked_up_window |= window != 0;
      hit = new_hit;
    }
  }
  if (deferred) return {true, 0};
  // A hit block that is being loaded for another request: wait for that load, after which the
  // blocks sit in the GPU prefix cache.
  if (!being_loaded_.empty()) {
    for (size_t grp = 0; grp < config_.groups.size(); ++grp) {
      const int64_t obs = config_.offloaded_block_size(static_cast<int>(grp));
      const std::vector<OffloadKey>& keys = st.groups[grp].keys;
      const int64_t window = config_.groups[grp].window_blocks;
      int64_t b = g / obs;
      const int64_t e = std::min<int64_t>(CeilDiv(g + hit, obs), static_cast<int64_t>(keys.size()));
      if (window != 0) b = std::max(b, e - window);
      for (int64_t i = b; i < e; ++i)
        if (being_loaded_.count(keys[static_cast<size_t>(i)]) != 0) return {true, 0};
    }
  }
  return {false, hit};
}

void OffloadConnector::TouchRequest(const RequestState& st) {
  for (size_t grp = 0; grp < config_.groups.size(); ++grp) {
    const GroupState& gs = st.groups[grp];
    const int64_t window = config_.groups[grp].window_blocks;
    size_t skip = 0;
    // Sliding-window groups keep only what the request's original hit needs (+ later blocks).
    if (window != 0)
      skip = static_cast<size_t>(
          std::min<int64_t>(std::max<int64_t>(0, gs.num_hit_blocks - window),
                            static_cast<int64_t>(gs.keys.size())));
    tier_.Touch(std::span<const OffloadKey>(gs.keys).subspan(skip));
  }
}

CpuHit OffloadConnector::Lookup(const OffloadRequestView& req, int64_t gpu_hit_tokens) {
  bool created = false;
  RequestState& st = StateOf(req, &created);
  const bool latest = config_.semantics == VllmSemantics::kLatest;
  // [latest] a request whose own copies are still in flight (a preempted request's flushed
  // stores not yet reported) is deferred before any lookup or touch.
  if (latest && !st.jobs.empty()) return {true, 0};
  st.gpu_hit_tokens = gpu_hit_tokens;
  const CpuHit hit = FindHit(st, req.num_tokens, gpu_hit_tokens);
  if (created || latest) {  // [latest] refreshed by every lookup
    for (size_t grp = 0; grp < config_.groups.size(); ++grp)
      st.groups[grp].num_hit_blocks =
          (gpu_hit_tokens + hit.tokens) / config_.offloaded_block_size(static_cast<int>(grp));
  }
  TouchRequest(st);
  return hit;
}

std::optional<LoadJob> OffloadConnector::OnAllocated(const OffloadRequestView& req,
                                                     int64_t gpu_hit_tokens,
                                                     int64_t cpu_hit_tokens,
                                                     std::span<const int64_t> first_pending) {
  if (cpu_hit_tokens == 0) return std::nullopt;
  RequestState& st = StateOf(req);
  const int64_t cached = gpu_hit_tokens + cpu_hit_tokens;
  LoadJob job;
  job.id = next_job_id_++;
  job.request = req.id;
  for (size_t grp = 0; grp < config_.groups.size(); ++grp) {
    GroupState& gs = st.groups[grp];
    const int64_t bs = config_.groups[grp].gpu_block_size;
    const int64_t obs = config_.offloaded_block_size(static_cast<int>(grp));
    const int64_t f = config_.block_size_factor;
    const int64_t num_gpu_blocks = CeilDiv(cached, bs);
    const int64_t local = first_pending.empty()
                              ? gpu_hit_tokens / bs
                              : std::min(first_pending[grp], num_gpu_blocks);
    const int64_t end_cpu = CeilDiv(cached, obs);
    KVSIM_CHECK(static_cast<int64_t>(gs.keys.size()) >= end_cpu);
    LoadGroupPlan plan;
    plan.first_gpu_block = local;
    plan.num_gpu_blocks = num_gpu_blocks - local;
    plan.first_cpu_block = local / f;
    plan.end_cpu_block = plan.num_gpu_blocks > 0 ? end_cpu : plan.first_cpu_block;
    plan.skip_gpu_blocks = local % f;
    for (int64_t i = plan.first_cpu_block; i < plan.end_cpu_block; ++i) {
      job.keys.push_back(gs.keys[static_cast<size_t>(i)]);
      job.block_indices.push_back(i);
    }
    job.groups.push_back(plan);
    gs.next_stored_block_idx = end_cpu;  // blocks that came from the CPU are not stored again
  }
  job.cpu_slots = tier_.PrepareLoad(job.keys);
  if (config_.enable_prefix_caching) being_loaded_.insert(job.keys.begin(), job.keys.end());
  st.jobs.insert(job.id);
  jobs_.emplace(job.id, Job{req.id, false, job.keys});
  return job;
}

std::vector<StoreJob> OffloadConnector::BuildStoreJobs(
    std::span<const StoreCandidate* const> in_order, std::vector<StoreFailure>* failures) {
  std::vector<StoreJob> out;
  for (const StoreCandidate* c : in_order) {
    const OffloadRequestView& req = c->req;
    // A finished request whose state is gone has nothing left to store.
    if (c->kind == StoreCandidate::Kind::kFinished && !has_request(req.id)) continue;
    RequestState& st = StateOf(req);
    int64_t offloadable =
        std::min(req.num_computed_tokens + c->num_scheduled_tokens, req.num_tokens);
    if (config_.semantics == VllmSemantics::kLatest)  // offload_prompt_only
      offloadable = std::min(offloadable, req.num_prompt_tokens);
    std::vector<OffloadKey> keys;
    std::vector<int64_t> indices;
    for (size_t grp = 0; grp < config_.groups.size(); ++grp) {
      const GroupState& gs = st.groups[grp];
      const int64_t obs = config_.offloaded_block_size(static_cast<int>(grp));
      const int64_t f = config_.block_size_factor;
      const int64_t end = std::min<int64_t>(offloadable / obs, static_cast<int64_t>(gs.keys.size()));
      for (int64_t i = gs.next_stored_block_idx; i < end; ++i) {
        // The last GPU block of an offloaded block tells whether it was skipped (null): if it
        // was, every earlier one was too.
        if (c->is_null_block && c->is_null_block(static_cast<int>(grp), (i + 1) * f - 1)) continue;
        keys.push_back(gs.keys[static_cast<size_t>(i)]);
        indices.push_back(i);
      }
    }
    auto advance = [&] {
      for (size_t grp = 0; grp < config_.groups.size(); ++grp) {
        // classic: set, not raised — a resumed request whose first chunk ends before its old
        // cursor moves the cursor back (advance_stored_idx), so evicted blocks are stored
        // again. latest: the cursor never moves back.
        int64_t& cursor = st.groups[grp].next_stored_block_idx;
        const int64_t to = offloadable / config_.offloaded_block_size(static_cast<int>(grp));
        cursor = config_.semantics == VllmSemantics::kLatest ? std::max(cursor, to) : to;
      }
    };
    if (keys.empty()) {
      advance();
      continue;
    }
    std::optional<CpuStorePlan> plan = tier_.PrepareStore(keys);
    if (!plan) {
      if (failures != nullptr)
        failures->push_back({req.id, static_cast<int64_t>(keys.size())});
      continue;
    }
    advance();
    if (plan->keys_to_store.empty()) continue;
    TouchRequest(st);

    StoreJob job;
    job.id = next_job_id_++;
    job.request = req.id;
    for (const EvictedCpuBlock& e : plan->evicted) {
      EvictedOffloadBlock ev{e.key, e.slot, {}};
      auto it = origins_.find(e.key);
      if (it != origins_.end()) {
        ev.origin = it->second;
        origins_.erase(it);
      }
      job.evicted.push_back(ev);
    }
    // keys_to_store keeps the order of `keys`, so its indices are found by one merge pass.
    size_t k = 0;
    for (size_t i = 0; i < keys.size() && k < plan->keys_to_store.size(); ++i) {
      if (!(keys[i] == plan->keys_to_store[k])) continue;
      job.keys.push_back(keys[i]);
      job.block_indices.push_back(indices[i]);
      job.cpu_slots.push_back(plan->slots[k]);
      origins_[keys[i]] = StoreOrigin{req.id, indices[i]};
      ++k;
    }
    KVSIM_CHECK(k == plan->keys_to_store.size());
    st.jobs.insert(job.id);
    jobs_.emplace(job.id, Job{req.id, true, job.keys});
    out.push_back(std::move(job));
  }
  // Finished requests have now had the step that reports them finished; forget those whose
  // copies are done.
  std::vector<OffloadRequestId> done;
  for (auto& [id, st] : reqs_) {
    if (!st.finished) continue;
    st.store_step_seen = true;
    if (st.jobs.empty()) done.push_back(id);
  }
  for (OffloadRequestId id : done) reqs_.erase(id);
  return out;
}

void OffloadConnector::CompleteJob(OffloadJobId id) {
  auto it = jobs_.find(id);
  KVSIM_CHECK_MSG(it != jobs_.end(), "completion of an unknown offload job");
  Job job = std::move(it->second);
  jobs_.erase(it);
  if (job.is_store) {
    tier_.CompleteStore(job.keys);
  } else {
    tier_.CompleteLoad(job.keys);
    if (config_.enable_prefix_caching)
      for (const OffloadKey& k : job.keys) being_loaded_.erase(k);
  }
  auto rs = reqs_.find(job.request);
  if (rs != reqs_.end()) {
    rs->second.jobs.erase(id);
    MaybeForget(job.request);
  }
}

void OffloadConnector::RequestFinished(OffloadRequestId id) {
  auto rs = reqs_.find(id);
  if (rs == reqs_.end()) return;
  rs->second.finished = true;
  // classic: request_finished drops the state at once when no copy is in flight. latest keeps
  // it for the next store visit of finished requests.
  if (config_.semantics == VllmSemantics::kClassic) rs->second.store_step_seen = true;
  MaybeForget(id);
}

void OffloadConnector::MaybeForget(OffloadRequestId id) {
  auto rs = reqs_.find(id);
  if (rs != reqs_.end() && rs->second.finished && rs->second.store_step_seen &&
      rs->second.jobs.empty())
    reqs_.erase(rs);
}

int64_t OffloadConnector::next_stored_block_idx(OffloadRequestId id, int group) const {
  auto rs = reqs_.find(id);
  return rs == reqs_.end() ? 0 : rs->second.groups[static_cast<size_t>(group)].next_stored_block_idx;
}

std::vector<OffloadJobId> OffloadConnector::InFlightJobs(OffloadRequestId id) const {
  std::vector<OffloadJobId> out;
  auto rs = reqs_.find(id);
  if (rs != reqs_.end()) out.assign(rs->second.jobs.begin(), rs->second.jobs.end());
  std::sort(out.begin(), out.end());
  return out;
}

bool OffloadConnector::is_store_job(OffloadJobId id) const {
  auto it = jobs_.find(id);
  return it != jobs_.end() && it->second.is_store;
}

std::optional<StoreOrigin> OffloadConnector::origin(const OffloadKey& key) const {
  auto it = origins_.find(key);
  if (it == origins_.end()) return std::nullopt;
  return it->second;
}

}  // namespace kvsim
