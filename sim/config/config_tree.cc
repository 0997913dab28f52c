#include "sim/config/config_tree.h"

namespace kvsim {

const ConfigNode* ConfigNode::Find(const std::string& key) const {
  for (const auto& [k, v] : map) {
    if (k == key) return &v;
  }
  return nullptr;
}

ConfigNode* ConfigNode::Find(const std::string& key) {
  for (auto& [k, v] : map) {
    if (k == key) return &v;
  }
  return nullptr;
}

ConfigNode& ConfigNode::Set(const std::string& key, ConfigNode value, SourcePos key_position) {
  if (kind != Kind::kMap) {
    kind = Kind::kMap;
    scalar.clear();
    seq.clear();
  }
  for (size_t i = 0; i < map.size(); ++i) {
    if (map[i].first == key) {
      map[i].second = std::move(value);
      key_pos[i] = std::move(key_position);
      return map[i].second;
    }
  }
  map.emplace_back(key, std::move(value));
  key_pos.push_back(std::move(key_position));
  return map.back().second;
}

void ConfigNode::Erase(const std::string& key) {
  for (size_t i = 0; i < map.size(); ++i) {
    if (map[i].first == key) {
      map.erase(map.begin() + static_cast<long>(i));
      key_pos.erase(key_pos.begin() + static_cast<long>(i));
      return;
    }
  }
}

void ConfigNode::MergeFrom(const ConfigNode& over) {
  if (over.is_map() && is_map()) {
    for (size_t i = 0; i < over.map.size(); ++i) {
      const auto& [k, v] = over.map[i];
      ConfigNode* mine = Find(k);
      if (mine && mine->is_map() && v.is_map()) {
        mine->MergeFrom(v);
      } else {
        Set(k, v, over.key_pos[i]);
      }
    }
    return;
  }
  *this = over;
}

ConfigNode ConfigNode::Scalar(std::string value, SourcePos pos) {
  ConfigNode n;
  n.kind = Kind::kScalar;
  n.scalar = std::move(value);
  n.pos = std::move(pos);
  return n;
}

Status ApplyOverride(ConfigNode& root, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    return Status::Error("bad_override", "--set " + assignment + ": expected key.path=value");
  }
  const std::string path = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  auto value = ParseYaml(text.empty() ? "\"\"" : text, "--set " + path);
  if (!value.ok()) {
    return Status::Error("bad_override", "--set " + assignment + ": the value is not valid YAML (" +
                                             value.status().message() + ")");
  }
  ConfigNode* node = &root;
  if (!node->is_map()) node->kind = ConfigNode::Kind::kMap;
  size_t start = 0;
  const SourcePos pos{"--set " + path, 0};
  while (true) {
    const auto dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? dot : dot - start);
    if (key.empty()) {
      return Status::Error("bad_override", "--set " + assignment + ": empty key in path");
    }
    if (dot == std::string::npos) {
      ConfigNode v = value.value();
      v.pos = pos;
      node->Set(key, std::move(v), pos);
      return Status::Ok();
    }
    ConfigNode* child = node->Find(key);
    if (!child || !child->is_map()) {
      ConfigNode m;
      m.kind = ConfigNode::Kind::kMap;
      m.pos = pos;
      child = &node->Set(key, std::move(m), pos);
    }
    node = child;
    start = dot + 1;
  }
}

std::string ToYaml(const ConfigNode& node, int indent) {
  const std::string pad(static_cast<size_t>(indent), ' ');
  switch (node.kind) {
    case ConfigNode::Kind::kNull:
      return "null";
    case ConfigNode::Kind::kScalar:
      return node.scalar;
    case ConfigNode::Kind::kSeq: {
      std::string s = "[";
      for (size_t i = 0; i < node.seq.size(); ++i) {
        if (i) s += ", ";
        s += node.seq[i].is_map() ? "{...}" : ToYaml(node.seq[i], 0);
      }
      return s + "]";
    }
    case ConfigNode::Kind::kMap: {
      std::string s;
      for (const auto& [k, v] : node.map) {
        if (v.is_map()) {
          s += pad + k + ":\n" + ToYaml(v, indent + 2);
        } else {
          s += pad + k + ": " + ToYaml(v, indent + 2) + "\n";
        }
      }
      return s;
    }
  }
  return "";
}

}  // namespace kvsim
