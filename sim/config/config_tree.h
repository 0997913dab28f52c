// ConfigNode: a YAML document as kvsim reads it, with every node's source position.
// The scenario loader converts yaml-cpp's tree into this once (config_yaml.cc is the only
// file that includes yaml-cpp), so that includes, `--set` overrides and presets can be merged
// while each value still knows the file and line it came from, and so that duplicate keys
// (which yaml-cpp accepts silently) are caught at parse time.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace kvsim {

struct SourcePos {
  std::string file;  // path as given, or "--set", or "<built-in>/..."
  int line = 0;      // 1-based; 0 when unknown
  std::string ToString() const {
    return line > 0 ? file + ":" + std::to_string(line) : file;
  }
};

class ConfigNode {
 public:
  enum class Kind { kNull, kScalar, kMap, kSeq };

  Kind kind = Kind::kNull;
  SourcePos pos;
  std::string scalar;  // kScalar
  std::vector<std::pair<std::string, ConfigNode>> map;  // kMap, in file order
  std::vector<SourcePos> key_pos;                        // kMap: position of each key
  std::vector<ConfigNode> seq;                           // kSeq

  bool is_null() const { return kind == Kind::kNull; }
  bool is_map() const { return kind == Kind::kMap; }
  bool is_seq() const { return kind == Kind::kSeq; }
  bool is_scalar() const { return kind == Kind::kScalar; }

  const ConfigNode* Find(const std::string& key) const;
  ConfigNode* Find(const std::string& key);
  // Sets `key` (creating a map entry if needed).
  ConfigNode& Set(const std::string& key, ConfigNode value, SourcePos key_position);
  void Erase(const std::string& key);

  // Deep merge: maps merge key by key, everything else in `over` replaces this node.
  void MergeFrom(const ConfigNode& over);

  static ConfigNode Scalar(std::string value, SourcePos pos);
};

// Parses YAML text. `name` is used in positions and messages. Duplicate keys are errors.
Result<ConfigNode> ParseYaml(const std::string& text, const std::string& name);
Result<ConfigNode> ParseYamlFile(const std::string& path);

// Applies one "a.b.c=value" override (value parsed as YAML) to a tree. `label` is what
// positions and messages call it: the flag the user typed ("--model x" for `kvsim layout
// --model x`); empty = "--set a.b.c". A label starts with "--".
Status ApplyOverride(ConfigNode& root, const std::string& assignment,
                     const std::string& label = "");

// Serializes back to YAML-ish text (for `kvsim sweep` bookkeeping and debugging).
std::string ToYaml(const ConfigNode& node, int indent = 0);

// Serializes to YAML that ParseYaml reads back into the same tree (maps in block style,
// lists in flow style, scalars plain where that is unambiguous and double-quoted
// otherwise): the scenario.resolved.yaml a run writes next to its outputs.
std::string ToExactYaml(const ConfigNode& node);
// The same on one line, maps and lists in flow style ("{prefill: {count: 1}}"): a value
// that must fit a label or a CSV field.
std::string ToFlowYaml(const ConfigNode& node);

}  // namespace kvsim
