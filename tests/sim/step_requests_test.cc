// `kvsim schedule`'s REQUESTS.jsonl parser (sim/instance/step_clock.h): the strict fast path
// and the JSON-tree path read the same requests and give the same errors. Expected values are
// read off the lines by hand; the fuzz target (tests/fuzz/fuzz_step_requests.cc) checks the
// agreement on mutated inputs.
#include <catch2/catch_test_macros.hpp>

#include <string>
#include <vector>

#include "sim/instance/step_clock.h"

namespace kvsim {
namespace {

struct Both {
  Result<std::vector<StepRequest>> fast, tree;
};

Both Parse(const std::string& text, int64_t max_model_len = 0) {
  return {ParseStepRequests(text, "r.jsonl", max_model_len, true),
          ParseStepRequests(text, "r.jsonl", max_model_len, false)};
}

TEST_CASE("step requests: the fast path and the JSON tree read the same requests") {
  const std::string text =
      "{\"id\": \"c17\", \"tokens\": [12, 13, 14], \"max_tokens\": 40, \"arrival_step\": 3, "
      "\"priority\": 0}\n"
      "\r\n"
      "  {\"tokens\":[5, 6 ,7],\"max_tokens\":1,\"id\":\"x\",\"priority\":-3}\r\n"
      "{\"id\": 7, \"tokens\": [0, 999999], \"max_tokens\": 2}\n"
      "{\"id\": \"u\\u0062\", \"tokens\": [4], \"max_tokens\": 5}\n";  // an escape: tree path
  const Both b = Parse(text);
  REQUIRE(b.fast.ok());
  REQUIRE(b.tree.ok());
  for (const auto* rs : {&b.fast.value(), &b.tree.value()}) {
    REQUIRE(rs->size() == 4);
    CHECK((*rs)[0].id == "c17");
    CHECK((*rs)[0].tokens == std::vector<TokenId>{12, 13, 14});
    CHECK((*rs)[0].max_tokens == 40);
    CHECK((*rs)[0].arrival_step == 3);
    CHECK((*rs)[1].id == "x");
    CHECK((*rs)[1].tokens == std::vector<TokenId>{5, 6, 7});
    CHECK((*rs)[1].priority == -3);
    CHECK((*rs)[1].arrival_step == 0);
    CHECK((*rs)[2].id == "7");
    CHECK((*rs)[2].tokens == std::vector<TokenId>{0, 999999});
    CHECK((*rs)[3].id == "ub");
  }
}

TEST_CASE("step requests: both paths give the same error, naming file, line and key") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"id\": \"a\", \"tokens\": [1.0], \"max_tokens\": 1}", "r.jsonl:1: tokens[0]: expected"},
      {"{\"id\": \"a\", \"tokens\": [1000000], \"max_tokens\": 1}", "r.jsonl:1: tokens[0]"},
      {"{\"id\": \"a\", \"tokens\": [], \"max_tokens\": 1}", "r.jsonl:1: tokens: expected"},
      {"{\"id\": \"a\", \"tokens\": [1], \"max_tokens\": 0}", "r.jsonl:1: max_tokens: 0 is out"},
      {"{\"id\": \"a\", \"tokens\": [1], \"max_tokens\": 1e1}", "r.jsonl:1: max_tokens: expected"},
      {"{\"id\": \"a\", \"tokens\": [1]}", "r.jsonl:1: max_tokens: missing"},
      {"{\"id\": \"a\", \"tokens\": [1], \"max_tokens\": 1, \"x\": 2}", "r.jsonl:1: x: unknown key"},
      {"{\"id\": \"a\", \"tokens\": [1], \"max_tokens\": 1} 5", "r.jsonl:1: not valid JSON"},
      {"{\"id\": \"a\", \"tokens\": [1], \"max_tokens\": 1}\n{\"id\": \"a\", \"tokens\": [2], "
       "\"max_tokens\": 1}",
       "r.jsonl:2: id: 'a' appears twice"},
      {"[1, 2]", "r.jsonl:1: expected a JSON object"},
  };
  for (const auto& [text, want] : cases) {
    INFO(text);
    const Both b = Parse(text);
    REQUIRE_FALSE(b.fast.ok());
    REQUIRE_FALSE(b.tree.ok());
    CHECK(b.fast.status().message() == b.tree.status().message());
    CHECK(b.fast.status().message().rfind(want, 0) == 0);
  }
  // max_model_len 4: a prompt of 4 tokens is too long on both paths.
  const Both b = Parse("{\"id\": \"a\", \"tokens\": [1, 2, 3, 4], \"max_tokens\": 1}", 4);
  REQUIRE_FALSE(b.fast.ok());
  CHECK(b.fast.status().message() == b.tree.status().message());
  CHECK(b.fast.status().message().find("shorter than max_model_len (4)") != std::string::npos);
  // A duplicate key: the tree's rule (the last value wins) on both paths.
  const Both d = Parse("{\"id\": \"a\", \"id\": \"b\", \"tokens\": [1], \"max_tokens\": 1}");
  REQUIRE(d.fast.ok());
  CHECK(d.fast->at(0).id == "b");
  CHECK(d.tree->at(0).id == "b");
}

}  // namespace
}  // namespace kvsim
