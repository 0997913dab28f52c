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

Status ApplyOverride(ConfigNode& root, const std::string& assignment,
                     const std::string& label) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    return Status::Error("bad_override", "--set " + assignment + ": expected key.path=value");
  }
  const std::string path = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  const std::string name = label.empty() ? "--set " + path : label;
  auto value = ParseYaml(text.empty() ? "\"\"" : text, name);
  if (!value.ok()) {
    return Status::Error("bad_override",
                         (label.empty() ? "--set " + assignment : label) +
                             ": the value is not valid YAML (" + value.status().message() + ")");
  }
  ConfigNode* node = &root;
  if (!node->is_map()) node->kind = ConfigNode::Kind::kMap;
  size_t start = 0;
  const SourcePos pos{name, 0};
  // Keys of the sweep: section are dotted paths themselves (`cache.block_size: [16, 64]`), so
  // `--set sweep.cache.block_size=[16,64]` sets that one axis.
  if (path.rfind("sweep.", 0) == 0 && path.size() > 6) {
    ConfigNode* sweep = node->Find("sweep");
    if (!sweep || !sweep->is_map()) {
      ConfigNode m;
      m.kind = ConfigNode::Kind::kMap;
      m.pos = pos;
      sweep = &node->Set("sweep", std::move(m), pos);
    }
    ConfigNode v = value.value();
    v.pos = pos;
    sweep->Set(path.substr(6), std::move(v), pos);
    return Status::Ok();
  }
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

namespace {

// A scalar YAML reads back as the same text: plain when it is a simple word or number (and
// not one YAML reads as null), else double-quoted with JSON-style escapes.
std::string ExactScalar(const std::string& s) {
  bool plain = !s.empty() && s != "null" && s != "Null" && s != "NULL" && s != "~" &&
               s.front() != '-' && s.front() != '.';
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-' || c == '+' || c == '/';
    plain = plain && ok;
  }
  if (plain) return s;
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          static const char* hex = "0123456789abcdef";
          out += "\\x";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string ExactFlow(const ConfigNode& n) {
  switch (n.kind) {
    case ConfigNode::Kind::kNull: return "null";
    case ConfigNode::Kind::kScalar: return ExactScalar(n.scalar);
    case ConfigNode::Kind::kSeq: {
      std::string s = "[";
      for (size_t i = 0; i < n.seq.size(); ++i) s += (i ? ", " : "") + ExactFlow(n.seq[i]);
      return s + "]";
    }
    case ConfigNode::Kind::kMap: {
      std::string s = "{";
      for (size_t i = 0; i < n.map.size(); ++i) {
        s += (i ? ", " : "") + ExactScalar(n.map[i].first) + ": " + ExactFlow(n.map[i].second);
      }
      return s + "}";
    }
  }
  return "null";
}

void ExactBlock(const ConfigNode& n, int indent, std::string& out) {
  const std::string pad(static_cast<size_t>(indent), ' ');
  for (const auto& [k, v] : n.map) {
    if (v.is_map() && !v.map.empty()) {
      out += pad + ExactScalar(k) + ":\n";
      ExactBlock(v, indent + 2, out);
    } else {
      out += pad + ExactScalar(k) + ": " + ExactFlow(v) + "\n";
    }
  }
}

}  // namespace

std::string ToExactYaml(const ConfigNode& node) {
  if (!node.is_map() || node.map.empty()) return ExactFlow(node) + "\n";
  std::string out;
  ExactBlock(node, 0, out);
  return out;
}

std::string ToFlowYaml(const ConfigNode& node) { return ExactFlow(node); }

}  // namespace kvsim
