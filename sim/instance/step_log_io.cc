#include "sim/instance/step_log_io.h"

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <unordered_set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "sim/json_text.h"

namespace kvsim {
namespace {

// Bounds on what one input may ask for, so a bad file cannot eat unbounded memory.
constexpr int64_t kMaxPromptTokens = int64_t{1} << 24;
constexpr int64_t kMaxOutputTokens = int64_t{1} << 24;
constexpr int64_t kMaxArrivalStep = int64_t{1} << 40;
constexpr int64_t kMaxAbsPriority = int64_t{1} << 40;  // priorities in [-2^40, 2^40]
constexpr int64_t kMaxRequests = int64_t{1} << 24;

Status LineError(const std::string& path, int64_t line, const std::string& key,
                 const std::string& msg) {
  return Status::Error("invalid_input", fmt::format("{}:{}: {}{}{}", path, line, key,
                                                    key.empty() ? "" : ": ", msg));
}

Result<int64_t> IntField(const nlohmann::json& obj, const char* key, const std::string& path,
                         int64_t line, std::optional<int64_t> fallback, int64_t lo, int64_t hi) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (fallback) return *fallback;
    return LineError(path, line, key, "missing (required)");
  }
  if (!it->is_number_integer()) return LineError(path, line, key, "expected an integer");
  const int64_t v = it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(INT64_MAX)
                        ? INT64_MAX
                        : it->get<int64_t>();
  if (v < lo || v > hi) {
    return LineError(path, line, key, fmt::format("{} is out of range [{}, {}]", v, lo, hi));
  }
  return v;
}

void AppendJsonString(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

// Names request `i`: its id from the input, or its number when there is no input.
struct RequestNames {
  const std::vector<StepRequest>* requests = nullptr;
  void Append(std::string& out, int32_t i) const {
    if (requests) {
      AppendJsonString(out, (*requests)[static_cast<size_t>(i)].id);
    } else {
      out += fmt::format("\"{}\"", i);
    }
  }
};

void AppendIdList(std::string& out, const std::vector<int32_t>& ids, const RequestNames& names) {
  out += '[';
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ", ";
    names.Append(out, ids[i]);
  }
  out += ']';
}

std::string RecordJson(const StepRecord& r, const RequestNames& names) {
  std::string out;
  out.reserve(64 + 32 * r.scheduled.size());
  out += fmt::format("{{\"step\": {}, ", r.step);
  // An instance of a pool (P/D, DP ranks) tags its records; its steps count on their own.
  if (!r.instance.empty()) out += fmt::format("\"instance\": \"{}\", ", r.instance);
  out += "\"scheduled\": [";
  for (size_t i = 0; i < r.scheduled.size(); ++i) {
    const StepRecord::Chunk& c = r.scheduled[i];
    if (i) out += ", ";
    out += '[';
    names.Append(out, c.request);
    out += fmt::format(", {}, {}, {}]", c.num_tokens, c.before, c.hit);
  }
  out += "], \"preempted\": ";
  AppendIdList(out, r.preempted, names);
  out += ", \"finished\": ";
  AppendIdList(out, r.finished, names);
  out += fmt::format(", \"num_free_blocks\": {}, \"new\": ", r.num_free_blocks);
  AppendIdList(out, r.admitted_new, names);
  out += ", \"resumed\": ";
  AppendIdList(out, r.resumed, names);
  out += fmt::format(", \"running\": {}, \"waiting\": {}, \"num_scheduled_tokens\": {}",
                     r.running, r.waiting, r.num_scheduled_tokens);
  if (r.t_start_ns >= 0) {
    out += fmt::format(", \"t_start_ns\": {}, \"t_end_ns\": {}", r.t_start_ns, r.t_end_ns);
  }
  if (r.has_offload) {
    out += ", \"kv_admitted\": [";
    for (size_t i = 0; i < r.kv_admitted.size(); ++i) {
      if (i) out += ", ";
      out += '[';
      names.Append(out, r.kv_admitted[i].request);
      out += fmt::format(", {}, {}]", r.kv_admitted[i].gpu_hit, r.kv_admitted[i].cpu_hit);
    }
    out += "], \"loading\": ";
    AppendIdList(out, r.loading, names);
    auto blocks = [&](const char* key, const std::vector<StepRecord::CpuBlocks>& v) {
      out += fmt::format(", \"{}\": [", key);
      for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += ", ";
        out += '[';
        names.Append(out, v[i].request);
        out += fmt::format(", [{}]]", fmt::join(v[i].block_indices, ", "));
      }
      out += ']';
    };
    blocks("cpu_loads", r.cpu_loads);
    blocks("cpu_stores", r.cpu_stores);
    out += ", \"cpu_evicted\": [";
    for (size_t i = 0; i < r.cpu_evicted.size(); ++i) {
      if (i) out += ", ";
      std::string name;
      names.Append(name, r.cpu_evicted[i].request);  // "rid" with its quotes
      name.insert(name.size() - 1, fmt::format("#{}", r.cpu_evicted[i].block_index));
      out += name;
    }
    out += fmt::format("], \"cpu_blocks_used\": {}, \"cpu_blocks_ready\": {}", r.cpu_blocks_used,
                       r.cpu_blocks_ready);
  }
  out += '}';
  return out;
}

}  // namespace

namespace {

// The fast path for one request line: a strict subset of JSON (an object whose keys are the
// five known ones, each at most once; an id string without escapes or an integer id; a
// non-empty array of token ids in [0, 1000000); decimal integers without fraction, exponent
// or leading '+'; spaces and tabs between tokens). It fills `r` and returns true, or returns
// false for anything else — including a value out of range — and the caller parses the line
// with nlohmann::json, which gives the same result for what this path accepts and the error
// message for the rest. Most of a large file's time is its token arrays, which this path reads
// without building a JSON tree.
class FastLine {
 public:
  explicit FastLine(std::string_view s) : s_(s) {}

  bool Parse(StepRequest& r, int64_t prompt_bound, bool& has_max_tokens) {
    bool seen[5] = {false, false, false, false, false};
    has_max_tokens = false;
    if (!Eat('{')) return false;
    for (bool first = true;; first = false) {
      Skip();
      if (Peek() == '}') {
        if (first) return false;  // {} : let the DOM path report what is missing
        ++p_;
        break;
      }
      if (!first && !Eat(',')) return false;
      std::string_view key;
      if (!String(key) || !Eat(':')) return false;
      int k = key == "id" ? 0 : key == "tokens" ? 1 : key == "max_tokens" ? 2
              : key == "arrival_step" ? 3 : key == "priority" ? 4 : -1;
      if (k < 0 || seen[k]) return false;
      seen[k] = true;
      Skip();
      if (k == 0) {
        std::string_view id;
        if (Peek() == '"') {
          if (!String(id)) return false;
          r.id.assign(id);
        } else {
          // A non-negative integer id is its own text (the tree path dumps the number; a
          // sign, as in -0, is left to it).
          int64_t v = 0;
          const size_t from = p_;
          if (Peek() == '-' || !Int(v)) return false;
          r.id.assign(s_.substr(from, p_ - from));
        }
      } else if (k == 1) {
        if (!Eat('[')) return false;
        r.tokens.clear();
        for (bool f = true;; f = false) {
          Skip();
          if (Peek() == ']') {
            if (f) return false;  // an empty list: the DOM path's message
            ++p_;
            break;
          }
          if (!f && !Eat(',')) return false;
          Skip();
          int64_t v = 0;
          if (!Int(v) || v < 0 || v >= kFirstGeneratedTokenId) return false;
          if (static_cast<int64_t>(r.tokens.size()) >= prompt_bound) return false;
          r.tokens.push_back(static_cast<TokenId>(v));
        }
      } else {
        int64_t v = 0;
        if (!Int(v)) return false;
        if (k == 2) {
          if (v < 1 || v > kMaxOutputTokens) return false;
          r.max_tokens = v;
          has_max_tokens = true;
        } else if (k == 3) {
          if (v < 0 || v > kMaxArrivalStep) return false;
          r.arrival_step = v;
        } else {
          if (v < -kMaxAbsPriority || v > kMaxAbsPriority) return false;
          r.priority = v;
        }
      }
    }
    Skip();
    return p_ == s_.size() && seen[0] && seen[1] && seen[2];
  }

 private:
  char Peek() const { return p_ < s_.size() ? s_[p_] : '\0'; }
  void Skip() {
    while (p_ < s_.size() && (s_[p_] == ' ' || s_[p_] == '\t')) ++p_;
  }
  bool Eat(char c) {
    Skip();
    if (Peek() != c) return false;
    ++p_;
    return true;
  }
  // A string of printable ASCII without escapes.
  bool String(std::string_view& out) {
    Skip();
    if (Peek() != '"') return false;
    const size_t from = ++p_;
    while (p_ < s_.size() && s_[p_] != '"') {
      const unsigned char c = static_cast<unsigned char>(s_[p_]);
      if (c == '\\' || c < 0x20 || c >= 0x7f) return false;
      ++p_;
    }
    if (p_ >= s_.size()) return false;
    out = s_.substr(from, p_ - from);
    ++p_;
    return true;
  }
  // A JSON integer of at most 15 digits (no fraction or exponent follows).
  bool Int(int64_t& v) {
    bool neg = false;
    if (Peek() == '-') {
      neg = true;
      ++p_;
    }
    const size_t from = p_;
    if (Peek() == '0' && p_ + 1 < s_.size() && s_[p_ + 1] >= '0' && s_[p_ + 1] <= '9') return false;
    int64_t x = 0;
    while (p_ < s_.size() && s_[p_] >= '0' && s_[p_] <= '9') {
      if (p_ - from >= 15) return false;
      x = x * 10 + (s_[p_] - '0');
      ++p_;
    }
    if (p_ == from) return false;
    const char next = Peek();
    if (next == '.' || next == 'e' || next == 'E') return false;
    v = neg ? -x : x;
    return true;
  }

  std::string_view s_;
  size_t p_ = 0;
};

// One line of REQUESTS.jsonl (not blank) into `out`; `seen` holds the ids so far.
Status ParseStepRequestLine(const std::string& text, const std::string& path, int64_t line,
                            int64_t prompt_bound, bool fast,
                            std::unordered_set<std::string>& seen,
                            std::vector<StepRequest>& out) {
  const bool full = static_cast<int64_t>(out.size()) >= kMaxRequests;
  if (fast && !full) {
    StepRequest r;
    bool has_max_tokens = false;
    if (FastLine(text).Parse(r, prompt_bound, has_max_tokens) && has_max_tokens &&
        !seen.count(r.id)) {
      seen.insert(r.id);
      r.tokens.shrink_to_fit();  // the array grew by doubling; a stream holds millions
      r.line = line;
      out.push_back(std::move(r));
      return Status::Ok();
    }
  }
  nlohmann::json obj = ParseJsonNoThrow<nlohmann::json>(text);
  if (obj.is_discarded()) return LineError(path, line, "", "not valid JSON");
  if (!obj.is_object()) return LineError(path, line, "", "expected a JSON object");
  // Checked once the line parsed as an object, as the tree path always has.
  if (full) return LineError(path, line, "", fmt::format("more than {} requests", kMaxRequests));
  StepRequest r;
  auto id = obj.find("id");
  if (id == obj.end()) {
    // A Mooncake line (`kvsim replay`'s and `kvsim run`'s trace format) has no id or tokens.
    const bool mooncake = obj.contains("hash_ids") || obj.contains("input_length");
    return LineError(path, line, "id",
                     mooncake ? "missing (required); this line looks like a Mooncake trace "
                                "(hash_ids, input_length), which `kvsim replay` and `kvsim run` "
                                "read; schedule reads {\"id\", \"tokens\", \"max_tokens\"} "
                                "per line (docs/step-log.md)"
                              : "missing (required)");
  }
  if (id->is_string()) {
    r.id = id->get<std::string>();
  } else if (id->is_number_integer()) {
    r.id = id->dump();
  } else {
    return LineError(path, line, "id", "expected a string");
  }
  if (!seen.insert(r.id).second) {
    return LineError(path, line, "id", "'" + r.id + "' appears twice");
  }
  auto tokens = obj.find("tokens");
  if (tokens == obj.end()) return LineError(path, line, "tokens", "missing (required)");
  if (!tokens->is_array() || tokens->empty()) {
    return LineError(path, line, "tokens", "expected a non-empty list of token ids");
  }
  if (static_cast<int64_t>(tokens->size()) > prompt_bound) {
    return LineError(path, line, "tokens",
                     fmt::format("{} tokens: a prompt must be shorter than max_model_len ({})",
                                 tokens->size(), prompt_bound + 1));
  }
  r.tokens.reserve(tokens->size());
  for (size_t i = 0; i < tokens->size(); ++i) {
    const auto& t = (*tokens)[i];
    if (!t.is_number_integer() || t.get<int64_t>() < 0 ||
        t.get<int64_t>() >= kFirstGeneratedTokenId) {
      return LineError(path, line, fmt::format("tokens[{}]", i),
                       "expected an integer token id in [0, 1000000): ids from 1000000 up "
                       "are the tokens the step clock samples (1000000 + step), so a prompt id "
                       "there would match generated tokens");
    }
    r.tokens.push_back(static_cast<TokenId>(t.get<int64_t>()));
  }
  auto max_tokens = IntField(obj, "max_tokens", path, line, std::nullopt, 1, kMaxOutputTokens);
  if (!max_tokens.ok()) return max_tokens.status();
  r.max_tokens = *max_tokens;
  auto arrival = IntField(obj, "arrival_step", path, line, 0, 0, kMaxArrivalStep);
  if (!arrival.ok()) return arrival.status();
  r.arrival_step = *arrival;
  auto prio = IntField(obj, "priority", path, line, 0, -kMaxAbsPriority, kMaxAbsPriority);
  if (!prio.ok()) return prio.status();
  r.priority = *prio;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string& k = it.key();
    if (k != "id" && k != "tokens" && k != "max_tokens" && k != "arrival_step" &&
        k != "priority") {
      return LineError(path, line, k,
                       "unknown key (known: id, tokens, max_tokens, arrival_step, priority)");
    }
  }
  r.line = line;
  out.push_back(std::move(r));
  return Status::Ok();
}

int64_t PromptBound(int64_t max_model_len) {
  return max_model_len > 0 ? std::min(max_model_len - 1, kMaxPromptTokens) : kMaxPromptTokens;
}

// Every non-blank line of `in`, in order (a trailing '\r' dropped), through the line parser.
Result<std::vector<StepRequest>> ParseStepRequestStream(std::istream& in, const std::string& path,
                                                        int64_t max_model_len, bool fast) {
  std::vector<StepRequest> out;
  std::unordered_set<std::string> seen;
  const int64_t prompt_bound = PromptBound(max_model_len);
  std::string text;
  int64_t line = 0;
  while (std::getline(in, text)) {
    ++line;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text.find_first_not_of(" \t") == std::string::npos) continue;
    if (Status s = ParseStepRequestLine(text, path, line, prompt_bound, fast, seen, out);
        !s.ok())
      return s;
  }
  if (in.bad()) return Status::Error("invalid_input", path + ": read error");
  if (out.empty()) return Status::Error("invalid_input", path + ": no requests in the file");
  return out;
}

}  // namespace

Result<std::vector<StepRequest>> ParseStepRequests(std::string_view text, const std::string& path,
                                                   int64_t max_model_len, bool fast) {
  std::istringstream in{std::string(text)};
  return ParseStepRequestStream(in, path, max_model_len, fast);
}

Result<std::vector<StepRequest>> ReadStepRequests(const std::string& path,
                                                  int64_t max_model_len) {
  std::ifstream in(path);
  if (!in) return Status::Error("invalid_input", path + ": cannot open the requests file");
  return ParseStepRequestStream(in, path, max_model_len, /*fast=*/true);
}

std::string StepRecordJson(const StepRecord& r, const std::vector<StepRequest>& requests) {
  return RecordJson(r, RequestNames{&requests});
}

std::string StepRecordJson(const StepRecord& r) { return RecordJson(r, RequestNames{}); }

std::string StepSummaryJson(const StepClockSummary& s, const std::vector<StepRequest>& requests) {
  std::string out = fmt::format(
      "{{\"summary\": true, \"steps\": {}, \"last_step\": {}, \"total_preemptions\": {}, "
      "\"per_request\": {{",
      s.steps, s.last_step, s.total_preemptions);
  for (size_t i = 0; i < s.per_request.size(); ++i) {
    const StepRequestSummary& p = s.per_request[i];
    if (i) out += ", ";
    AppendJsonString(out, requests[i].id);
    out += fmt::format(": {{\"hit_tokens\": {}, \"resume_hit_tokens\": [{}], "
                       "\"first_token_step\": {}, \"finish_step\": {}, \"num_preemptions\": {}",
                       p.hit_tokens, fmt::join(p.resume_hit_tokens, ", "), p.first_token_step,
                       p.finish_step, p.num_preemptions);
    if (s.has_offload) {
      out += fmt::format(", \"gpu_hit_tokens\": {}, \"cpu_hit_tokens\": {}, "
                         "\"resume_gpu_hit_tokens\": [{}], \"resume_cpu_hit_tokens\": [{}]",
                         p.gpu_hit_tokens, p.cpu_hit_tokens,
                         fmt::join(p.resume_gpu_hit_tokens, ", "),
                         fmt::join(p.resume_cpu_hit_tokens, ", "));
    }
    out += '}';
  }
  out += "}}";
  return out;
}

}  // namespace kvsim
