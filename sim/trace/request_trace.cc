#include "sim/trace/request_trace.h"
#include "sim/json_text.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

namespace kvsim {
namespace {

using Json = nlohmann::json;

Status LineError(const std::string& name, int64_t line, const std::string& msg) {
  return Status::Error("bad_trace_line", name + ":" + std::to_string(line) + ": " + msg);
}

bool AsInt(const Json& v, int64_t* out) {
  if (v.is_number_integer()) {
    *out = v.get<int64_t>();
    return true;
  }
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return false;
    *out = static_cast<int64_t>(u);
    return true;
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    // Outside int64's range the cast below is undefined (1e19, inf, nan).
    if (!(d >= -9.2e18 && d <= 9.2e18)) return false;
    if (d != static_cast<double>(static_cast<int64_t>(d))) return false;
    *out = static_cast<int64_t>(d);
    return true;
  }
  return false;
}

}  // namespace

int64_t RequestTrace::total_prompt_tokens() const {
  int64_t n = 0;
  for (const auto& r : records_) n += r.input_length;
  return n;
}

void RequestTrace::AddTokens(std::string id, std::span<const TokenId> tokens, double timestamp,
                             int64_t output_length) {
  TraceRecord r;
  r.id = std::move(id);
  r.line = static_cast<int64_t>(records_.size()) + 1;
  r.timestamp = timestamp;
  r.output_length = output_length;
  r.input_length = static_cast<int64_t>(tokens.size());
  r.offset = tokens_.size();
  r.count = tokens.size();
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  records_.push_back(std::move(r));
}

void RequestTrace::AddHashIds(std::string id, std::span<const int64_t> ids, int64_t input_length,
                              int64_t block_tokens, double timestamp, int64_t output_length) {
  TraceRecord r;
  r.id = std::move(id);
  r.line = static_cast<int64_t>(records_.size()) + 1;
  r.timestamp = timestamp;
  r.output_length = output_length;
  r.input_length = input_length;
  r.block_tokens = block_tokens;
  r.offset = hash_ids_.size();
  r.count = ids.size();
  hash_ids_.insert(hash_ids_.end(), ids.begin(), ids.end());
  records_.push_back(std::move(r));
}

void RequestTrace::PromptTokens(size_t i, std::vector<TokenId>& out) const {
  const TraceRecord& r = records_[i];
  out.resize(static_cast<size_t>(r.input_length));
  if (r.block_tokens == 0) {
    std::copy(tokens_.begin() + static_cast<long>(r.offset),
              tokens_.begin() + static_cast<long>(r.offset + r.count), out.begin());
    return;
  }
  const int64_t bt = r.block_tokens;
  int64_t pos = 0;
  TokenId* o = out.data();
  for (size_t k = 0; k < r.count && pos < r.input_length; ++k) {
    const int64_t base = hash_ids_[r.offset + k] * bt;
    const int64_t n = std::min(bt, r.input_length - pos);
    for (int64_t j = 0; j < n; ++j) o[pos + j] = static_cast<TokenId>(base + j);
    pos += n;
  }
  const TokenId pad = static_cast<TokenId>(-(static_cast<int64_t>(i % INT32_MAX) + 1));
  for (; pos < r.input_length; ++pos) o[pos] = pad;
}

void RequestTrace::PromptBlockHashes(size_t i, int64_t block_size,
                                     std::vector<BlockHash>& hashes,
                                     std::vector<TokenId>& tail) const {
  const TraceRecord& r = records_[i];
  hashes.clear();
  const int64_t nfull = r.input_length / block_size;
  const int64_t bt = r.block_tokens;
  if (bt == 0) {  // token form: hash in place
    const std::span<const TokenId> t = tokens(i);
    HashFullBlocks(kNoneHash, t, block_size, hashes);
    tail.assign(t.begin() + nfull * block_size, t.end());
    return;
  }
  if (bt % block_size != 0) {  // blocks straddle hash ids: materialize
    PromptTokens(i, tail);
    HashFullBlocks(kNoneHash, tail, block_size, hashes);
    tail.erase(tail.begin(), tail.begin() + nfull * block_size);
    return;
  }
  // Every hash id is a run of bt / block_size blocks of consecutive token ids.
  hashes.reserve(static_cast<size_t>(nfull));
  const int64_t per_id = bt / block_size;
  BlockHash parent = kNoneHash;
  int64_t done = 0;  // blocks hashed
  for (size_t k = 0; k < r.count && done < nfull; ++k) {
    const int64_t nb = std::min(per_id, nfull - done);
    parent = HashConsecutiveBlocks(parent, static_cast<TokenId>(hash_ids_[r.offset + k] * bt),
                                   block_size, nb, hashes);
    done += nb;
  }
  if (done < nfull) {  // full blocks in the padding past the last hash id (rare)
    PromptTokens(i, tail);
    HashFullBlocks(parent, std::span<const TokenId>(tail).subspan(static_cast<size_t>(done * block_size),
                                                            static_cast<size_t>((nfull - done) * block_size)),
                   block_size, hashes);
    tail.erase(tail.begin(), tail.begin() + nfull * block_size);
    return;
  }
  HashIdTail(i, nfull * block_size, tail);  // the unfinished last block
}

void RequestTrace::HashIdTail(size_t i, int64_t from, std::vector<TokenId>& tail) const {
  const TraceRecord& r = records_[i];
  const int64_t bt = r.block_tokens;
  tail.clear();
  const TokenId pad = static_cast<TokenId>(-(static_cast<int64_t>(i % INT32_MAX) + 1));
  for (int64_t pos = from; pos < r.input_length; ++pos) {
    const size_t k = static_cast<size_t>(pos / bt);
    tail.push_back(k < r.count ? static_cast<TokenId>(hash_ids_[r.offset + k] * bt + pos % bt)
                               : pad);
  }
}

bool RequestTrace::PromptBlockFirstTokens(size_t i, int64_t block_size,
                                          std::vector<TokenId>& firsts,
                                          std::vector<TokenId>& tail) const {
  const TraceRecord& r = records_[i];
  const int64_t bt = r.block_tokens;
  if (bt == 0 || bt % block_size != 0) return false;
  const int64_t nfull = r.input_length / block_size;
  if (nfull * block_size > static_cast<int64_t>(r.count) * bt) return false;  // padding
  firsts.resize(static_cast<size_t>(nfull));
  const int64_t per_id = bt / block_size;
  int64_t done = 0;
  for (size_t k = 0; done < nfull; ++k) {
    const int64_t base = hash_ids_[r.offset + k] * bt;
    const int64_t nb = std::min(per_id, nfull - done);
    for (int64_t j = 0; j < nb; ++j)
      firsts[static_cast<size_t>(done + j)] = static_cast<TokenId>(base + j * block_size);
    done += nb;
  }
  HashIdTail(i, nfull * block_size, tail);
  return true;
}

Result<RequestTrace> RequestTrace::ReadFile(const std::string& path, bool skip_bad_lines,
                                            const TraceLimits& limits) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Error("trace_not_found", path + ": cannot open trace file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return Parse(ss.str(), path, skip_bad_lines, limits);
}

Result<RequestTrace> RequestTrace::Parse(std::string_view text, const std::string& name,
                                         bool skip_bad_lines, const TraceLimits& limits) {
  const int64_t max_prompt = std::min(limits.max_prompt_tokens, kMaxTracePromptTokens);
  const std::string max_why =
      limits.max_prompt_tokens < kMaxTracePromptTokens ? limits.why : "kvsim's bound on one prompt";
  auto too_long = [&](int64_t n) {
    return "'input_length' = " + std::to_string(n) + " is above " + std::to_string(max_prompt) +
           " tokens (" + max_why + ")";
  };
  RequestTrace t;
  int64_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;

    std::string err;
    Json j = ParseJsonNoThrow<Json>(line);
    TraceRecord r;
    r.line = line_no;
    r.id = std::to_string(line_no);
    const size_t tok_mark = t.tokens_.size(), hash_mark = t.hash_ids_.size();
    auto fail = [&](std::string m) { err = std::move(m); };
    if (j.is_discarded()) {
      // The Azure CSV's header: a user gave the run-only format to a JSONL reader.
      fail(line_no == 1 && line.rfind("TIMESTAMP,", 0) == 0
               ? "not valid JSON: this looks like an Azure CSV trace; traces here are JSONL "
                 "({\"tokens\": [...]} or Mooncake {\"hash_ids\": [...]} lines), and an Azure "
                 "CSV has no prompt content to hit on (kvsim run reads it for arrivals)"
               : "not valid JSON");
    } else if (!j.is_object()) {
      fail("expected a JSON object");
    } else {
      if (auto it = j.find("id"); it != j.end()) {
        if (it->is_string()) r.id = it->get<std::string>();
        else if (it->is_number_integer() || it->is_number_unsigned()) r.id = it->dump();
        else fail("'id' must be a string or an integer");
      }
      if (auto it = j.find("timestamp"); err.empty() && it != j.end()) {
        if (!it->is_number()) fail("'timestamp' must be a number");
        else r.timestamp = it->get<double>();
        if (err.empty() && !(r.timestamp >= 0 && std::isfinite(r.timestamp)))
          fail("'timestamp' must be a finite number >= 0");
      }
      if (auto it = j.find("output_length"); err.empty() && it != j.end()) {
        if (!AsInt(*it, &r.output_length) || r.output_length < 0)
          fail("'output_length' must be a non-negative integer");
      }
      const auto tok = j.find("tokens");
      const auto hid = j.find("hash_ids");
      if (!err.empty()) {
      } else if (tok != j.end() && hid != j.end()) {
        fail("give either 'tokens' or 'hash_ids', not both");
      } else if (tok != j.end()) {
        if (!tok->is_array()) {
          fail("'tokens' must be an array of token ids");
        } else if (static_cast<int64_t>(tok->size()) > max_prompt) {
          fail("'tokens' holds " + std::to_string(tok->size()) + " ids, above " +
               std::to_string(max_prompt) + " tokens (" + max_why + ")");
        } else {
          r.offset = t.tokens_.size();
          size_t k = 0;
          for (const Json& v : *tok) {
            int64_t x = 0;
            if (!AsInt(v, &x) || x < 0 || x > INT32_MAX) {
              fail("'tokens'[" + std::to_string(k) + "] must be an integer in [0, 2^31)");
              break;
            }
            t.tokens_.push_back(static_cast<TokenId>(x));
            ++k;
          }
          r.count = t.tokens_.size() - r.offset;
          r.input_length = static_cast<int64_t>(r.count);
          if (err.empty() && r.count == 0) fail("'tokens' is empty");
        }
      } else if (hid != j.end()) {
        r.block_tokens = 512;
        if (auto it = j.find("block_tokens"); it != j.end()) {
          if (!AsInt(*it, &r.block_tokens) || r.block_tokens <= 0 ||
              r.block_tokens > kMaxTracePromptTokens)
            fail("'block_tokens' must be an integer in [1, 2^24]");
        }
        auto il = j.find("input_length");
        if (!err.empty()) {
        } else if (!hid->is_array()) {
          fail("'hash_ids' must be an array of non-negative integers");
        } else if (hid->empty()) {
          fail("'hash_ids' is empty");
        } else if (il == j.end()) {
          // Left out: every hash id is a full block.
          const int64_t n = static_cast<int64_t>(hid->size());
          if (n > max_prompt / r.block_tokens) {
            fail("'hash_ids' holds " + std::to_string(n) + " blocks of " +
                 std::to_string(r.block_tokens) + " tokens, above " +
                 std::to_string(max_prompt) + " tokens (" + max_why + ")");
          } else {
            r.input_length = n * r.block_tokens;
          }
        } else if (!AsInt(*il, &r.input_length) || r.input_length <= 0) {
          fail("'input_length' must be a positive integer");
        } else if (r.input_length > max_prompt) {
          fail(too_long(r.input_length));
        } else if (const int64_t want = (r.input_length + r.block_tokens - 1) / r.block_tokens;
                   want != static_cast<int64_t>(hid->size())) {
          fail("'hash_ids' has " + std::to_string(hid->size()) + " ids but 'input_length' " +
               std::to_string(r.input_length) + " needs ceil(" + std::to_string(r.input_length) +
               " / " + std::to_string(r.block_tokens) + ") = " + std::to_string(want) +
               " (one id per block of 'block_tokens')");
        }
        if (err.empty()) {
          r.offset = t.hash_ids_.size();
          size_t k = 0;
          const int64_t max_id = (int64_t{INT32_MAX} + 1) / r.block_tokens - 1;
          for (const Json& v : *hid) {
            int64_t x = 0;
            if (!AsInt(v, &x) || x < 0) {
              fail("'hash_ids'[" + std::to_string(k) + "] must be a non-negative integer");
              break;
            }
            if (x > max_id) {
              fail("'hash_ids'[" + std::to_string(k) + "] = " + std::to_string(x) +
                   " is too large: id × block_tokens must stay below 2^31");
              break;
            }
            t.hash_ids_.push_back(x);
            ++k;
          }
          r.count = t.hash_ids_.size() - r.offset;
        }
      } else {
        fail("expected 'tokens' or 'hash_ids'");
      }
    }
    if (!err.empty()) {
      t.tokens_.resize(tok_mark);
      t.hash_ids_.resize(hash_mark);
      if (!skip_bad_lines) return LineError(name, line_no, err);
      ++t.skipped_lines_;
      continue;
    }
    t.records_.push_back(std::move(r));
  }
  return t;
}

RequestTrace GenerateSessionTrace(uint64_t seed, int64_t num_requests, int64_t num_sessions,
                                  int64_t system_prompt_tokens, int64_t turn_tokens) {
  std::mt19937_64 rng(seed);
  RequestTrace t;
  const int64_t num_system = 3;
  std::vector<std::vector<TokenId>> history(static_cast<size_t>(num_sessions));
  TokenId next_token = 1000000;  // above every system-prompt token
  for (int64_t s = 0; s < num_sessions; ++s) {
    const TokenId sys = static_cast<TokenId>(1 + s % num_system);
    history[static_cast<size_t>(s)].resize(static_cast<size_t>(system_prompt_tokens));
    for (int64_t k = 0; k < system_prompt_tokens; ++k)
      history[static_cast<size_t>(s)][static_cast<size_t>(k)] = static_cast<TokenId>(sys * 100000 + k);
  }
  for (int64_t i = 0; i < num_requests; ++i) {
    auto& h = history[rng() % static_cast<uint64_t>(num_sessions)];
    const int64_t add = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(2 * turn_tokens));
    for (int64_t k = 0; k < add; ++k) h.push_back(next_token++);
    t.AddTokens(std::to_string(i), h, static_cast<double>(i) * 100.0,
                static_cast<int64_t>(rng() % 64));
    // The model's answer joins the history of the next turn.
    const int64_t out = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(turn_tokens));
    for (int64_t k = 0; k < out; ++k) h.push_back(next_token++);
  }
  return t;
}

RequestTrace GenerateMooncakeStyleTrace(uint64_t seed, int64_t num_requests,
                                        int64_t num_sessions) {
  std::mt19937_64 rng(seed);
  RequestTrace t;
  std::vector<std::vector<int64_t>> sessions(static_cast<size_t>(num_sessions));
  int64_t next_id = 1;
  for (int64_t i = 0; i < num_requests; ++i) {
    const size_t s = rng() % static_cast<uint64_t>(num_sessions);
    auto& h = sessions[s];
    if (h.empty() || rng() % 8 == 0) {  // a new conversation in this slot
      h.assign(1, 0);
    }
    const int64_t add = 1 + static_cast<int64_t>(rng() % 24);
    for (int64_t k = 0; k < add; ++k) h.push_back(next_id++);
    const int64_t input = static_cast<int64_t>(h.size()) * 512 -
                          static_cast<int64_t>(rng() % 512);
    t.AddHashIds(std::to_string(i), h, input, 512, static_cast<double>(i) * 50.0,
                 1 + static_cast<int64_t>(rng() % 800));
  }
  return t;
}

}  // namespace kvsim
