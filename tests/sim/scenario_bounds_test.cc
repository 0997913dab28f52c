// The scenario loader's bounds on synthetic workloads and contexts (newcomer audit, turn 3:
// H1, H2, S2, S3, U5 and swept base values), each checked on both sides of its edge. The
// edges are worked by hand from the built-in default scenario (50 requests/s, a 2000-token
// system prompt, prompts of at least 8 tokens, Qwen3.5-35B-A3B's 262144-token context) and
// Llama-3.1-8B's 131072.
#include <catch2/catch_test_macros.hpp>

#include <string>
#include <vector>

#include "sim/scenario/scenario_loader.h"

namespace kvsim {
namespace {

Result<Scenario> Load(std::vector<std::string> sets) {
  sets.insert(sets.begin(), "sweep={}");
  return LoadScenario(LoadOptions{"", sets});
}

bool Says(const Result<Scenario>& r, const std::string& what) {
  return !r.ok() && r.status().message().find(what) != std::string::npos;
}

TEST_CASE("bounds: the requests an open-loop duration implies", "[scenario][bounds]") {
  // 50/s × 335544 s = 16777200 requests, under 2^24 = 16777216; 335545 s is 16777250.
  CHECK(Load({"workload.num_requests=0", "workload.duration_s=335544"}).ok());
  auto over = Load({"workload.num_requests=0", "workload.duration_s=335545"});
  CHECK(Says(over, "workload.duration_s: 335545 s at rate_per_s 50"));
  CHECK(Says(over, "above 16777216"));
  // A request cap below the bound makes any duration fine.
  CHECK(Load({"workload.num_requests=1000", "workload.duration_s=1e30"}).ok());
  // The cap itself is bounded.
  CHECK(Load({"workload.num_requests=16777216"}).ok());
  CHECK(Says(Load({"workload.num_requests=16777217"}), "workload.num_requests: 16777217 requests"));
}

TEST_CASE("bounds: sessions and trees count their follow-ups", "[scenario][bounds]") {
  // A tree of depth 3 and branching 2 has 1 + 2 + 4 + 8 = 15 requests: 50/s × 22369 s × 15
  // = 16776750 fits, 22370 s is 16777500.
  const std::vector<std::string> tree = {"workload.kind=agent_tree", "workload.num_requests=0"};
  auto with = [&](const std::string& d) {
    auto s = tree;
    s.push_back("workload.duration_s=" + d);
    return Load(s);
  };
  CHECK(with("22369").ok());
  CHECK(Says(with("22370"), "× up to 15 requests per tree"));
  // Load stages: 2 stages of 1e7 arrivals.
  CHECK(Says(Load({"workload.num_requests=0",
                   "workload.stages=[{rate_per_s: 1e4, duration_s: 1e3}, "
                   "{rate_per_s: 1e4, duration_s: 1e3}]"}),
             "workload.stages: the stages' rate_per_s × duration_s sum to 2e+07 arrivals"));
  CHECK(Says(Load({"workload.num_requests=0", "workload.duration_s=5", "workload.arrival=burst"}),
             "burst arrivals"));
}

TEST_CASE("bounds: synthetic lengths stop at 2^24 tokens, the mean inside [min, max]",
          "[scenario][bounds]") {
  CHECK(Load({"workload.prompt_tokens.max=16777216"}).ok());
  CHECK(Says(Load({"workload.prompt_tokens.max=16777217"}), "workload.prompt_tokens.max:"));
  CHECK(Says(Load({"workload.system_prompt.tokens=16777217"}), "workload.system_prompt.tokens:"));
  // The default output_tokens is lognormal mean 150 in [16, 1024].
  CHECK(Load({"workload.output_tokens.max=150"}).ok());
  auto clamped = Load({"workload.output_tokens.max=149"});
  CHECK(Says(clamped, "workload.output_tokens.mean: mean 150 is above max 149"));
  CHECK(Says(Load({"workload.output_tokens.min=151"}), "mean 150 is below min 151"));
  // uniform ignores the mean: [min, max] is the whole spec.
  CHECK(Load({"workload.output_tokens={dist: uniform, min: 1, max: 8}"}).ok());
  // The system prompts are kept as token ids: count × tokens up to 2^25.
  CHECK(Load({"workload.system_prompt={tokens: 32768, count: 1024}"}).ok());
  CHECK(Says(Load({"workload.system_prompt={tokens: 32768, count: 1025}"}),
             "count 1025 * tokens 32768 is above 33554432"));
}

TEST_CASE("bounds: every prompt reaching the context is an error", "[scenario][bounds]") {
  // 262136 + 8 = 262144 reaches the context; 262135 + 8 does not.
  CHECK(Load({"workload.system_prompt.tokens=262135"}).ok());
  CHECK(Says(Load({"workload.system_prompt.tokens=262136"}),
             "workload.prompt_tokens.min: every prompt has at least 262144 tokens"));
  CHECK(Says(Load({"workload.system_prompt.tokens=262144"}),
             "workload.system_prompt.tokens: 262144 tokens reach the max_model_len 262144"));
  // cache.max_model_len is the one that counts when given.
  CHECK(Says(Load({"cache.max_model_len=2008"}), "(cache.max_model_len)"));
  CHECK(Load({"cache.max_model_len=2009"}).ok());
}

TEST_CASE("bounds: max_model_len above the preset's native context", "[scenario][bounds]") {
  const std::string llama = "model.preset=llama-3.1-8b";
  CHECK(Load({llama, "model.max_model_len=131072"}).ok());
  CHECK(Says(Load({llama, "model.max_model_len=131073"}),
             "model.max_model_len: 131073 is above Llama-3.1-8B's native context of 131072"));
  CHECK(Says(Load({llama, "cache.max_model_len=131073"}), "cache.max_model_len: 131073 is above"));
  CHECK(Load({llama, "model.max_model_len=131073", "model.allow_long_max_model_len=true"}).ok());
  CHECK(Load({llama, "cache.max_model_len=200000", "model.allow_long_max_model_len=true"}).ok());
  // Shorter is always fine.
  CHECK(Load({llama, "model.max_model_len=4096"}).ok());
}

TEST_CASE("bounds: synthetic keys under kind trace are one error naming them", "[scenario][bounds]") {
  auto r = Load({"workload.kind=trace", "workload.trace.path=mooncake_conversation_head60.jsonl"});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == "unused_key");
  CHECK(Says(r, "workload.arrival, workload.rate_per_s, workload.prompt_tokens, "
                "workload.output_tokens belong to the synthetic workloads"));
  CHECK(r.status().message().find("unknown key") == std::string::npos);
  // A section of another kind.
  CHECK(Says(Load({"workload.multi_turn.think_time_s=1"}),
             "workload.multi_turn belongs to kind multi_turn and is not used by kind "
             "shared_prefix"));
}

TEST_CASE("bounds: a swept key's base value is checked", "[scenario][bounds]") {
  // The default sweeps cache.attn_pack_size; its base value is never a point's.
  auto bad = LoadScenarioTree(LoadOptions{"", {"cache.attn_pack_size=-.inf"}});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("cache.attn_pack_size") != std::string::npos);
  CHECK(bad.status().message().find("every sweep point overrides") != std::string::npos);
  CHECK(LoadScenarioTree(LoadOptions{"", {"cache.attn_pack_size=2"}}).ok());
  // A key that only the points give (a base with no trace path) is not an error.
  CHECK(LoadScenarioTree(
            LoadOptions{"",
                        {"workload={kind: trace}",
                         "sweep={workload.trace.path: [mooncake_conversation_head60.jsonl]}"}})
            .ok());
}

}  // namespace
}  // namespace kvsim
