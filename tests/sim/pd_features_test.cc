// Every instance feature in a P/D cluster (issue 28 §3): async scheduling, the CPU offloading
// tier and step logs reach the prefill and decode instances through the one instance core
// (sim/instance/instance_core.h). Before it, a P/D scenario with `cache.offload` and
// `scheduler.async_scheduling` ran exactly as one without. Expected values are worked by hand
// from scripted requests (tests/sim/cluster_test_workload.h) or are orderings the features
// imply.
#include <catch2/catch_test_macros.hpp>
#include <memory>
#include <string>
#include <vector>

#include "sim/cluster/cluster_sim.h"
#include "sim/config/config_tree.h"
#include "sim/scenario/scenario_loader.h"
#include "tests/sim/cluster_test_workload.h"
#include "tests/sim/load_scenario.h"

namespace kvsim {
namespace {

// A small dense model; one prefill and one decode instance, 16-token blocks on both sides.
std::string Yaml(const std::string& cache_extra, const std::string& sched_extra) {
  return R"(
name: pd_features
seed: 3
model:
  name: toy
  max_model_len: 8192
  layers:
    - {type: full_attention, count: 4, num_kv_heads: 8, head_size: 128}
  compute: {hidden_size: 4096, num_attention_heads: 32, num_params: 1000000000,
            num_active_params: 1000000000, vocab_size: 32000}
cache:
  block_size: 16
  num_gpu_blocks: 1000
)" + cache_extra + R"(
scheduler:
  max_num_batched_tokens: 512
  max_num_seqs: 16
)" + sched_extra + R"(
workload:
  kind: shared_prefix
  num_requests: 1
  rate_per_s: 1
cluster:
  prefill: {count: 1}
  decode: {count: 1}
  router: {prefill: round_robin, decode: round_robin}
)";
}

Scenario Load(const std::string& text) { return LoadScenarioText(text, "pd_features.yaml"); }

struct Ran {
  std::unique_ptr<ClusterSim> sim;
  std::vector<StepRecord> records;
};

Ran RunCluster(const Scenario& sc, std::vector<ScriptedRequest> requests) {
  Ran out;
  auto sim = ClusterSim::Create(sc, std::make_unique<ScriptedWorkload>(std::move(requests)));
  INFO(sim.status().ToString());
  REQUIRE(sim.ok());
  out.sim = std::move(sim.value());
  const StepRecordSink sink = [&](const StepRecord& r) { out.records.push_back(r); };
  out.sim->SetStepLog(&sink);
  out.sim->Run();
  out.sim->CheckInvariants();
  return out;
}

TEST_CASE("P/D step log: every record names its instance; each request finishes once per role") {
  // Two 100-token prompts with 8 outputs each, far apart.
  Ran r = RunCluster(Load(Yaml("", "")), {{0, 100, 8, 1}, {kTicksPerSecond, 100, 8, 2}});
  REQUIRE_FALSE(r.records.empty());
  int prefill_done[2] = {0, 0}, decode_done[2] = {0, 0};
  int64_t decode_tokens = 0;
  for (const StepRecord& rec : r.records) {
    INFO(StepRecordJson(rec));
    REQUIRE((rec.instance == "prefill 0" || rec.instance == "decode 0"));
    CHECK(StepRecordJson(rec).find("\"instance\": \"" + rec.instance + "\"") != std::string::npos);
    for (int32_t id : rec.finished) {
      REQUIRE((id == 0 || id == 1));
      ++(rec.instance == "prefill 0" ? prefill_done : decode_done)[id];
    }
    if (rec.instance == "decode 0") decode_tokens += rec.num_scheduled_tokens;
  }
  CHECK(prefill_done[0] == 1);
  CHECK(prefill_done[1] == 1);
  CHECK(decode_done[0] == 1);
  CHECK(decode_done[1] == 1);
  // The decoder replays each prompt's last token and samples 8 outputs: 8 one-token steps per
  // request (the replayed token gives the first output, each later step one more).
  CHECK(decode_tokens == 2 * 8);
}

TEST_CASE("P/D async scheduling: decode steps overlap their CPU part, so TPOT drops") {
  const std::vector<ScriptedRequest> reqs{{0, 100, 32, 1}};
  Ran sync = RunCluster(Load(Yaml("", "")), reqs);
  Ran async = RunCluster(Load(Yaml("", "  async_scheduling: true\n")), reqs);
  const ClusterSummary s = sync.sim->Summary(), a = async.sim->Summary();
  REQUIRE(s.finished == 1);
  REQUIRE(a.finished == 1);
  // Back-to-back async steps start their GPU part when the previous one's ends (their CPU
  // part ran meanwhile); sync steps pay it each time.
  CHECK(a.tpot.mean < s.tpot.mean);
  CHECK(a.e2e.mean < s.e2e.mean);
  // Under async the decision after the last token's step schedules nothing (the token is in
  // flight): the decoder logs one empty step that sync does not.
  auto empty_decode_steps = [](const Ran& r) {
    int n = 0;
    for (const StepRecord& rec : r.records)
      n += rec.instance == "decode 0" && rec.scheduled.empty() ? 1 : 0;
    return n;
  };
  CHECK(empty_decode_steps(sync) == 0);
  CHECK(empty_decode_steps(async) == 1);
}

TEST_CASE("P/D CPU tier: the prefill instance stores the prompt's full blocks") {
  // 100 tokens in 16-token blocks: 6 full blocks (0..5), stored by the prefill instance's
  // tier as the prompt is computed. The decode instance's records carry the tier's fields.
  Ran r = RunCluster(Load(Yaml("  offload: {num_cpu_blocks: 64}\n", "")), {{0, 100, 4, 1}});
  std::vector<int64_t> stored;
  bool decode_has_tier = false;
  for (const StepRecord& rec : r.records) {
    CHECK(rec.has_offload);
    if (rec.instance == "decode 0") decode_has_tier = true;
    if (rec.instance != "prefill 0") continue;
    for (const auto& s : rec.cpu_stores) {
      CHECK(s.request == 0);
      stored.insert(stored.end(), s.block_indices.begin(), s.block_indices.end());
    }
  }
  CHECK(stored == std::vector<int64_t>{0, 1, 2, 3, 4, 5});
  CHECK(decode_has_tier);
  // The pool summary counts them: 6 blocks of 4 layers × K and V × 8 heads × 128 × 2 bytes ×
  // 16 tokens = 262,144 bytes each. Nothing was in the tier to hit, so nothing was loaded.
  const ClusterSummary sum = r.sim->Summary();
  CHECK(sum.prefill_pool.has_cpu_tier);
  CHECK(sum.prefill_pool.cpu_bytes_stored == 6 * 262144);
  CHECK(sum.prefill_pool.cpu_bytes_loaded == 0);
  CHECK(sum.prefill_pool.cpu_hit_tokens == 0);
  CHECK(sum.decode_pool.has_cpu_tier);
}

}  // namespace
}  // namespace kvsim
