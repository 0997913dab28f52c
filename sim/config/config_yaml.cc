// The only translation unit in kvsim that includes yaml-cpp: it converts yaml-cpp's tree into
// ConfigNode, recording positions and rejecting duplicate keys.
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "sim/config/config_tree.h"

namespace kvsim {
namespace {

Status Convert(const YAML::Node& in, const std::string& name, const std::string& path,
               ConfigNode* out) {
  out->pos = {name, in.Mark().line >= 0 ? in.Mark().line + 1 : 0};
  switch (in.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      out->kind = ConfigNode::Kind::kNull;
      return Status::Ok();
    case YAML::NodeType::Scalar:
      out->kind = ConfigNode::Kind::kScalar;
      out->scalar = in.Scalar();
      return Status::Ok();
    case YAML::NodeType::Sequence: {
      out->kind = ConfigNode::Kind::kSeq;
      size_t i = 0;
      for (const auto& item : in) {
        ConfigNode child;
        Status s = Convert(item, name, path + "[" + std::to_string(i++) + "]", &child);
        if (!s.ok()) return s;
        out->seq.push_back(std::move(child));
      }
      return Status::Ok();
    }
    case YAML::NodeType::Map: {
      out->kind = ConfigNode::Kind::kMap;
      std::map<std::string, int> seen;
      for (const auto& kv : in) {
        if (!kv.first.IsScalar()) {
          return Status::Error("bad_yaml", name + ":" + std::to_string(kv.first.Mark().line + 1) +
                                               ": " + (path.empty() ? "<root>" : path) +
                                               ": map keys must be plain scalars");
        }
        const std::string key = kv.first.Scalar();
        const int line = kv.first.Mark().line + 1;
        const std::string key_path = path.empty() ? key : path + "." + key;
        if (auto it = seen.find(key); it != seen.end()) {
          return Status::Error("duplicate_key", name + ":" + std::to_string(line) + ": " +
                                                    key_path + ": duplicate key (first given at line " +
                                                    std::to_string(it->second) + ")");
        }
        seen[key] = line;
        ConfigNode child;
        Status s = Convert(kv.second, name, key_path, &child);
        if (!s.ok()) return s;
        if (child.pos.line == 0) child.pos = {name, line};
        out->map.emplace_back(key, std::move(child));
        out->key_pos.push_back({name, line});
      }
      return Status::Ok();
    }
  }
  return Status::Ok();
}

}  // namespace

Result<ConfigNode> ParseYaml(const std::string& text, const std::string& name) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Status::Error("bad_yaml", name + ":" + std::to_string(e.mark.line + 1) + ":" +
                                         std::to_string(e.mark.column + 1) +
                                         ": malformed YAML: " + e.msg);
  }
  ConfigNode out;
  Status s = Convert(root, name, "", &out);
  if (!s.ok()) return s;
  return out;
}

Result<ConfigNode> ParseYamlFile(const std::string& path) {
  std::ifstream f(path);
  if (!f) return Status::Error("missing_file", path + ": cannot open file");
  std::stringstream ss;
  ss << f.rdbuf();
  return ParseYaml(ss.str(), path);
}

}  // namespace kvsim
