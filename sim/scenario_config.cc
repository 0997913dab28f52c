#include "sim/scenario_config.h"

#include <cctype>

#include "core/kv_cache_manager.h"

namespace kvsim {
namespace {

// The "a.b.c" a planner message starts with, or "".
std::string LeadingKeyPath(const std::string& message) {
  const auto colon = message.find(": ");
  if (colon == std::string::npos || colon == 0) return "";
  for (size_t i = 0; i < colon; ++i) {
    const char c = message[i];
    if (!(std::islower(static_cast<unsigned char>(c)) ||
          std::isdigit(static_cast<unsigned char>(c)) || c == '_' || c == '.')) {
      return "";
    }
  }
  return message.substr(0, colon);
}

// Where `path` was set: the deepest key of it present in the tree.
SourcePos FindKey(const ConfigNode& tree, const std::string& path) {
  SourcePos best;
  const ConfigNode* node = &tree;
  size_t start = 0;
  while (node && node->is_map() && start <= path.size()) {
    const auto dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? dot : dot - start);
    const ConfigNode* child = nullptr;
    for (size_t i = 0; i < node->map.size(); ++i) {
      if (node->map[i].first == key) {
        child = &node->map[i].second;
        best = node->key_pos[i];
      }
    }
    if (!child || dot == std::string::npos) break;
    node = child;
    start = dot + 1;
  }
  return best;
}

}  // namespace

Result<KvCachePlan> Scenario::Plan() const {
  auto plan = PlanKvCache(model, draft ? &*draft : nullptr, cache);
  if (plan.ok()) {
    // The retention interval is checked against the scheduler block, which only the plan
    // knows (a whole number of scheduler blocks when a group caches sparsely).
    auto kv = KvCacheManagerConfigFromPlan(plan.value());
    if (!kv.ok() && kv.status().code() == "bad_retention")
      return Status::Error("bad_value",
                           Where("cache.prefix_cache_retention_interval") +
                               ": cache.prefix_cache_retention_interval: " + kv.status().message());
    return plan;
  }
  const Status& s = plan.status();
  const std::string key = LeadingKeyPath(s.message());
  SourcePos pos = key.empty() ? SourcePos{} : FindKey(tree, key);
  if (pos.file.empty()) pos = {source, 0};
  return Status::Error(s.code(), pos.ToString() + ": " + s.message());
}

std::string Scenario::Where(const std::string& key_path) const {
  SourcePos pos = FindKey(tree, key_path);
  if (pos.file.empty()) pos = {source, 0};
  return pos.ToString();
}

}  // namespace kvsim
