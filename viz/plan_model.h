// PlanModel: the viewer's live copy of a scenario's model and cache knobs, and the KV cache
// plan they give. The Plan panel edits `knobs()`; every edit calls Replan(), which turns the
// knobs into `--set`-style overrides, reloads the scenario through sim's loader (so presets,
// drafts and validation are exactly what `kvsim layout` would use) and re-runs
// core's PlanKvCache. A bad combination (TP that does not divide the heads, a pack size on an
// attention-only model...) becomes `error()` text, never a crash; the last good plan is kept
// for the panels that draw it.
//
// Owns: the base scenario (path + overrides), the knobs, the current Scenario and plan.
// Not thread-safe; lives on the UI thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/page_planner.h"
#include "sim/scenario_config.h"

namespace kvsim::viz {

// Physical layout choices offered in the UI (issue 6: NHD / HND / cross-layer).
enum class LayoutChoice : int { kNhd = 0, kHnd, kCrossLayerNhd, kCrossLayerHnd };
inline constexpr const char* kLayoutChoiceNames[] = {"NHD", "HND", "cross-layer NHD (BLNHC)",
                                                     "cross-layer HND (BLHNC)"};
inline constexpr const char* kMambaModeNames[] = {"none", "align", "all"};
// KV dtypes offered in the UI, in vLLM's names; "auto" = the model dtype.
inline constexpr const char* kKvDtypeChoices[] = {
    "auto", "fp32", "fp16", "bf16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_per_token_head",
    "int8", "nvfp4"};

LayoutChoice LayoutChoiceOf(KvOrder order);
// The `cache.layout` value of a choice ("NHD", "HND", "BLNHC", "BLHNC").
const char* LayoutKey(LayoutChoice c);

struct PlanKnobs {
  std::string model_preset;  // empty: the scenario's own (inline) model
  int64_t tp = 1;
  int64_t block_size = 0;  // 0 = backend default / hybrid alignment
  int64_t attn_pack_size = 1;
  std::string kv_dtype = "auto";
  LayoutChoice layout = LayoutChoice::kNhd;
  bool draft = true;  // plan the preset's draft model when it has one
  MambaCacheMode mamba_mode = MambaCacheMode::kAlign;

  bool operator==(const PlanKnobs&) const = default;
};

class PlanModel {
 public:
  // `scenario_path` empty = the built-in default scenario; `overrides` are "a.b=v" strings.
  // Loads once with the scenario's own values and derives the knobs from it. `role`
  // "prefill" or "decode" plans that pool of a P/D scenario (its `cluster.<role>` engine)
  // instead of the scenario's own engine; knob edits then become cluster.<role>.* overrides.
  static Result<PlanModel> Load(const std::string& scenario_path,
                                const std::vector<std::string>& overrides,
                                const std::string& role = "");

  const PlanKnobs& knobs() const { return knobs_; }
  PlanKnobs& mutable_knobs() { return knobs_; }
  // The knobs the scenario itself gives (for "reset").
  const PlanKnobs& scenario_knobs() const { return scenario_knobs_; }

  // Re-plans from the current knobs. Returns true when a new plan is in place; on failure
  // error() explains why and plan() keeps the last good plan (flagged stale()).
  bool Replan();
  // Replan() only if the knobs changed since the last call; returns true when it re-planned.
  bool ReplanIfChanged();

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  bool has_plan() const { return plan_.has_value(); }
  bool stale() const { return stale_; }
  const KvCachePlan& plan() const { return *plan_; }
  const Scenario& scenario() const { return scenario_; }
  const std::string& scenario_name() const { return scenario_.name; }
  // Whether the current model preset carries a draft model (the draft knob is moot if not).
  bool model_has_draft() const { return model_has_draft_; }
  bool model_is_hybrid() const { return scenario_.model.has_mamba(); }
  int64_t replans() const { return replans_; }
  // A stamp unique to the current plan across every PlanModel (a new one per Replan), so
  // views caching a plan's pages know when to rebuild.
  int64_t plan_stamp() const { return stamp_; }
  // "" (the scenario's engine), "prefill" or "decode".
  const std::string& role() const { return role_; }
  // Whether the scenario describes P/D pools (cluster.prefill / cluster.decode).
  bool has_cluster() const { return has_cluster_; }
  const std::string& scenario_path() const { return path_; }
  const std::vector<std::string>& base_overrides() const { return base_overrides_; }

  // The overrides Replan() applies for `k` (exposed for tests and the Plan panel's
  // "equivalent command" line).
  std::vector<std::string> OverridesFor(const PlanKnobs& k) const;
  std::string EquivalentCommand() const;

 private:
  // The scenario to plan: the loaded one, or its `role` pool.
  Result<Scenario> Select(Result<Scenario> loaded) const;

  std::string path_;
  std::vector<std::string> base_overrides_;
  std::string role_;
  bool has_cluster_ = false;
  int64_t stamp_ = 0;
  PlanKnobs knobs_;
  PlanKnobs scenario_knobs_;
  PlanKnobs planned_knobs_;
  Scenario scenario_;
  std::optional<KvCachePlan> plan_;
  bool stale_ = false;
  bool model_has_draft_ = false;
  std::string error_;
  int64_t replans_ = 0;
};

// Readable one-paragraph form of a planner or loader error (codes dropped, long lists cut).
std::string ReadableError(const Status& s);

}  // namespace kvsim::viz
