#include "viz/plan_model.h"

#include "sim/scenario/scenario_loader.h"

namespace kvsim::viz {

LayoutChoice LayoutChoiceOf(KvOrder order) {
  switch (order) {
    case KvOrder::kLBNHC:
      return LayoutChoice::kNhd;
    case KvOrder::kLBHNC:
    case KvOrder::kLHBNC:
      return LayoutChoice::kHnd;
    case KvOrder::kBLNHC:
      return LayoutChoice::kCrossLayerNhd;
    case KvOrder::kBLHNC:
    case KvOrder::kBHLNC:
      return LayoutChoice::kCrossLayerHnd;
  }
  return LayoutChoice::kNhd;
}

const char* LayoutKey(LayoutChoice c) {
  switch (c) {
    case LayoutChoice::kNhd:
      return "NHD";
    case LayoutChoice::kHnd:
      return "HND";
    case LayoutChoice::kCrossLayerNhd:
      return "BLNHC";
    case LayoutChoice::kCrossLayerHnd:
      return "BLHNC";
  }
  return "NHD";
}

namespace {

PlanKnobs KnobsOf(const Scenario& sc) {
  PlanKnobs k;
  k.model_preset = sc.model_preset;
  k.tp = sc.cache.tp;
  k.block_size = sc.cache.block_size;
  k.attn_pack_size = sc.cache.attn_pack_size;
  k.kv_dtype = std::string(DTypeName(sc.cache.kv_dtype));
  k.layout = LayoutChoiceOf(sc.cache.layout);
  k.draft = sc.draft.has_value();
  k.mamba_mode = sc.cache.mamba_cache_mode;
  return k;
}

}  // namespace

std::string ReadableError(const Status& s) {
  if (s.ok()) return "";
  std::string m = s.message();
  // Preset lists in "unknown preset" messages can be long; the UI offers a list anyway.
  constexpr size_t kMax = 600;
  if (m.size() > kMax) m = m.substr(0, kMax) + " …";
  return m;
}

Result<Scenario> PlanModel::Select(Result<Scenario> loaded) const {
  if (!loaded.ok() || role_.empty()) return loaded;
  const ClusterConfig& c = loaded->cluster;
  const PoolConfig& pool = role_ == "prefill" ? c.prefill : c.decode;
  if (!c.enabled || !pool.scenario) {
    return Status::Error("no_cluster", "this scenario has no cluster." + role_ + " pool");
  }
  return *pool.scenario;
}

Result<PlanModel> PlanModel::Load(const std::string& scenario_path,
                                  const std::vector<std::string>& overrides,
                                  const std::string& role) {
  if (!role.empty() && role != "prefill" && role != "decode") {
    return Status::Error("bad_role", "pool " + role + ": expected prefill or decode");
  }
  LoadOptions opts;
  opts.path = scenario_path;
  opts.overrides = overrides;
  auto loaded = LoadScenario(opts);
  if (!loaded.ok()) return loaded.status();
  PlanModel m;
  m.role_ = role;
  m.has_cluster_ = loaded->cluster.enabled;
  auto sc = m.Select(std::move(loaded));
  if (!sc.ok()) return sc.status();
  m.path_ = scenario_path;
  m.base_overrides_ = overrides;
  m.scenario_ = sc.value();
  m.scenario_knobs_ = KnobsOf(m.scenario_);
  m.knobs_ = m.scenario_knobs_;
  m.Replan();
  return m;
}

std::vector<std::string> PlanModel::OverridesFor(const PlanKnobs& k) const {
  std::vector<std::string> o = base_overrides_;
  // Only knobs that differ from the scenario become overrides, so a scenario with an inline
  // model keeps it until the user picks a preset. A pool's knobs live under its section.
  const std::string at = role_.empty() ? "" : "cluster." + role_ + ".";
  const PlanKnobs& s = scenario_knobs_;
  if (k.model_preset != s.model_preset && !k.model_preset.empty()) {
    o.push_back(at + "model.preset=" + k.model_preset);
  }
  if (k.tp != s.tp) o.push_back(at + "parallel.tp=" + std::to_string(k.tp));
  if (k.block_size != s.block_size) {
    o.push_back(at + "cache.block_size=" + std::to_string(k.block_size));
  }
  if (k.attn_pack_size != s.attn_pack_size) {
    o.push_back(at + "cache.attn_pack_size=" + std::to_string(k.attn_pack_size));
  }
  if (k.kv_dtype != s.kv_dtype) o.push_back(at + "cache.kv_dtype=" + k.kv_dtype);
  if (k.layout != s.layout) o.push_back(at + "cache.layout=" + LayoutKey(k.layout));
  if (k.mamba_mode != s.mamba_mode) {
    o.push_back(at + "cache.mamba_cache_mode=" + kMambaModeNames[static_cast<int>(k.mamba_mode)]);
  }
  return o;
}

std::string PlanModel::EquivalentCommand() const {
  std::string cmd = "kvsim layout";
  if (!role_.empty()) cmd += " (" + role_ + " pool)";
  if (!path_.empty()) cmd += " " + path_;
  for (const auto& o : OverridesFor(knobs_)) cmd += " --set " + o;
  return cmd;
}

bool PlanModel::Replan() {
  static int64_t next_stamp = 0;  // UI thread only
  ++replans_;
  planned_knobs_ = knobs_;
  LoadOptions opts;
  opts.path = path_;
  opts.overrides = OverridesFor(knobs_);
  auto sc = Select(LoadScenario(opts));
  if (!sc.ok()) {
    error_ = ReadableError(sc.status());
    stale_ = plan_.has_value();
    return false;
  }
  Scenario next = std::move(sc.value());
  model_has_draft_ = next.draft.has_value();
  if (!knobs_.draft) next.draft.reset();
  auto plan = next.Plan();
  if (!plan.ok()) {
    error_ = ReadableError(plan.status());
    stale_ = plan_.has_value();
    return false;
  }
  error_.clear();
  stale_ = false;
  scenario_ = std::move(next);
  plan_ = std::move(plan.value());
  stamp_ = ++next_stamp;
  return true;
}

bool PlanModel::ReplanIfChanged() {
  if (knobs_ == planned_knobs_) return false;
  Replan();
  return true;
}

}  // namespace kvsim::viz
