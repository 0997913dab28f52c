// Trace and YAML input that used to crash, hang or pass silently (issue 12 §2): sizes beyond
// max_model_len or kvsim's bound, Mooncake hash-id counts, optional input_length, impossible
// timestamps, Azure columns by header name, and YAML aliases.
#include <catch2/catch_test_macros.hpp>
#include <filesystem>
#include <fstream>

#include "sim/config/config_tree.h"
#include "sim/trace/request_trace.h"
#include "sim/workload/i_workload.h"
#include "sim/workload/trace_workload.h"

namespace kvsim {
namespace {

bool Contains(const Status& s, const std::string& what) {
  return s.message().find(what) != std::string::npos;
}

TEST_CASE("trace: a huge input_length is a bad line, never an allocation", "[trace]") {
  for (const char* n : {"1000000000000", "9223372036854775807", "4294967296", "1e12", "1e19"}) {
    const std::string line = std::string("{\"hash_ids\": [1], \"input_length\": ") + n + "}\n";
    auto t = RequestTrace::Parse("{\"tokens\": [1]}\n" + line, "big.jsonl");
    INFO(n);
    REQUIRE_FALSE(t.ok());
    CHECK(Contains(t.status(), "big.jsonl:2: "));
    CHECK(Contains(t.status(), "input_length"));
    // Skipping bad lines drops it and counts it.
    auto s = RequestTrace::Parse("{\"tokens\": [1]}\n" + line, "big.jsonl", true);
    REQUIRE(s.ok());
    CHECK(s->size() == 1);
    CHECK(s->skipped_lines() == 1);
  }
}

TEST_CASE("trace: the caller's max_model_len bounds every prompt", "[trace]") {
  TraceLimits lim;
  lim.max_prompt_tokens = 1000;
  lim.why = "max_model_len 1001";
  // 2 ids of 512 tokens: 1001 tokens is one above the bound, 1000 is at it.
  auto over = RequestTrace::Parse("{\"hash_ids\": [1, 2], \"input_length\": 1001}\n", "m.jsonl",
                                  false, lim);
  REQUIRE_FALSE(over.ok());
  CHECK(Contains(over.status(), "m.jsonl:1: 'input_length' = 1001 is above 1000 tokens"));
  CHECK(Contains(over.status(), "max_model_len 1001"));
  CHECK(RequestTrace::Parse("{\"hash_ids\": [1, 2], \"input_length\": 1000}\n", "m.jsonl", false,
                            lim)
            .ok());
  auto toks = RequestTrace::Parse("{\"tokens\": [1, 2, 3]}\n", "t.jsonl", false,
                                  TraceLimits{2, "two"});
  REQUIRE_FALSE(toks.ok());
  CHECK(Contains(toks.status(), "t.jsonl:1: 'tokens' holds 3 ids, above 2 tokens (two)"));
}

TEST_CASE("trace: len(hash_ids) must be ceil(input_length / block_tokens)", "[trace]") {
  // 100000 tokens in blocks of 512 need ceil(100000/512) = 196 ids; one is given.
  auto one = RequestTrace::Parse("{\"hash_ids\": [7], \"input_length\": 100000}\n", "h.jsonl");
  REQUIRE_FALSE(one.ok());
  CHECK(Contains(one.status(), "h.jsonl:1: 'hash_ids' has 1 ids"));
  CHECK(Contains(one.status(), "= 196"));
  // Too many ids: 3 ids for 8 tokens of 4.
  CHECK_FALSE(RequestTrace::Parse(
                  "{\"hash_ids\": [1, 2, 3], \"input_length\": 8, \"block_tokens\": 4}\n", "h")
                  .ok());
  // Exactly right: 9 tokens of 4 → 3 ids.
  CHECK(RequestTrace::Parse("{\"hash_ids\": [1, 2, 3], \"input_length\": 9, \"block_tokens\": 4}\n",
                            "h")
            .ok());
  // Skipped and counted under --skip-bad-lines.
  auto s = RequestTrace::Parse("{\"hash_ids\": [7], \"input_length\": 100000}\n", "h", true);
  REQUIRE(s.ok());
  CHECK(s->skipped_lines() == 1);
}

TEST_CASE("trace: input_length may be left out of a hash-id line", "[trace]") {
  auto t = RequestTrace::Parse("{\"hash_ids\": [3, 4], \"block_tokens\": 4}\n{\"hash_ids\": [9]}\n",
                               "o.jsonl");
  REQUIRE(t.ok());
  CHECK((*t)[0].input_length == 8);    // 2 ids × 4
  CHECK((*t)[1].input_length == 512);  // 1 id × the default 512
  std::vector<TokenId> p;
  t->PromptTokens(0, p);
  CHECK(p == std::vector<TokenId>{12, 13, 14, 15, 16, 17, 18, 19});
}

TEST_CASE("trace: timestamps must be finite and non-negative", "[trace]") {
  auto neg = RequestTrace::Parse("{\"tokens\": [1], \"timestamp\": -5}\n", "n.jsonl");
  REQUIRE_FALSE(neg.ok());
  CHECK(Contains(neg.status(), "n.jsonl:1: 'timestamp'"));
  CHECK(RequestTrace::Parse("{\"tokens\": [1], \"timestamp\": 0}\n", "z").ok());
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string p = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(p) << text;
  return p;
}

TEST_CASE("trace workload: timestamps going back and prompts beyond max_model_len are errors",
          "[trace][workload]") {
  WorkloadConfig c;
  c.kind = "trace";
  c.trace.required = true;
  c.trace.path = WriteTemp("kvsim_back.jsonl",
                           "{\"tokens\": [1, 2], \"timestamp\": 10}\n"
                           "{\"tokens\": [3, 4], \"timestamp\": 5}\n");
  auto back = MakeWorkload(c, 1, nullptr);
  REQUIRE_FALSE(back.ok());
  CHECK(Contains(back.status(), "kvsim_back.jsonl:2: 'timestamp' goes back in time"));

  c.trace.path = WriteTemp("kvsim_long.jsonl", "{\"tokens\": [1, 2, 3, 4]}\n");
  c.max_model_len = 4;  // room for 3 prompt tokens and one output token
  auto lng = MakeWorkload(c, 1, nullptr);
  REQUIRE_FALSE(lng.ok());
  CHECK(Contains(lng.status(), "kvsim_long.jsonl:1:"));
  CHECK(Contains(lng.status(), "max_model_len 4"));
  c.max_model_len = 5;
  CHECK(MakeWorkload(c, 1, nullptr).ok());
}

TEST_CASE("azure csv: columns by header name, bounds and time order", "[trace][workload]") {
  // Reordered and extra columns are read by name.
  auto a = ParseAzureCsv(
      "GeneratedTokens,Extra,ContextTokens,TIMESTAMP\n"
      "10,x,4808,2023-11-16 18:17:03.5000000\n"
      "8,y,3180,2023-11-16 18:17:04.0000000\n",
      "r.csv");
  REQUIRE(a.ok());
  REQUIRE(a->size() == 2);
  CHECK((*a)[0].prompt_tokens == 4808);
  CHECK((*a)[0].output_tokens == 10);
  CHECK((*a)[1].prompt_tokens == 3180);
  CHECK((*a)[1].time_s == 0.5);

  auto no_header = ParseAzureCsv("2023-11-16 18:17:03.5000000,4808,10\n", "n.csv");
  REQUIRE_FALSE(no_header.ok());
  CHECK(Contains(no_header.status(), "n.csv:1: the header lacks"));

  auto missing = ParseAzureCsv("TIMESTAMP,ContextTokens\n2023-11-16 18:17:03,1\n", "m.csv");
  REQUIRE_FALSE(missing.ok());
  CHECK(Contains(missing.status(), "GeneratedTokens"));

  const std::string h = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
  for (const char* n : {"1000000000000", "9223372036854775808", "4294967296"}) {
    auto big = ParseAzureCsv(h + "2023-11-16 18:17:03.5,"+ std::string(n) + ",1\n", "b.csv");
    INFO(n);
    REQUIRE_FALSE(big.ok());
    CHECK(Contains(big.status(), "b.csv:2: ContextTokens: "));
    CHECK(Contains(big.status(), "is above"));
  }
  auto bound = ParseAzureCsv(h + "2023-11-16 18:17:03.5,101,1\n", "b.csv", 100, "max_model_len");
  REQUIRE_FALSE(bound.ok());
  CHECK(Contains(bound.status(), "101 is above 100 tokens (max_model_len)"));

  auto back = ParseAzureCsv(h + "2023-11-16 18:17:04,1,1\n2023-11-16 18:17:03,1,1\n", "t.csv");
  REQUIRE_FALSE(back.ok());
  CHECK(Contains(back.status(), "t.csv:3: TIMESTAMP: goes back in time"));
  auto month = ParseAzureCsv(h + "2023-13-16 18:17:04,1,1\n", "t.csv");
  REQUIRE_FALSE(month.ok());
  CHECK(Contains(month.status(), "t.csv:2: TIMESTAMP"));
}

TEST_CASE("yaml: aliases are bounded before they are expanded", "[config]") {
  // An alias inside the node its anchor names: an infinite tree.
  auto self = ParseYaml("a: &x\n  b: *x\n", "self.yaml");
  REQUIRE_FALSE(self.ok());
  CHECK(Contains(self.status(), "self.yaml:2: a.b: "));
  CHECK(Contains(self.status(), "cycle"));
  auto self_seq = ParseYaml("a: &x [1, *x]\n", "seq.yaml");
  REQUIRE_FALSE(self_seq.ok());
  CHECK(Contains(self_seq.status(), "seq.yaml:1: a[1]: "));

  // "Billion laughs": 9 levels of 9 aliases each would be 9^9 nodes.
  std::string laughs = "l0: &l0 [x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    laughs += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [";
    for (int k = 0; k < 9; ++k) laughs += (k ? ", *l" : "*l") + std::to_string(i - 1);
    laughs += "]\n";
  }
  auto boom = ParseYaml(laughs, "lol.yaml");
  REQUIRE_FALSE(boom.ok());
  CHECK(Contains(boom.status(), "lol.yaml:"));
  CHECK(Contains(boom.status(), "alias"));

  // A few aliases of small nodes are still fine.
  auto ok = ParseYaml("base: &b {x: 1}\nc: *b\nd: *b\n", "ok.yaml");
  REQUIRE(ok.ok());
  REQUIRE(ok->Find("d") != nullptr);
  CHECK(ok->Find("d")->Find("x")->scalar == "1");
}

}  // namespace
}  // namespace kvsim
