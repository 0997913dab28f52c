// Request traces for cache-only replay and for the simulator's workloads: JSONL files with one
// request per line, in either of two forms (issue 3):
//   tokens:    {"id": ..., "tokens": [t0, t1, ...], "timestamp": t, "output_length": m}
//   Mooncake:  {"hash_ids": [h0, h1, ...], "input_length": n, "block_tokens": 512,
//               "timestamp": t, "output_length": m}        (block_tokens defaults to 512)
// For hash ids, block k of hash h stands for the tokens h·block_tokens + j (j < block_tokens),
// so equal ids mean equal content at every block size. The prompt is the first input_length
// of those tokens, padded with request-unique (negative) tokens when input_length is longer.
//
// A RequestTrace owns all requests in flat arrays (no per-request allocation), so million-
// request traces stay compact. Bad lines are errors naming the file and line, or, with
// skip_bad_lines, are counted and dropped. Blank lines are ignored.
//
// What a line must satisfy (anything else is a bad line):
//   - every prompt is at most TraceLimits::max_prompt_tokens long (kMaxTracePromptTokens, or
//     the model's max_model_len where the caller knows it), so a typo such as 1e12 is an
//     error and never a huge allocation;
//   - Mooncake: len(hash_ids) == ceil(input_length / block_tokens); input_length may be left
//     out and then is len(hash_ids) × block_tokens;
//   - timestamp, when given, is a finite number ≥ 0 (the order of lines is the caller's
//     business: a cache-only replay ignores time, the simulator requires it non-decreasing).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/block_hash.h"
#include "core/status.h"

namespace kvsim {

struct TraceRecord {
  std::string id;              // "id" if given (string or number), else the line number
  int64_t line = 0;            // 1-based line in the file
  double timestamp = 0;        // as in the file (Mooncake: milliseconds)
  int64_t output_length = 0;
  int64_t input_length = 0;    // prompt tokens
  int64_t block_tokens = 0;    // Mooncake form: tokens per hash id; 0 for the tokens form
  size_t offset = 0;           // into RequestTrace::tokens() or ::hash_ids()
  size_t count = 0;            // number of tokens or hash ids
};

// kvsim's own bound on one prompt: 2^24 tokens (64 MiB of token ids), above every model's
// context length today.
inline constexpr int64_t kMaxTracePromptTokens = int64_t{1} << 24;

struct TraceLimits {
  int64_t max_prompt_tokens = kMaxTracePromptTokens;
  std::string why = "kvsim's bound on one prompt";  // named in the message
};

class RequestTrace {
 public:
  static Result<RequestTrace> ReadFile(const std::string& path, bool skip_bad_lines = false,
                                       const TraceLimits& limits = {});
  // `name` labels error messages (a file name).
  static Result<RequestTrace> Parse(std::string_view text, const std::string& name,
                                    bool skip_bad_lines = false,
                                    const TraceLimits& limits = {});

  size_t size() const { return records_.size(); }
  const TraceRecord& operator[](size_t i) const { return records_[i]; }
  const std::vector<TraceRecord>& records() const { return records_; }
  int64_t skipped_lines() const { return skipped_lines_; }
  bool has_hash_ids(size_t i) const { return records_[i].block_tokens > 0; }
  std::span<const int64_t> hash_ids(size_t i) const {
    return {hash_ids_.data() + records_[i].offset, records_[i].count};
  }
  std::span<const TokenId> tokens(size_t i) const {
    return {tokens_.data() + records_[i].offset, records_[i].count};
  }
  int64_t total_prompt_tokens() const;

  // Writes request i's prompt token ids into `out` (resized). Padding tokens are
  // −(i + 1): unique to the request, and never equal to a real (non-negative) token.
  void PromptTokens(size_t i, std::vector<TokenId>& out) const;
  // The prompt of request i in the form KvCacheManager::AddRequestWithHashes takes: the
  // chained hashes of its full blocks of `block_size` (from kNoneHash, no extra keys) in
  // `hashes`, and the tokens of its unfinished last block in `tail` (both replaced). Equal to
  // HashFullBlocks over PromptTokens(i), but for hash ids whose blocks split evenly into
  // `block_size` the tokens are never materialized.
  void PromptBlockHashes(size_t i, int64_t block_size, std::vector<BlockHash>& hashes,
                         std::vector<TokenId>& tail) const;
  // For a hash-id request whose full blocks of `block_size` are each a run of consecutive
  // token ids (block_size divides block_tokens, and no full block reaches the padding): the
  // first token id of every full block in `firsts`, the unfinished last block in `tail`, and
  // true. False otherwise (then use PromptBlockHashes).
  bool PromptBlockFirstTokens(size_t i, int64_t block_size, std::vector<TokenId>& firsts,
                              std::vector<TokenId>& tail) const;

  // Appends one request (for generated traces and tests).
  void AddTokens(std::string id, std::span<const TokenId> tokens, double timestamp = 0,
                 int64_t output_length = 0);
  void AddHashIds(std::string id, std::span<const int64_t> ids, int64_t input_length,
                  int64_t block_tokens = 512, double timestamp = 0, int64_t output_length = 0);

 private:
  // The tokens of request i from position `from` to the end of its prompt (hash-id form).
  void HashIdTail(size_t i, int64_t from, std::vector<TokenId>& tail) const;

  std::vector<TraceRecord> records_;
  std::vector<TokenId> tokens_;
  std::vector<int64_t> hash_ids_;
  int64_t skipped_lines_ = 0;
};

// A synthetic token trace with shared prefixes (a few system prompts, multi-turn sessions
// that extend their own history), deterministic in `seed`. Used for the sample trace, tests
// and the benchmark when the Mooncake trace is absent.
RequestTrace GenerateSessionTrace(uint64_t seed, int64_t num_requests, int64_t num_sessions,
                                  int64_t system_prompt_tokens, int64_t turn_tokens);

}  // namespace kvsim

namespace kvsim {
// A synthetic trace in the Mooncake hash-id form and of the conversation trace's shape:
// every request starts with one shared block (id 0), sessions grow turn by turn (each turn
// repeats its session's history and adds new blocks), lengths vary, and sessions interleave.
RequestTrace GenerateMooncakeStyleTrace(uint64_t seed, int64_t num_requests,
                                        int64_t num_sessions);
}  // namespace kvsim
