#include "sim/sweep/sweep_spec.h"

#include <fmt/format.h>

#include <charconv>

namespace kvsim {
namespace {

struct Axis {
  std::vector<std::string> keys;
  std::vector<std::vector<const ConfigNode*>> values;  // values[i][k]: i-th value of key k
  size_t size() const { return values.size(); }
};

Status AxisError(const SourcePos& pos, const std::string& msg) {
  return Status::Error("bad_sweep", pos.ToString() + ": sweep: " + msg);
}

// A point's label value: a scalar as written; a map or list on one line, so that labels
// and CSV fields stay one line each (a sweep axis may switch whole sections, `cluster`).
bool ParseInt64(const std::string& s, int64_t* v) {
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, *v);
  return ec == std::errc() && p == end && !s.empty();
}

std::string ValueText(const ConfigNode& n) {
  if (n.is_scalar()) return n.scalar;
  return ToFlowYaml(n);
}

Result<std::vector<Axis>> ReadAxes(const ConfigNode& sweep) {
  std::vector<Axis> axes;
  if (!sweep.is_map()) return AxisError(sweep.pos, "expected a map of key.path: [values]");
  for (size_t i = 0; i < sweep.map.size(); ++i) {
    const auto& [key, node] = sweep.map[i];
    const SourcePos& kpos = sweep.key_pos[i];
    if (key == "seeds") continue;  // replicates, not an axis (SweepSeeds)
    if (key == "zip") {
      std::vector<const ConfigNode*> groups;
      if (node.is_map()) {
        groups.push_back(&node);
      } else if (node.is_seq()) {
        for (const auto& g : node.seq) groups.push_back(&g);
      } else {
        return AxisError(kpos, "zip: expected a map or a list of maps of key.path: [values]");
      }
      for (const ConfigNode* g : groups) {
        if (!g->is_map() || g->map.empty()) {
          return AxisError(g->pos, "zip: each group is a map of key.path: [values]");
        }
        Axis a;
        size_t n = 0;
        for (size_t k = 0; k < g->map.size(); ++k) {
          const auto& [zk, zv] = g->map[k];
          if (!zv.is_seq() || zv.seq.empty()) {
            return AxisError(g->key_pos[k], "zip: " + zk + ": expected a non-empty list");
          }
          if (k == 0) n = zv.seq.size();
          if (zv.seq.size() != n) {
            return AxisError(g->key_pos[k], "zip: " + zk + " has " +
                                                std::to_string(zv.seq.size()) + " values but " +
                                                g->map[0].first + " has " + std::to_string(n) +
                                                "; zipped lists must have equal lengths");
          }
          a.keys.push_back(zk);
        }
        a.values.resize(n);
        for (size_t v = 0; v < n; ++v) {
          for (size_t k = 0; k < g->map.size(); ++k) a.values[v].push_back(&g->map[k].second.seq[v]);
        }
        axes.push_back(std::move(a));
      }
      continue;
    }
    if (!node.is_seq() || node.seq.empty()) {
      return AxisError(kpos, key + ": expected a non-empty list of values");
    }
    Axis a;
    a.keys.push_back(key);
    for (const auto& v : node.seq) a.values.push_back({&v});
    axes.push_back(std::move(a));
  }
  return axes;
}

}  // namespace

std::string SweepPoint::Label() const { return LabelOf(labels); }

void SetAtPath(ConfigNode& root, const std::string& path, const ConfigNode& node) {
  if (path == "model.preset") {
    if (ConfigNode* m = root.Find("model")) {
      for (const char* k : {"layers", "repeat", "name", "compute"}) m->Erase(k);
    }
  }
  ConfigNode* cur = &root;
  if (!cur->is_map()) cur->kind = ConfigNode::Kind::kMap;
  size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? dot : dot - start);
    if (dot == std::string::npos) {
      cur->Set(key, node, node.pos);
      return;
    }
    ConfigNode* child = cur->Find(key);
    if (!child || !child->is_map()) {
      ConfigNode m;
      m.kind = ConfigNode::Kind::kMap;
      m.pos = node.pos;
      child = &cur->Set(key, std::move(m), node.pos);
    }
    cur = child;
    start = dot + 1;
  }
}

std::vector<std::string> FixSweptKeys(ConfigNode& tree,
                                      const std::vector<std::string>& overrides) {
  std::vector<std::string> notes;
  ConfigNode* sweep = tree.Find("sweep");
  if (!sweep || !sweep->is_map()) return notes;
  for (const std::string& o : overrides) {
    const auto eq = o.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    const std::string key = o.substr(0, eq), value = o.substr(eq + 1);
    if (key == "sweep" || key.rfind("sweep.", 0) == 0) continue;
    auto note = [&](size_t n) {
      notes.push_back(fmt::format("{} is swept ({} values); --set fixes it to {}", key, n,
                                  value));
    };
    if (const ConfigNode* axis = sweep->Find(key); axis && key != "zip") {
      note(axis->is_seq() ? axis->seq.size() : 1);
      sweep->Erase(key);
      continue;
    }
    ConfigNode* zip = sweep->Find("zip");
    if (!zip) continue;
    auto fix_group = [&](ConfigNode& g) {
      if (!g.is_map()) return;
      if (const ConfigNode* v = g.Find(key)) {
        note(v->is_seq() ? v->seq.size() : 1);
        g.Erase(key);
      }
    };
    if (zip->is_map()) {
      fix_group(*zip);
      if (zip->map.empty()) sweep->Erase("zip");
    } else if (zip->is_seq()) {
      for (ConfigNode& g : zip->seq) fix_group(g);
      std::erase_if(zip->seq, [](const ConfigNode& g) { return g.is_map() && g.map.empty(); });
      if (zip->seq.empty()) sweep->Erase("zip");
    }
  }
  return notes;
}

Result<std::vector<std::string>> SweepKeys(const ConfigNode& tree) {
  std::vector<std::string> keys;
  const ConfigNode* sweep = tree.Find("sweep");
  if (!sweep || sweep->is_null()) return keys;
  auto axes = ReadAxes(*sweep);
  if (!axes.ok()) return axes.status();
  for (const Axis& a : axes.value()) keys.insert(keys.end(), a.keys.begin(), a.keys.end());
  return keys;
}

Result<std::vector<SweepPoint>> ExpandSweep(const ConfigNode& tree) {
  std::vector<SweepPoint> points;
  const ConfigNode* sweep = tree.Find("sweep");
  ConfigNode base = tree;
  base.Erase("sweep");
  if (!sweep || sweep->is_null()) {
    points.push_back({0, {}, std::move(base)});
    return points;
  }
  auto axes_r = ReadAxes(*sweep);
  if (!axes_r.ok()) return axes_r.status();
  const std::vector<Axis>& axes = axes_r.value();
  size_t total = 1;
  for (const Axis& a : axes) {
    total *= a.size();
    if (total > 1000000) {
      return AxisError(sweep->pos, "more than 1,000,000 points; split the sweep");
    }
  }
  std::vector<size_t> idx(axes.size(), 0);
  for (size_t p = 0; p < total; ++p) {
    // Mixed-radix digits of p, the last axis fastest.
    size_t rem = p;
    for (size_t a = axes.size(); a-- > 0;) {
      idx[a] = rem % axes[a].size();
      rem /= axes[a].size();
    }
    SweepPoint pt;
    pt.index = static_cast<int64_t>(p);
    pt.tree = base;
    for (size_t a = 0; a < axes.size(); ++a) {
      for (size_t k = 0; k < axes[a].keys.size(); ++k) {
        const ConfigNode& v = *axes[a].values[idx[a]][k];
        SetAtPath(pt.tree, axes[a].keys[k], v);
        pt.labels.emplace_back(axes[a].keys[k], ValueText(v));
      }
    }
    points.push_back(std::move(pt));
  }
  return points;
}

Result<int64_t> SweepSeeds(const ConfigNode& tree) {
  const ConfigNode* sweep = tree.Find("sweep");
  const ConfigNode* n = sweep && sweep->is_map() ? sweep->Find("seeds") : nullptr;
  if (n == nullptr) return int64_t{1};
  const std::string where = n->pos.ToString() + ": sweep.seeds: ";
  int64_t v = 0;
  if (!n->is_scalar() || !ParseInt64(n->scalar, &v)) {
    return Status::Error("bad_sweep", where + "expected an integer number of seeds, got " +
                                          (n->is_scalar() ? "'" + n->scalar + "'" : "a " + std::string(n->is_map() ? "map" : "list")));
  }
  if (v < 1 || v > kMaxSweepSeeds) {
    return Status::Error("bad_sweep", fmt::format("{}{} is out of range: between 1 and {}", where,
                                                  v, kMaxSweepSeeds));
  }
  if (v > 1) {
    if (const ConfigNode* axis = sweep->Find("seed")) {
      return Status::Error(
          "bad_sweep",
          axis->pos.ToString() +
              ": sweep: seed is an axis and sweep.seeds replicates every point over seeds; "
              "use one of them (sweep.seeds: N runs seeds seed … seed+N−1 and reports means "
              "with 95 % intervals)");
    }
  }
  return v;
}

Result<int64_t> BaseSeed(const ConfigNode& tree) {
  const ConfigNode* n = tree.Find("seed");
  if (n == nullptr || n->is_null()) return int64_t{0};  // the scenario default
  int64_t v = 0;
  if (!n->is_scalar() || !ParseInt64(n->scalar, &v) || v < 0) {
    return Status::Error("bad_value", n->pos.ToString() +
                                          ": seed: expected a non-negative integer, got '" +
                                          (n->is_scalar() ? n->scalar : ToFlowYaml(*n)) + "'");
  }
  return v;
}

void SetSweepSeeds(ConfigNode& tree, int64_t n) {
  SetAtPath(tree, "sweep.seeds", ConfigNode::Scalar(std::to_string(n), SourcePos{"--seeds", 0}));
}

ConfigNode ReplicateTree(const ConfigNode& tree, int64_t seed) {
  ConfigNode out = tree;
  ConfigNode v;
  v.kind = ConfigNode::Kind::kScalar;
  v.scalar = std::to_string(seed);
  if (const ConfigNode* old = tree.Find("seed")) v.pos = old->pos;
  const SourcePos pos = v.pos;
  out.Set("seed", std::move(v), pos);
  return out;
}

SweepIdentity IdentifySweep(const ConfigNode& tree, int64_t num_points) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a over the tree's YAML text
  for (unsigned char c : ToYaml(tree)) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return {fmt::format("{:016x}", h), num_points};
}

}  // namespace kvsim
