// Data parallelism as real ranks (issue 27 §3, issue 28 §2): parallel.dp engines behind vLLM's
// DP load balancer (sim/instance/dp_balancer.h), independent for a dense model and in
// lock-step for an MoE model. Expected values are worked by hand from the balancer's rule
// (score 4 · waiting + running, ties to the lowest rank, +1 waiting per assignment) or are
// invariants of lock-step (every rank's step ends together).
#include <catch2/catch_test_macros.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

#include "sim/config/config_tree.h"
#include "sim/engine.h"
#include "sim/instance/dp_balancer.h"
#include "sim/scenario/scenario_loader.h"
#include "tests/sim/load_scenario.h"

namespace kvsim {
namespace {

namespace fs = std::filesystem;

TEST_CASE("DP balancer: a dense model's front end deals round-robin from its own counts") {
  DpLoadBalancer lb(3, /*publish_interval=*/0);
  auto never = [](int) -> std::pair<int64_t, int64_t> {
    FAIL("a dense model's ranks publish no counts");
    return {0, 0};
  };
  std::vector<int> picks;
  for (int i = 0; i < 7; ++i) picks.push_back(lb.Pick(i * kTicksPerSecond, never));
  CHECK(picks == std::vector<int>{0, 1, 2, 0, 1, 2, 0});
}

TEST_CASE("DP balancer: an MoE model's counts are published every 100 ms, plus own assignments") {
  DpLoadBalancer lb(2, 100 * kTicksPerMs);
  std::map<int, std::pair<int64_t, int64_t>> state{{0, {0, 3}}, {1, {2, 0}}};
  int published = 0;
  auto counts = [&](int r) {
    ++published;
    return state[r];
  };
  // t = 0: published (0 w, 3 r) → 3 and (2, 0) → 8: rank 0; its waiting becomes 1 → 7: rank 0
  // again; then 11 > 8: rank 1.
  CHECK(lb.Pick(0, counts) == 0);
  CHECK(published == 2);
  CHECK(lb.Pick(0, counts) == 0);
  CHECK(lb.Pick(10 * kTicksPerMs, counts) == 1);
  // t = 50 ms: no publication (rank 0 at 11, rank 1 at 12): rank 0.
  state = {{0, {0, 0}}, {1, {0, 0}}};
  CHECK(lb.Pick(50 * kTicksPerMs, counts) == 0);
  CHECK(published == 2);
  // t = 100 ms: the ranks' counts replace the front end's: both 0, the tie goes to rank 0.
  CHECK(lb.Pick(100 * kTicksPerMs, counts) == 0);
  CHECK(published == 4);
  CHECK(lb.Pick(100 * kTicksPerMs, counts) == 1);  // rank 0 now has 1 waiting
}

Scenario Load(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  return LoadScenarioText(yaml, "dp.yaml", sets);
}

struct Ran {
  std::unique_ptr<Engine> engine;
  std::vector<StepRecord> records;
};

Ran Run(const Scenario& sc) {
  Ran out;
  auto e = Engine::Create(sc);
  INFO(e.status().message());
  REQUIRE(e.ok());
  out.engine = std::move(e.value());
  const StepRecordSink sink = [&](const StepRecord& r) { out.records.push_back(r); };
  out.engine->SetStepLog(&sink);
  out.engine->Run();
  return out;
}

TEST_CASE("engine: parallel.dp = 2 of a dense model: two engines, requests dealt round-robin") {
  // 16 requests at once, 4 running sequences a rank: each rank admits 4 in its first step,
  // so 8 start together (one engine: 4); each rank has the whole pool of 4000 blocks.
  const char* yaml = R"(
name: dp
seed: 3
model: {preset: llama-3.1-8b}
cache: {block_size: 16, num_gpu_blocks: 4000}
scheduler: {max_num_batched_tokens: 4096, max_num_seqs: 4}
workload:
  kind: shared_prefix
  num_requests: 16
  arrival: burst
  prompt_tokens: {dist: fixed, mean: 100, min: 1, max: 100}
  output_tokens: {dist: fixed, mean: 20, min: 1, max: 20}
)";
  auto first_step = [](const Engine& e) {
    Tick first = -1;
    for (const RequestRecord& r : e.metrics().records())
      if (r.first_scheduled >= 0 && (first < 0 || r.first_scheduled < first)) first = r.first_scheduled;
    int n = 0;
    for (const RequestRecord& r : e.metrics().records()) n += r.first_scheduled == first ? 1 : 0;
    return n;
  };
  Ran one = Run(Load(yaml));
  Ran two = Run(Load(yaml, {"parallel.dp=2"}));
  CHECK(one.engine->num_ranks() == 1);
  CHECK(two.engine->num_ranks() == 2);
  CHECK(two.engine->plan().num_blocks == 4000);
  CHECK(first_step(*one.engine) == 4);
  CHECK(first_step(*two.engine) == 8);
  CHECK(two.engine->Summary().requests_finished == 16);
  // Round-robin: request i runs on rank i mod 2, and only there.
  int checked = 0;
  for (const StepRecord& rec : two.records) {
    REQUIRE((rec.instance == "dp 0" || rec.instance == "dp 1"));
    const int rank = rec.instance == "dp 0" ? 0 : 1;
    for (const StepRecord::Chunk& c : rec.scheduled) {
      CHECK(c.request % 2 == rank);
      ++checked;
    }
  }
  CHECK(checked > 0);
  for (const StepRecord& rec : one.records) CHECK(rec.instance.empty());

  // Per-rank statistics: round-robin gives each rank 8 of the 16; each rank's steps are the
  // step-log records that name it; the ranks' lookups add up to the run's.
  const RunSummary s = two.engine->Summary();
  REQUIRE(s.ranks.size() == 2);
  CHECK(one.engine->Summary().ranks.empty());
  int64_t lookups = 0, query = 0;
  for (int r = 0; r < 2; ++r) {
    const InstanceSummary& rs = s.ranks[static_cast<size_t>(r)];
    CHECK(rs.name == "dp " + std::to_string(r));
    CHECK(rs.requests == 8);
    int64_t steps = 0;
    for (const StepRecord& rec : two.records) steps += rec.instance == rs.name ? 1 : 0;
    CHECK(rs.steps == steps);
    CHECK(rs.kv_usage_max > 0);
    CHECK(rs.kv_usage_mean <= rs.kv_usage_max);
    lookups += rs.lookups;
    query += rs.query_tokens;
  }
  CHECK(lookups == s.lookups);
  CHECK(query == s.lookup_query_tokens);
}

// Two requests sent together, one with a 512-token prompt and one with 2048: the balancer
// gives the first to rank 0 and the second to rank 1 (MoE: both published counts are 0, then
// rank 0 has 1 waiting; dense: round-robin).
std::string TwoRequestYaml(const std::string& trace, const std::string& model) {
  return R"(
name: dp_lock
seed: 1
model: {preset: )" + model + R"(, max_model_len: 32768}
cache: {block_size: 16, num_gpu_blocks: 4000}
scheduler: {max_num_batched_tokens: 8192, max_num_seqs: 8}
parallel: {dp: 2}
workload:
  kind: trace
  num_requests: 0
  trace: {path: )" + trace + R"(, format: mooncake, required: true}
)";
}

TEST_CASE("engine: an MoE model's DP ranks step in lock-step; a dense model's do not") {
  const fs::path dir = fs::temp_directory_path() / ("kvsim_dp_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string trace = (dir / "two.jsonl").string();
  std::ofstream(trace) << R"({"hash_ids": [1], "input_length": 512, "timestamp": 0, "output_length": 8})"
                       << "\n"
                       << R"({"hash_ids": [2, 3, 4, 5], "input_length": 2048, "timestamp": 0, "output_length": 8})"
                       << "\n";
  auto steps_by_rank = [](const Ran& r) {
    std::map<std::string, std::vector<std::pair<Tick, Tick>>> m;
    for (const StepRecord& rec : r.records) m[rec.instance].push_back({rec.t_start_ns, rec.t_end_ns});
    return m;
  };
  Ran moe = Run(Load(TwoRequestYaml(trace, "mixtral-8x7b")));
  Ran dense = Run(Load(TwoRequestYaml(trace, "llama-3.1-8b")));
  fs::remove_all(dir);
  REQUIRE(moe.engine->Summary().requests_finished == 2);
  REQUIRE(dense.engine->Summary().requests_finished == 2);
  auto m = steps_by_rank(moe), d = steps_by_rank(dense);
  REQUIRE(m["dp 0"].size() == 8);  // the prompt and 7 more decode steps each
  REQUIRE(m["dp 1"].size() == 8);
  // Lock-step: the ranks' steps start and end together (rank 0's 512-token prefill waits for
  // rank 1's 2048-token one).
  // Rank 0's request arrives first (a shorter prompt's intake) and its prefill runs alone,
  // rank 1 running a dummy batch. From then on the ranks step together: any two steps of
  // different ranks that overlap in time are the same step (same start, same end), and rank
  // 0's first decode step lasts as long as rank 1's 2048-token prefill.
  int together = 0;
  for (const auto& a : m["dp 0"])
    for (const auto& b : m["dp 1"]) {
      if (a.first < b.second && b.first < a.second) {
        CHECK(a == b);
        ++together;
      }
    }
  CHECK(together == 7);
  CHECK(m["dp 0"][1] == m["dp 1"][0]);
  // Independent ranks: rank 0 decodes on while rank 1 runs its prefill.
  REQUIRE(d["dp 0"].size() == 8);
  REQUIRE(d["dp 1"].size() == 8);
  CHECK(d["dp 0"][1] != d["dp 1"][0]);
  CHECK(d["dp 0"][1].second - d["dp 0"][1].first < d["dp 1"][0].second - d["dp 1"][0].first);
}

TEST_CASE("engine: an idle MoE rank runs a dummy batch, so a lone request is no faster on two") {
  const fs::path dir = fs::temp_directory_path() / ("kvsim_dp1_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string trace = (dir / "one.jsonl").string();
  std::ofstream(trace)
      << R"({"hash_ids": [1], "input_length": 512, "timestamp": 0, "output_length": 16})" << "\n";
  Ran two = Run(Load(TwoRequestYaml(trace, "mixtral-8x7b")));
  Ran one = Run(Load(TwoRequestYaml(trace, "mixtral-8x7b"), {"parallel.dp=1"}));
  fs::remove_all(dir);
  const RunSummary s2 = two.engine->Summary(), s1 = one.engine->Summary();
  REQUIRE(s1.requests_finished == 1);
  REQUIRE(s2.requests_finished == 1);
  // Rank 1 logs no step (a dummy batch is not a scheduler step) yet every step of rank 0
  // lasts at least as long as alone: max(its batch, the dummy batch).
  for (const StepRecord& rec : two.records) CHECK(rec.instance == "dp 0");
  CHECK(two.records.size() == one.records.size());
  for (size_t i = 0; i < std::min(two.records.size(), one.records.size()); ++i) {
    CHECK(two.records[i].t_end_ns - two.records[i].t_start_ns >=
          one.records[i].t_end_ns - one.records[i].t_start_ns);
  }
}

}  // namespace
}  // namespace kvsim
