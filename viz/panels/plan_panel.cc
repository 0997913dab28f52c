// The Plan panel: the scenario's model and cache knobs as live controls. Every change
// re-runs core's planner through PlanModel and the results table follows; planner errors
// are shown as text in place of the results (the last good plan stays below, dimmed).
#include <imgui.h>

#include <algorithm>
#include <cstdio>

#include "sim/report/plan_report.h"
#include "sim/scenario/scenario_loader.h"
#include "viz/panel.h"
#include "viz/ui_util.h"

namespace kvsim::viz {
namespace {

std::string Pct(double f) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f%%", 100.0 * f);
  return b;
}

class PlanPanel : public IPanel {
 public:
  const char* id() const override { return "plan"; }
  const char* title() const override { return "Plan"; }
  const char* help() const override {
    return "edit a knob and the KV cache plan is recomputed at once; hover a result for what "
           "it means. Errors show here, not as crashes.";
  }

  void Draw(ViewerContext& ctx) override {
    PlanModel& m = *ctx.plan;
    if (presets_.empty()) presets_ = ModelPresetNames();
    ImGui::BeginChild("##knobs", ImVec2(330, 0), false);
    DrawKnobs(m);
    ImGui::EndChild();
    ImGui::SameLine();
    ImGui::BeginChild("##results", ImVec2(0, 0), false);
    DrawResults(m);
    ImGui::EndChild();
  }

 private:
  void DrawKnobs(PlanModel& m) {
    PlanKnobs& k = m.mutable_knobs();
    ImGui::TextDisabled("scenario: %s", m.scenario().source.c_str());
    if (m.has_cluster()) {
      // A P/D scenario: which engine's plan these knobs edit.
      static const char* kRoles[] = {"prefill pool", "decode pool", "scenario's base engine"};
      static const char* kRoleIds[] = {"prefill", "decode", ""};
      int cur = m.role() == "prefill" ? 0 : m.role() == "decode" ? 1 : 2;
      ImGui::PushItemWidth(170);
      if (ImGui::Combo("engine", &cur, kRoles, IM_ARRAYSIZE(kRoles))) {
        auto next = PlanModel::Load(m.scenario_path(), m.base_overrides(), kRoleIds[cur]);
        if (next.ok()) m = std::move(next.value());
      }
      ImGui::PopItemWidth();
      HelpMarker(
          "P/D disaggregation: each pool has its own TP, block size and layout "
          "(cluster.prefill / cluster.decode); knob edits go to that pool");
    }
    ImGui::PushItemWidth(170);
    const std::string current = k.model_preset.empty() ? "(scenario's own model)" : k.model_preset;
    if (ImGui::BeginCombo("model preset", current.c_str())) {
      // A scenario with an inline model can go back to it.
      if (m.scenario_knobs().model_preset.empty() &&
          ImGui::Selectable("(scenario's own model)", k.model_preset.empty())) {
        k.model_preset.clear();
      }
      for (const auto& p : presets_) {
        if (ImGui::Selectable(p.c_str(), p == k.model_preset)) k.model_preset = p;
      }
      ImGui::EndCombo();
    }
    int tp = static_cast<int>(k.tp);
    if (ImGui::InputInt("TP", &tp)) k.tp = std::max(1, tp);
    HelpMarker("tensor-parallel size: KV heads and Mamba states are split across ranks");
    int bs = static_cast<int>(k.block_size);
    if (ImGui::InputInt("block size", &bs, 16, 256)) k.block_size = std::max(0, bs);
    HelpMarker(
        "cache.block_size in tokens; 0 = backend default (hybrid models raise it so an "
        "attention page covers the Mamba page)");
    int pack = static_cast<int>(k.attn_pack_size);
    if (ImGui::InputInt("attn pack size", &pack)) k.attn_pack_size = std::clamp(pack, 1, 64);
    HelpMarker("PR #35703: attention layers sharing one page (hybrid models only)");
    if (ImGui::BeginCombo("KV dtype", k.kv_dtype.c_str())) {
      for (const char* d : kKvDtypeChoices) {
        if (ImGui::Selectable(d, k.kv_dtype == d)) k.kv_dtype = d;
      }
      ImGui::EndCombo();
    }
    int layout = static_cast<int>(k.layout);
    if (ImGui::Combo("layout", &layout, kLayoutChoiceNames, IM_ARRAYSIZE(kLayoutChoiceNames))) {
      k.layout = static_cast<LayoutChoice>(layout);
    }
    HelpMarker(
        "NHD = [L,B,N,H,C] per layer; HND = [L,B,H,N,C]; cross-layer = one slab per "
        "block holding every layer");
    int mode = static_cast<int>(k.mamba_mode);
    if (!m.model_is_hybrid()) ImGui::BeginDisabled();
    if (ImGui::Combo("Mamba cache", &mode, kMambaModeNames, IM_ARRAYSIZE(kMambaModeNames))) {
      k.mamba_mode = static_cast<MambaCacheMode>(mode);
    }
    if (!m.model_is_hybrid()) {
      ImGui::EndDisabled();
      HelpMarker("this model has no Mamba layers");
    }
    if (!m.model_has_draft()) ImGui::BeginDisabled();
    ImGui::Checkbox("draft model", &k.draft);
    if (!m.model_has_draft()) {
      ImGui::EndDisabled();
      HelpMarker("this model preset has no draft model");
    }
    ImGui::PopItemWidth();
    if (ImGui::Button("reset to scenario")) k = m.scenario_knobs();
    m.ReplanIfChanged();
    ImGui::Spacing();
    ImGui::TextDisabled("equivalent command:");
    ImGui::PushTextWrapPos(0);
    ImGui::TextUnformatted(m.EquivalentCommand().c_str());
    ImGui::PopTextWrapPos();
    ImGui::TextDisabled("re-planned %lld times", static_cast<long long>(m.replans()));
  }

  void DrawResults(PlanModel& m) {
    if (!m.ok()) {
      ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.45f, 0.4f, 1.0f));
      ImGui::PushTextWrapPos(0);
      ImGui::Text("The planner refused this configuration:\n%s", m.error().c_str());
      ImGui::PopTextWrapPos();
      ImGui::PopStyleColor();
      if (m.has_plan()) ImGui::TextDisabled("Below: the last plan that worked.");
      ImGui::Separator();
    }
    if (!m.has_plan()) return;
    const KvCachePlan& p = m.plan();
    if (m.stale()) ImGui::PushStyleVar(ImGuiStyleVar_Alpha, 0.5f);
    const Scenario& sc = m.scenario();
    ImGui::Text(
        "%s%s, TP %lld, layout %s", sc.model.name.c_str(),
        p.layers.size() && sc.draft && m.knobs().draft ? (" + " + sc.draft->name).c_str() : "",
        static_cast<long long>(p.config.tp), KvOrderName(p.config.layout));
    if (ImGui::BeginTable("##summary", 3,
                          ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                              ImGuiTableFlags_SizingFixedFit)) {
      auto row = [](const char* k, const std::string& v, const char* why) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(k);
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(v.c_str());
        ImGui::TableNextColumn();
        ImGui::TextDisabled("%s", why);
      };
      row("attention block size", WithCommas(p.attn_block_size) + " tokens",
          p.attn_token_bytes > 0 ? "hybrid: align × cdiv(M, align × a1)" : "cache.block_size");
      row("kernel block size", WithCommas(p.kernel_block_size) + " tokens",
          "the backend's block; a manager block holds several when smaller");
      row("groups", std::to_string(p.groups.size()), "KV cache groups (one block table each)");
      row("page bytes", WithCommas(p.page_bytes) + " B", "per layer slot, after unification");
      row("bytes per block id", WithCommas(p.block_bytes) + " B", "over all slot tensors");
      row("padding", Pct(p.padding_fraction()), "of KV memory, averaged over groups");
      if (p.mamba_real_page_bytes > 0) {
        row("Mamba page",
            WithCommas(p.mamba_real_page_bytes) + " B" +
                (p.mamba_padded_page_bytes > 0
                     ? " → " + WithCommas(p.mamba_padded_page_bytes) + " B"
                     : ""),
            "conv + SSM state of one layer; padded to the common page");
      }
      row("num_blocks", WithCommas(p.num_blocks), "including the null block 0");
      row("token capacity", WithCommas(p.kv_cache_size_tokens) + " tokens",
          "[latest] reporting: blocks × tokens per request share");
      row("classic capacity", WithCommas(p.classic_token_capacity) + " tokens",
          "num_blocks / groups × smallest block");
      row("max concurrency", std::to_string(p.max_concurrency).substr(0, 6),
          "requests of max_model_len that fit");
      ImGui::EndTable();
    }
    for (const auto& w : p.warnings)
      ImGui::TextColored(ImVec4(1, 0.8f, 0.3f, 1), "warning: %s", w.c_str());
    ImGui::Spacing();
    ImGui::Text("groups (%zu)", p.groups.size());
    if (ImGui::BeginTable("##groups", 6,
                          ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY |
                              ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_BordersInnerV,
                          ImVec2(0, 180))) {
      ImGui::TableSetupScrollFreeze(0, 1);
      for (const char* h : {"#", "kind", "block", "page B", "pad", "layers"})
        ImGui::TableSetupColumn(h);
      ImGui::TableHeadersRow();
      for (size_t g = 0; g < p.groups.size(); ++g) {
        const KvCacheGroup& grp = p.groups[g];
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::Text("%zu", g);
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(std::string(LayerKindName(grp.kind)).c_str());
        ImGui::TableNextColumn();
        ImGui::Text("%lld", static_cast<long long>(grp.block_size));
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(WithCommas(grp.page_bytes).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(Pct(p.block_bytes ? static_cast<double>(p.padding_bytes_per_block(
                                                       static_cast<int>(g))) /
                                                       static_cast<double>(p.block_bytes)
                                                 : 0)
                                   .c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(LayerList(p, grp.layers, 8).c_str());
      }
      ImGui::EndTable();
    }
    if (ImGui::CollapsingHeader("full plan (kvsim layout)")) {
      ImGui::TextUnformatted(FormatPlan(sc, p).c_str());
    }
    if (m.stale()) ImGui::PopStyleVar();
  }

  std::vector<std::string> presets_;
};

}  // namespace

std::unique_ptr<IPanel> MakePlanPanel() { return std::make_unique<PlanPanel>(); }

}  // namespace kvsim::viz
