// ConfigReader: typed, checked access to one map of a ConfigNode tree. Every getter names
// the key it wants, its default and a help line; the reader then
//   * converts the value or records an error naming file:line, the key path and the problem;
//   * remembers which keys were asked for, so Finish() can reject unknown keys with a
//     did-you-mean suggestion;
//   * in describe mode (docs != nullptr) records {path, type, default, help} rows, which is
//     how `kvsim list` prints every scenario key without a second copy of the schema.
// Errors accumulate in a shared ConfigErrors; parsing goes on so that one run reports all.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sim/config/config_tree.h"

namespace kvsim {

struct ConfigError {
  ConfigError(std::string c, std::string m, std::string k = "", std::string s = "")
      : code(std::move(c)), message(std::move(m)), key(std::move(k)), suggestion(std::move(s)) {}

  std::string code;     // unknown_key, wrong_type, bad_value, missing_key, ...
  std::string message;  // "file:line: key.path: what is wrong"
  std::string key;      // the key path the error is about ("" if none)
  std::string suggestion;  // unknown_key: the key path it probably meant ("" if none)
};

struct ConfigErrors {
  std::vector<ConfigError> list;
  bool empty() const { return list.empty(); }
  // All messages, one per line, unknown keys first (a misspelt key is usually why another
  // is reported missing; a missing-key error that a did-you-mean explains is dropped). The
  // code is the first remaining error's.
  Status ToStatus() const;
};

struct KeyDoc {
  std::string path;
  std::string type;
  std::string default_value;
  std::string help;
};

class ConfigReader {
 public:
  // `node` may be null or a null node (a section that is absent: every key takes its default).
  ConfigReader(const ConfigNode* node, std::string path, ConfigErrors* errors,
               std::vector<KeyDoc>* docs = nullptr);

  bool present() const { return node_ != nullptr && node_->is_map(); }
  bool describing() const { return docs_ != nullptr; }
  bool Has(const std::string& key) const;
  const std::string& path() const { return path_; }

  int64_t Int(const std::string& key, int64_t def, const std::string& help,
              int64_t min = std::numeric_limits<int64_t>::min(),
              int64_t max = std::numeric_limits<int64_t>::max());
  // An integer count of bytes; accepts suffixes KiB, MiB, GiB, TiB, KB, MB, GB, TB.
  // An integer that may also be YAML `null` (returned as `null_value`); absent → `def`,
  // documented as `def_text`.
  int64_t IntOrNull(const std::string& key, int64_t def, int64_t null_value,
                    const std::string& def_text, const std::string& help, int64_t min);
  int64_t Bytes(const std::string& key, int64_t def, const std::string& help);
  double Double(const std::string& key, double def, const std::string& help,
                double min = -std::numeric_limits<double>::infinity(),
                double max = std::numeric_limits<double>::infinity());
  bool Bool(const std::string& key, bool def, const std::string& help);
  std::string String(const std::string& key, const std::string& def, const std::string& help);
  // One of `choices`; an error lists them.
  std::string Choice(const std::string& key, const std::string& def,
                     const std::vector<std::string>& choices, const std::string& help);
  std::vector<int64_t> IntList(const std::string& key, const std::string& help);
  std::vector<double> DoubleList(const std::string& key, const std::string& help);
  std::vector<std::string> StringList(const std::string& key, const std::string& help);

  // A nested map (absent → a reader with no node).
  ConfigReader Map(const std::string& key, const std::string& help);
  // A list of maps.
  std::vector<ConfigReader> MapList(const std::string& key, const std::string& help);
  // The raw node (marks the key as known); null when absent.
  const ConfigNode* Raw(const std::string& key, const std::string& type, const std::string& help);

  // Records an error at `key` (or at the map itself when key is empty).
  void Error(const std::string& key, const std::string& code, const std::string& message);
  // Rejects keys that no getter asked for. Call once, after all getters.
  void Finish();

  ConfigErrors* errors() const { return errors_; }
  std::vector<KeyDoc>* docs() const { return docs_; }

 private:
  const ConfigNode* Get(const std::string& key, const std::string& type, const std::string& def,
                        const std::string& help);
  std::string KeyPath(const std::string& key) const;
  SourcePos PosOf(const std::string& key) const;
  void WrongType(const std::string& key, const ConfigNode& n, const std::string& want);

  const ConfigNode* node_;
  std::string path_;
  ConfigErrors* errors_;
  std::vector<KeyDoc>* docs_;
  std::set<std::string> requested_;
};

// Edit distance, for did-you-mean suggestions.
int EditDistance(const std::string& a, const std::string& b);
// The closest candidate within a small distance, or "".
std::string ClosestMatch(const std::string& word, const std::vector<std::string>& candidates);

// A byte count as scenarios write it: an integer, or a number with one of the suffixes KiB,
// MiB, GiB, TiB (powers of 2), KB, MB, GB, TB (powers of 10) or B ("40GiB", "1.5 TB").
// nullopt when `text` is not one, or is negative or above 9.2e18.
std::optional<int64_t> ParseByteCount(const std::string& text);

}  // namespace kvsim
