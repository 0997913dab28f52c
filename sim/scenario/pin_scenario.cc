#include "sim/scenario/pin_scenario.h"

#include <filesystem>
#include <vector>

#include "sim/config/config_reader.h"
#include "sim/embedded_data.h"
#include "sim/file_pin.h"
#include "sim/scenario/scenario_loader.h"
#include "sim/scenario/sim_sections.h"
#include "sim/workload/trace_workload.h"

namespace kvsim {
namespace {

namespace fs = std::filesystem;

// The keys the sweep block sets (zip groups included).
std::vector<std::string> SweptKeys(const ConfigNode& tree) {
  std::vector<std::string> keys;
  const ConfigNode* sweep = tree.Find("sweep");
  if (!sweep || !sweep->is_map()) return keys;
  for (const auto& [k, v] : sweep->map) {
    if (k != "zip") {
      keys.push_back(k);
      continue;
    }
    std::vector<const ConfigNode*> groups;
    if (v.is_map()) groups.push_back(&v);
    if (v.is_seq())
      for (const ConfigNode& g : v.seq) groups.push_back(&g);
    for (const ConfigNode* g : groups) {
      if (!g->is_map()) continue;
      for (const auto& [zk, zv] : g->map) keys.push_back(zk);
    }
  }
  return keys;
}

bool Swept(const std::vector<std::string>& swept, const std::vector<std::string>& paths) {
  for (const std::string& k : swept) {
    for (const std::string& p : paths) {
      if (k == p) return true;
    }
  }
  return false;
}

ConfigNode Scalar(const std::string& v) { return ConfigNode::Scalar(v, SourcePos{}); }

// A model section with `preset`: the preset underneath its own keys (the loader's merge).
void PinModel(ConfigNode& model) {
  if (!model.is_map() || model.Find("hf_config")) return;
  const ConfigNode* preset = model.Find("preset");
  if (preset && preset->is_scalar()) {
    const std::string rel = "scenarios/models/" + preset->scalar + ".yaml";
    const std::string* text = FindEmbeddedFile(rel);
    if (text == nullptr) return;  // the loader names the unknown preset
    auto base = ParseYaml(*text, std::string(kBuiltInPrefix) + rel);
    if (!base.ok() || !base.value().is_map()) return;
    if (base.value().Find("hf_config")) {  // a preset made from its config.json
      auto hf = ExpandHfPreset(base.value(), "scenarios/models/" + preset->scalar);
      if (!hf.ok()) return;  // the loader reports it
      base.value() = std::move(hf.value());
    }
    // Inline layers replace the preset's layers and its repeat as a whole (a repeat given
    // beside them overwrites the preset's in place, which keeps a pinned tree's key order).
    if (model.Find("layers") && !model.Find("repeat")) base.value().Erase("repeat");
    base.value().MergeFrom(model);
    model = std::move(base.value());
  }
  if (ConfigNode* draft = model.Find("draft")) PinModel(*draft);
}

void PinHardware(ConfigNode& tree) {
  ConfigNode* node = tree.Find("hardware");
  if (node && !node->is_map() && !node->is_null()) return;  // the loader reports it
  if (node && node->is_map() && node->Find("file")) return;
  std::string name = "H100-SXM";  // the loader's default
  if (node && node->is_map()) {
    if (const ConfigNode* p = node->Find("preset")) {
      if (!p->is_scalar()) return;
      name = p->scalar;
    }
  }
  std::string file;
  const std::string* text = HardwarePresetText(name, &file);
  if (text == nullptr) return;
  auto base = ParseYaml(*text, std::string(kBuiltInPrefix) + file);
  if (!base.ok() || !base.value().is_map()) return;
  ConfigNode own;
  own.kind = ConfigNode::Kind::kMap;
  if (node && node->is_map()) own = *node;
  if (!own.Find("preset")) own.Set("preset", Scalar(name), SourcePos{});
  base.value().MergeFrom(own);
  tree.Set("hardware", std::move(base.value()), SourcePos{});
}

void PinTrace(ConfigNode& tree, const std::string& source) {
  ConfigNode* w = tree.Find("workload");
  if (!w || !w->is_map()) return;
  const ConfigNode* kind = w->Find("kind");
  if (!kind || !kind->is_scalar() || kind->scalar != "trace") return;
  ConfigNode* t = w->Find("trace");
  if (!t || !t->is_map() || t->Find("sha256")) return;  // a pinned trace stays pinned
  const ConfigNode* path = t->Find("path");
  if (!path || !path->is_scalar()) return;
  std::string dir;
  if (!source.empty() && source.rfind(kBuiltInPrefix, 0) != 0) {
    dir = fs::path(source).parent_path().string();
  }
  const std::string found = FindTraceFile(path->scalar, dir, nullptr);
  if (found.empty()) return;  // the run reports the missing trace
  auto pin = PinFile(found);
  if (!pin.ok()) return;
  std::error_code ec;
  const bool on_disk = fs::is_regular_file(found, ec);
  // Relative to the working directory when the file lies under it (a clone's own traces
  // then pin to the same text, and the same sweep id, wherever the clone lives); else
  // absolute.
  std::string where = "<built-in>/" + found;
  if (on_disk) {
    const fs::path abs = fs::absolute(found, ec).lexically_normal();
    const fs::path rel = abs.lexically_relative(fs::current_path(ec));
    const bool under = !rel.empty() && *rel.begin() != "..";
    where = under ? rel.string() : abs.string();
  }
  t->Set("resolved_path", Scalar(where), SourcePos{});
  t->Set("bytes", Scalar(std::to_string(pin->bytes)), SourcePos{});
  t->Set("sha256", Scalar(pin->sha256), SourcePos{});
}

}  // namespace

void PinScenarioTree(ConfigNode& tree, const std::string& source) {
  if (!tree.is_map()) return;
  const std::vector<std::string> swept = SweptKeys(tree);
  if (!Swept(swept, {"model", "model.preset", "model.hf_config", "model.draft",
                     "model.draft.preset", "model.layers"})) {
    if (ConfigNode* model = tree.Find("model")) PinModel(*model);
  }
  if (!Swept(swept, {"hardware", "hardware.preset", "hardware.file"})) PinHardware(tree);
  if (!Swept(swept, {"workload", "workload.kind", "workload.trace", "workload.trace.path"})) {
    PinTrace(tree, source);
  }
}

}  // namespace kvsim
