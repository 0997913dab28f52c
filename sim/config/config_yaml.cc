// The only translation unit in kvsim that includes yaml-cpp: it converts yaml-cpp's tree into
// ConfigNode, recording positions and rejecting duplicate keys.
//
// Anchors and aliases are checked on yaml-cpp's event stream before any tree is built: an
// alias inside the node it names would make the tree infinite, and a few hundred bytes of
// nested aliases expand to gigabytes ("billion laughs"). Scenario files need neither, so a
// document may hold at most kMaxAliases aliases and expand to at most kMaxExpandedNodes nodes.
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "sim/config/config_tree.h"

namespace kvsim {
namespace {

constexpr int kMaxAliases = 16;
constexpr int64_t kMaxExpandedNodes = 100000;

// Walks the events of one document, keeping the key path for messages, the expanded size of
// every anchored node, and the anchors still open (an alias to one of those is a cycle).
class AliasGuard : public YAML::EventHandler {
 public:
  explicit AliasGuard(std::string name) : name_(std::move(name)) {}
  const std::string& error() const { return error_; }

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { Leaf(mark, anchor); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string& value) override {
    if (!frames_.empty() && frames_.back().is_map && frames_.back().expect_key) {
      frames_.back().key = value;
    }
    Leaf(mark, anchor);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (!error_.empty()) return;
    ++aliases_;
    for (const Frame& f : frames_) {
      if (f.anchor == anchor) {
        return Fail(mark, "a YAML alias inside the node its anchor names (a cycle)");
      }
    }
    if (aliases_ > kMaxAliases) {
      return Fail(mark, "more than " + std::to_string(kMaxAliases) +
                            " YAML aliases; scenario files should spell values out");
    }
    const auto it = anchored_size_.find(anchor);
    AddNodes(mark, it == anchored_size_.end() ? 1 : it->second);
    Advance();
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(mark, anchor, false);
  }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(mark, anchor, true);
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapEnd() override { Close(); }

 private:
  struct Frame {
    bool is_map = false;
    bool expect_key = true;  // maps: the next event is a key
    std::string key;         // maps: the current key
    size_t index = 0;        // sequences: the next item's index
    YAML::anchor_t anchor = 0;
    int64_t start_nodes = 0;  // nodes_ when the collection opened
  };

  std::string Path() const {
    std::string p;
    for (size_t i = 0; i < frames_.size(); ++i) {
      const Frame& f = frames_[i];
      if (f.is_map) {
        if (f.key.empty()) continue;
        p += (p.empty() ? "" : ".") + f.key;
      } else {
        p += "[" + std::to_string(f.index) + "]";
      }
    }
    return p.empty() ? "<root>" : p;
  }
  void Fail(const YAML::Mark& mark, const std::string& what) {
    if (!error_.empty()) return;
    error_ = name_ + ":" + std::to_string(mark.line + 1) + ": " + Path() + ": " + what;
  }
  void AddNodes(const YAML::Mark& mark, int64_t n) {
    nodes_ += n;
    if (nodes_ > kMaxExpandedNodes) {
      Fail(mark, "the document expands to more than " + std::to_string(kMaxExpandedNodes) +
                     " nodes (through YAML aliases?)");
    }
  }
  // After a complete value (or key) inside the innermost collection.
  void Advance() {
    if (frames_.empty()) return;
    Frame& f = frames_.back();
    if (f.is_map) {
      f.expect_key = !f.expect_key;
    } else {
      ++f.index;
    }
  }
  void Leaf(const YAML::Mark& mark, YAML::anchor_t anchor) {
    AddNodes(mark, 1);
    if (anchor) anchored_size_[anchor] = 1;
    Advance();
  }
  void Open(const YAML::Mark& mark, YAML::anchor_t anchor, bool is_map) {
    AddNodes(mark, 1);
    Frame f;
    f.is_map = is_map;
    f.anchor = anchor;
    f.start_nodes = nodes_ - 1;
    frames_.push_back(std::move(f));
  }
  void Close() {
    if (frames_.empty()) return;
    const Frame f = frames_.back();
    frames_.pop_back();
    if (f.anchor) anchored_size_[f.anchor] = nodes_ - f.start_nodes;
    Advance();
  }

  std::string name_;
  std::string error_;
  std::vector<Frame> frames_;
  std::map<YAML::anchor_t, int64_t> anchored_size_;
  int64_t nodes_ = 0;
  int aliases_ = 0;
};

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
    {
      std::istringstream in(text);
      YAML::Parser parser(in);
      AliasGuard guard(name);
      parser.HandleNextDocument(guard);
      if (!guard.error().empty()) return Status::Error("bad_yaml", guard.error());
    }
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    // yaml-cpp names the symptom ("illegal map value"); a tab in the indentation of the line
    // is the usual cause, so say so.
    std::string hint;
    if (e.mark.line >= 0) {
      std::istringstream lines(text);
      std::string l;
      for (int i = 0; i <= e.mark.line && std::getline(lines, l); ++i) {
      }
      const std::string indent = l.substr(0, l.find_first_not_of(" \t"));
      if (indent.find('\t') != std::string::npos) {
        hint = " (this line is indented with a tab; YAML indents with spaces only)";
      }
    }
    return Status::Error("bad_yaml", name + ":" + std::to_string(e.mark.line + 1) + ":" +
                                         std::to_string(e.mark.column + 1) +
                                         ": malformed YAML: " + e.msg + hint);
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
