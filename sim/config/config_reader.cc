#include "sim/config/config_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace kvsim {

Status ConfigErrors::ToStatus() const {
  if (list.empty()) return Status::Ok();
  std::vector<const ConfigError*> shown;
  for (const auto& e : list) {
    if (e.code == "unknown_key") shown.push_back(&e);
  }
  for (const auto& e : list) {
    if (e.code == "unknown_key") continue;
    const bool explained =
        e.code == "missing_key" && !e.key.empty() &&
        std::any_of(list.begin(), list.end(), [&](const ConfigError& u) {
          return u.code == "unknown_key" && !u.suggestion.empty() &&
                 (e.key == u.suggestion || e.key.rfind(u.suggestion + ".", 0) == 0);
        });
    if (!explained) shown.push_back(&e);
  }
  std::string msg;
  for (size_t i = 0; i < shown.size(); ++i) {
    if (i) msg += "\n";
    msg += shown[i]->message;
  }
  return Status::Error(shown[0]->code, msg);
}

int EditDistance(const std::string& a, const std::string& b) {
  std::vector<int> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const int sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string ClosestMatch(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  int best_d = std::max<int>(2, static_cast<int>(word.size()) / 3) + 1;
  for (const auto& c : candidates) {
    const int d = EditDistance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

ConfigReader::ConfigReader(const ConfigNode* node, std::string path, ConfigErrors* errors,
                           std::vector<KeyDoc>* docs)
    : node_(node && !node->is_null() ? node : nullptr),
      path_(std::move(path)),
      errors_(errors),
      docs_(docs) {
  if (node_ && !node_->is_map()) {
    errors_->list.push_back({"wrong_type", node_->pos.ToString() + ": " +
                                               (path_.empty() ? "<root>" : path_) +
                                               ": expected a map of keys"});
    node_ = nullptr;
  }
}

std::string ConfigReader::KeyPath(const std::string& key) const {
  if (key.empty()) return path_.empty() ? "<root>" : path_;
  return path_.empty() ? key : path_ + "." + key;
}

SourcePos ConfigReader::PosOf(const std::string& key) const {
  if (node_) {
    for (size_t i = 0; i < node_->map.size(); ++i) {
      if (node_->map[i].first == key) return node_->key_pos[i];
    }
    return node_->pos;
  }
  return {};
}

bool ConfigReader::Has(const std::string& key) const {
  return node_ && node_->Find(key) && !node_->Find(key)->is_null();
}

void ConfigReader::Error(const std::string& key, const std::string& code,
                         const std::string& message) {
  const SourcePos pos = PosOf(key);
  std::string where = pos.ToString();
  errors_->list.push_back(
      {code, (where.empty() ? "" : where + ": ") + KeyPath(key) + ": " + message, KeyPath(key)});
}

void ConfigReader::WrongType(const std::string& key, const ConfigNode& n,
                             const std::string& want) {
  std::string got = n.is_map() ? "a map" : n.is_seq() ? "a list" : "\"" + n.scalar + "\"";
  Error(key, "wrong_type", "expected " + want + ", got " + got);
}

const ConfigNode* ConfigReader::Get(const std::string& key, const std::string& type,
                                    const std::string& def, const std::string& help) {
  requested_.insert(key);
  if (docs_) docs_->push_back({KeyPath(key), type, def, help});
  if (!node_) return nullptr;
  const ConfigNode* n = node_->Find(key);
  if (n && n->is_null()) return nullptr;
  return n;
}

namespace {
bool ParseInt(const std::string& s, int64_t* out) {
  std::string t;
  for (char c : s) {
    if (c != '_') t += c;
  }
  if (t.empty()) return false;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), *out);
  if (ec == std::errc() && p == t.data() + t.size()) return true;
  // Accept integral scientific notation such as 4e10.
  char* end = nullptr;
  const double d = std::strtod(t.c_str(), &end);
  if (end == t.c_str() + t.size() && std::isfinite(d) && d == std::floor(d) &&
      std::fabs(d) < 9.2e18) {
    *out = static_cast<int64_t>(d);
    return true;
  }
  return false;
}
}  // namespace

int64_t ConfigReader::Int(const std::string& key, int64_t def, const std::string& help,
                          int64_t min, int64_t max) {
  const ConfigNode* n = Get(key, "int", std::to_string(def), help);
  if (!n) return def;
  int64_t v = 0;
  if (!n->is_scalar() || !ParseInt(n->scalar, &v)) {
    // Digits that do not fit 64 bits are an integer, only too large: say so.
    const std::string& t = n->scalar;
    const size_t start = !t.empty() && (t[0] == '+' || t[0] == '-') ? 1 : 0;
    if (n->is_scalar() && start < t.size() &&
        t.find_first_not_of("0123456789", start) == std::string::npos) {
      Error(key, "bad_value", t + " is out of range: too large for a 64-bit integer");
      return def;
    }
    WrongType(key, *n, "an integer");
    return def;
  }
  if (v < min || v > max) {
    std::string range = min == std::numeric_limits<int64_t>::min()
                            ? "at most " + std::to_string(max)
                        : max == std::numeric_limits<int64_t>::max()
                            ? "at least " + std::to_string(min)
                            : "between " + std::to_string(min) + " and " + std::to_string(max);
    Error(key, "bad_value", std::to_string(v) + " is out of range: must be " + range);
    return def;
  }
  return v;
}

int64_t ConfigReader::IntOrNull(const std::string& key, int64_t def, int64_t null_value,
                                const std::string& def_text, const std::string& help,
                                int64_t min) {
  requested_.insert(key);
  if (docs_) docs_->push_back({KeyPath(key), "int or null", def_text, help});
  if (!node_) return def;
  const ConfigNode* n = node_->Find(key);
  if (!n) return def;
  if (n->is_null()) return null_value;
  int64_t v = 0;
  if (!n->is_scalar() || !ParseInt(n->scalar, &v)) {
    WrongType(key, *n, "an integer or null");
    return def;
  }
  if (v < min) {
    Error(key, "bad_value", std::to_string(v) + " is out of range: must be at least " +
                                std::to_string(min) + " (or null)");
    return def;
  }
  return v;
}

namespace {

enum class ByteParse : uint8_t { kOk, kMalformed, kOutOfRange };

ByteParse ParseBytesInto(const std::string& text, int64_t* out) {
  static const std::vector<std::pair<std::string, int64_t>> kSuffixes = {
      {"KiB", 1LL << 10}, {"MiB", 1LL << 20}, {"GiB", 1LL << 30}, {"TiB", 1LL << 40},
      {"KB", 1000LL},     {"MB", 1000000LL},  {"GB", 1000000000LL}, {"TB", 1000000000000LL},
      {"B", 1}};
  std::string s = text;
  int64_t mult = 1;
  for (const auto& [suf, m] : kSuffixes) {
    if (s.size() > suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0) {
      s = s.substr(0, s.size() - suf.size());
      while (!s.empty() && s.back() == ' ') s.pop_back();
      mult = m;
      break;
    }
  }
  double d = 0;
  int64_t v = 0;
  if (ParseInt(s, &v)) {
    d = static_cast<double>(v) * static_cast<double>(mult);
  } else {
    char* end = nullptr;
    d = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size()) return ByteParse::kMalformed;
    d *= static_cast<double>(mult);
  }
  if (d < 0 || d > 9.2e18) return ByteParse::kOutOfRange;
  *out = static_cast<int64_t>(d);
  return ByteParse::kOk;
}

}  // namespace

int64_t ConfigReader::Bytes(const std::string& key, int64_t def, const std::string& help) {
  const ConfigNode* n = Get(key, "bytes", std::to_string(def), help);
  if (!n) return def;
  if (!n->is_scalar()) {
    WrongType(key, *n, "a byte count");
    return def;
  }
  int64_t v = 0;
  switch (ParseBytesInto(n->scalar, &v)) {
    case ByteParse::kOk:
      return v;
    case ByteParse::kMalformed:
      WrongType(key, *n, "a byte count such as 42949672960 or 40GiB");
      return def;
    case ByteParse::kOutOfRange:
      Error(key, "bad_value", n->scalar + " is not a valid byte count");
      return def;
  }
  return def;
}

std::optional<int64_t> ParseByteCount(const std::string& text) {
  int64_t v = 0;
  if (ParseBytesInto(text, &v) != ByteParse::kOk) return std::nullopt;
  return v;
}

double ConfigReader::Double(const std::string& key, double def, const std::string& help,
                            double min, double max) {
  char def_text[32];  // "512", "0.5": as a user writes it, not std::to_string's "512.000000"
  std::snprintf(def_text, sizeof def_text, "%g", def);
  const ConfigNode* n = Get(key, "float", def_text, help);
  if (!n) return def;
  char* end = nullptr;
  const double v = n->is_scalar() ? std::strtod(n->scalar.c_str(), &end) : 0;
  if (!n->is_scalar() || n->scalar.empty() || end != n->scalar.c_str() + n->scalar.size() ||
      !std::isfinite(v)) {
    WrongType(key, *n, "a number");
    return def;
  }
  if (v < min || v > max) {
    // A tiny positive minimum is how the schema says "above 0": say so, not "[0.000000, inf]"
    // (which reads as if 0 were allowed).
    auto num = [](double x) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", x);
      return std::string(buf);
    };
    const bool above_zero = min > 0 && min <= 1e-6;
    const std::string low = above_zero ? "> 0" : "at least " + num(min);
    std::string range = std::isinf(max) ? low
                        : std::isinf(min) ? "at most " + num(max)
                        : above_zero      ? "> 0 and at most " + num(max)
                                          : "between " + num(min) + " and " + num(max);
    Error(key, "bad_value", n->scalar + " is out of range: must be " + range);
    return def;
  }
  return v;
}

bool ConfigReader::Bool(const std::string& key, bool def, const std::string& help) {
  const ConfigNode* n = Get(key, "bool", def ? "true" : "false", help);
  if (!n) return def;
  if (n->is_scalar()) {
    const std::string& s = n->scalar;
    if (s == "true" || s == "True" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "False" || s == "no" || s == "off") return false;
  }
  WrongType(key, *n, "true or false");
  return def;
}

std::string ConfigReader::String(const std::string& key, const std::string& def,
                                 const std::string& help) {
  const ConfigNode* n = Get(key, "string", def, help);
  if (!n) return def;
  if (!n->is_scalar()) {
    WrongType(key, *n, "a string");
    return def;
  }
  return n->scalar;
}

std::string ConfigReader::Choice(const std::string& key, const std::string& def,
                                 const std::vector<std::string>& choices,
                                 const std::string& help) {
  std::string all;
  for (size_t i = 0; i < choices.size(); ++i) all += (i ? "|" : "") + choices[i];
  const ConfigNode* n = Get(key, all, def, help);
  if (!n) return def;
  if (!n->is_scalar()) {
    WrongType(key, *n, "one of " + all);
    return def;
  }
  if (std::find(choices.begin(), choices.end(), n->scalar) != choices.end()) return n->scalar;
  const std::string near = ClosestMatch(n->scalar, choices);
  Error(key, "bad_value",
        "\"" + n->scalar + "\" is not one of " + all +
            (near.empty() ? "" : " (did you mean " + near + "?)"));
  return def;
}

std::vector<int64_t> ConfigReader::IntList(const std::string& key, const std::string& help) {
  const ConfigNode* n = Get(key, "list of int", "[]", help);
  std::vector<int64_t> out;
  if (!n) return out;
  if (!n->is_seq()) {
    WrongType(key, *n, "a list of integers");
    return out;
  }
  for (const auto& item : n->seq) {
    int64_t v = 0;
    if (!item.is_scalar() || !ParseInt(item.scalar, &v)) {
      WrongType(key, item, "a list of integers");
      return {};
    }
    out.push_back(v);
  }
  return out;
}

std::vector<double> ConfigReader::DoubleList(const std::string& key, const std::string& help) {
  const ConfigNode* n = Get(key, "list of float", "[]", help);
  std::vector<double> out;
  if (!n) return out;
  if (!n->is_seq()) {
    WrongType(key, *n, "a list of numbers");
    return out;
  }
  for (const auto& item : n->seq) {
    char* end = nullptr;
    const double v = item.is_scalar() ? std::strtod(item.scalar.c_str(), &end) : 0;
    if (!item.is_scalar() || item.scalar.empty() ||
        end != item.scalar.c_str() + item.scalar.size()) {
      WrongType(key, item, "a list of numbers");
      return {};
    }
    out.push_back(v);
  }
  return out;
}

std::vector<std::string> ConfigReader::StringList(const std::string& key,
                                                  const std::string& help) {
  const ConfigNode* n = Get(key, "list of string", "[]", help);
  std::vector<std::string> out;
  if (!n) return out;
  if (n->is_scalar()) return {n->scalar};
  if (!n->is_seq()) {
    WrongType(key, *n, "a list of strings");
    return out;
  }
  for (const auto& item : n->seq) {
    if (!item.is_scalar()) {
      WrongType(key, item, "a list of strings");
      return {};
    }
    out.push_back(item.scalar);
  }
  return out;
}

ConfigReader ConfigReader::Map(const std::string& key, const std::string& help) {
  const ConfigNode* n = Get(key, "map", "", help);
  if (n && !n->is_map()) {
    WrongType(key, *n, "a map of keys");
    n = nullptr;
  }
  return ConfigReader(n, KeyPath(key), errors_, docs_);
}

std::vector<ConfigReader> ConfigReader::MapList(const std::string& key, const std::string& help) {
  const ConfigNode* n = Get(key, "list of map", "[]", help);
  std::vector<ConfigReader> out;
  if (!n) return out;
  if (!n->is_seq()) {
    WrongType(key, *n, "a list");
    return out;
  }
  for (size_t i = 0; i < n->seq.size(); ++i) {
    const ConfigNode& item = n->seq[i];
    const std::string p = KeyPath(key) + "[" + std::to_string(i) + "]";
    if (!item.is_map()) {
      errors_->list.push_back(
          {"wrong_type", item.pos.ToString() + ": " + p + ": expected a map of keys"});
      continue;
    }
    out.emplace_back(&item, p, errors_, nullptr);
  }
  return out;
}

const ConfigNode* ConfigReader::Raw(const std::string& key, const std::string& type,
                                    const std::string& help) {
  return Get(key, type, "", help);
}

void ConfigReader::Finish() {
  if (!node_) return;
  std::vector<std::string> known(requested_.begin(), requested_.end());
  for (size_t i = 0; i < node_->map.size(); ++i) {
    const std::string& k = node_->map[i].first;
    if (requested_.count(k)) continue;
    const std::string near = ClosestMatch(k, known);
    // "cache.block_size: 32" in a file: dotted paths are the --set and sweep: spelling.
    std::string nest;
    if (k.find('.') != std::string::npos && k.front() != '.' && k.back() != '.') {
      std::string nested = k, close;
      for (size_t d = nested.find('.'); d != std::string::npos; d = nested.find('.', d)) {
        nested.replace(d, 1, ": {");
        close += "}";
      }
      nest = " (a dotted key path is for --set and sweep:; in a file, nest it: " + nested +
             ": ..." + close + ")";
    }
    errors_->list.push_back(
        {"unknown_key",
         node_->key_pos[i].ToString() + ": " + KeyPath(k) + ": unknown key" +
             (near.empty() ? nest : " (did you mean " + KeyPath(near) + "?)"),
         KeyPath(k), near.empty() ? "" : KeyPath(near)});
  }
}

}  // namespace kvsim
