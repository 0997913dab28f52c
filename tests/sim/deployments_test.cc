// The single engine and the P/D cluster are two deployments on one serving loop
// (sim/pool/serving_loop.h): arrivals, follow-ups, the admission check and each instance's KV
// usage are the loop's, the step is the InstanceCore's, the request summary the
// RequestSummarizer's. They once had copies of all of it that drifted apart (issue 10 §1);
// nothing is left to drift, and these cases remain as what both deployments must show, with
// expected values worked by hand from scripted requests (tests/sim/cluster_test_workload.h)
// or from invariants, not copied from a run.
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <memory>
#include <string>
#include <vector>

#include "sim/cluster/cluster_sim.h"
#include "sim/config/config_tree.h"
#include "sim/engine.h"
#include "sim/scenario/scenario_loader.h"
#include "tests/sim/cluster_test_workload.h"
#include "tests/sim/load_scenario.h"

namespace kvsim {
namespace {

// A small dense model: one prefill and one decode instance, 16-token blocks on both sides
// (no re-layout), a star network.
std::string Yaml(const std::string& extra = "") {
  return R"(
name: pd_drift
seed: 5
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
scheduler:
  max_num_batched_tokens: 512
  max_num_seqs: 16
workload:
  kind: shared_prefix
  num_requests: 1
  rate_per_s: 1
cluster:
  prefill: {count: 1}
  decode: {count: 1}
  router: {prefill: round_robin, decode: round_robin}
)" + extra;
}

Scenario Load(const std::string& text, const std::vector<std::string>& sets = {}) {
  return LoadScenarioText(text, "pd_drift.yaml", sets);
}

std::unique_ptr<ClusterSim> RunCluster(const Scenario& sc, ScriptedWorkload** workload,
                                       std::vector<ScriptedRequest> requests) {
  auto owned = std::make_unique<ScriptedWorkload>(std::move(requests));
  *workload = owned.get();
  auto sim = ClusterSim::Create(sc, std::move(owned));
  INFO(sim.status().ToString());
  REQUIRE(sim.ok());
  sim.value()->Run();
  sim.value()->CheckInvariants();
  return std::move(sim.value());
}

TEST_CASE("deployments: open-loop arrivals enter one at a time; follow-ups never pull") {
  // Request 0 at t = 0 has two closed-loop follow-ups, each arriving when its predecessor
  // finishes (within milliseconds); request 1 is sent at t = 10 s. Handling a follow-up's
  // arrival must not pull request 1's successor early (an arrival is known as open-loop by
  // its id, not by a payload bit), and every request arrives and finishes once.
  ScriptedWorkload* wl = nullptr;
  auto sim = RunCluster(Load(Yaml()), &wl,
                        {{0, 100, 4, 1, /*follow_ups=*/2},
                         {10 * kTicksPerSecond, 100, 4, 2},
                         {10 * kTicksPerSecond, 100, 4, 3}});
  CHECK_FALSE(wl->pulled_early);
  CHECK(wl->next_calls == 4);  // three requests and the end of the stream
  const ClusterSummary s = sim->Summary();
  CHECK(s.arrived == 5);
  CHECK(s.finished == 5);
  CHECK(wl->finished.size() == 5);
  // Ids are handed out as requests are created: the follow-ups (2 and 3) exist before the
  // third open-loop request, which is pulled only once request 1 has entered at 10 s.
  CHECK(wl->open_loop_ids ==
        std::vector<RequestId>{RequestId{0}, RequestId{1}, RequestId{4}});
  const auto& recs = sim->records();
  CHECK(recs[2].arrival > recs[0].kv_ready);
  CHECK(recs[3].arrival > recs[2].kv_ready);
  CHECK(recs[3].arrival < 10 * kTicksPerSecond);
  CHECK(recs[1].arrival == 10 * kTicksPerSecond);
}

// One 100-token prompt, 6 outputs, 2 drafts per decode step. The step that produces the
// first token carries no drafts (the Engine's prefill step; the decoder's replay of the last
// prompt token), so it verifies nothing; every later step carries min(2, 6 - outputs - 1).
//   acceptance 1: 1 token, then 1 + 2 (outputs 4), then 1 + 1 (outputs 6): 3 steps,
//                 3 drafts, all accepted;
//   acceptance 0: one token per step, drafts 2, 2, 2, 1, 0: 6 steps, 7 drafts, none accepted.
// The decoder records what the Engine records: spec acceptance and one ITL value per
// emitting step after a request's first (2 at acceptance 1, 5 at acceptance 0).
TEST_CASE("deployments: drafts are verified only where a step carries them, as the Engine") {
  struct Case {
    const char* rate;
    int64_t steps;
    int64_t drafts, accepted;
  };
  for (const Case& k : {Case{"1.0", 3, 3, 3}, Case{"0.0", 6, 7, 0}}) {
    INFO("acceptance " << k.rate);
    const std::vector<std::string> sets = {"cache.num_speculative_tokens=2",
                                           std::string("spec.acceptance_rate=") + k.rate};
    ScriptedWorkload* wl = nullptr;
    auto sim = RunCluster(Load(Yaml(), sets), &wl, {{0, 100, 6, 1}});
    const ClusterSummary s = sim->Summary();
    CHECK(s.finished == 1);
    CHECK(sim->records()[0].output_tokens == 6);
    CHECK(s.prefill_pool.steps == 1);
    CHECK(s.decode_pool.steps == k.steps);
    CHECK(s.decode_pool.spec_drafts == k.drafts);
    CHECK(s.decode_pool.spec_accepted == k.accepted);
    CHECK(s.decode_pool.spec_acceptance == (k.accepted == k.drafts ? 1.0 : 0.0));
    CHECK(s.prefill_pool.spec_drafts == 0);
    // One ITL value per emitting step after the first: the gaps add up to first → last token.
    const PdRecord& r = sim->records()[0];
    CHECK(s.itl.count == k.steps - 1);
    CHECK(s.itl.mean * static_cast<double>(s.itl.count) ==
          Catch::Approx(TicksToMs(r.finish - r.first_token)).epsilon(1e-12));

    // The same request on one colocated engine takes as many steps.
    std::vector<std::string> engine_sets = sets;
    for (const char* e : {"cluster=null", "workload.system_prompt.tokens=0",
                          "workload.prompt_tokens={dist: fixed, mean: 100}",
                          "workload.output_tokens={dist: fixed, mean: 6}"}) {
      engine_sets.push_back(e);
    }
    auto engine = Engine::Create(Load(Yaml(), engine_sets));
    INFO(engine.status().ToString());
    REQUIRE(engine.ok());
    engine.value()->Run();
    const RunSummary es = engine.value()->Summary();
    CHECK(es.requests_finished == 1);
    CHECK(es.output_tokens == 6);
    CHECK(es.steps == k.steps);
    CHECK(es.spec_acceptance == s.decode_pool.spec_acceptance);
    CHECK(es.itl_ms.count == s.itl.count);
  }
}

// Chunked prefill off and a 512-token budget: a prompt over 512 tokens can never be
// scheduled, yet fits max_model_len and the cache, so it is not refused at arrival. The one
// stuck-head rule (EngineInstance::RejectStuckHead) rejects exactly those requests, on a
// colocated engine and on the cluster's prefill instance alike (there only once the
// finished prompts it holds have been read, which changes when, not whom).
TEST_CASE("deployments: the engine and the cluster reject the same stuck heads") {
  const std::vector<std::string> sets = {
      "scheduler.enable_chunked_prefill=false",
      "workload.num_requests=40",
      "workload.rate_per_s=20",
      "workload.system_prompt.tokens=0",
      "workload.prompt_tokens={dist: uniform, min: 100, max: 900}",
      "workload.output_tokens={dist: fixed, mean: 4}"};
  auto cluster = ClusterSim::Create(Load(Yaml(), sets));
  REQUIRE(cluster.ok());
  cluster.value()->Run();
  cluster.value()->CheckInvariants();
  std::vector<std::string> engine_sets = sets;
  engine_sets.push_back("cluster=null");
  auto engine = Engine::Create(Load(Yaml(), engine_sets));
  REQUIRE(engine.ok());
  engine.value()->Run();

  std::vector<RequestId> too_long, cluster_rejected, engine_rejected;
  for (const PdRecord& r : cluster.value()->records()) {
    if (!r.arrived) continue;
    if (r.prompt_tokens > 512) too_long.push_back(r.id);
    if (r.rejected) cluster_rejected.push_back(r.id);
    if (!r.rejected) CHECK(r.finish >= 0);
  }
  for (const RequestRecord& r : engine.value()->metrics().records()) {
    if (r.rejected) engine_rejected.push_back(r.id);
    if (!r.rejected) CHECK(r.finish >= 0);
  }
  CHECK(!too_long.empty());
  CHECK(too_long.size() < 40);
  CHECK(cluster_rejected == too_long);
  CHECK(engine_rejected == too_long);
}

// KV usage is sampled once per step end (after the step's tokens, before finished requests
// free their blocks), held until the next step end, and averaged over the makespan — the
// Engine's Metrics::StepEnd. One 100-token request with 6 outputs holds 7 blocks of 16 at
// every sample (100 to 105 tokens) on a pool of 999 usable blocks, so by hand:
//   max  = 7 / 999;
//   mean = 7 / 999 × (last step end − first step end) / makespan, where the first and last
//          token are each seen one output-processing delay after their step's end, so the
//          two step ends are exactly first_token and finish apart;
//   the prefill instance runs one step: one sample and no interval after it, mean 0.
TEST_CASE("deployments: KV usage is measured at step ends, as the Engine measures it") {
  const double u = 7.0 / 999.0;
  ScriptedWorkload* wl = nullptr;
  auto sim = RunCluster(Load(Yaml()), &wl, {{0, 100, 6, 1}});
  const ClusterSummary s = sim->Summary();
  const PdRecord& r = sim->records()[0];
  REQUIRE(s.finished == 1);
  const double span_ns = s.makespan_s * 1e9;
  CHECK(s.decode_pool.kv_usage_max[0] == Catch::Approx(u).epsilon(1e-12));
  CHECK(s.decode_pool.kv_usage_mean[0] ==
        Catch::Approx(u * static_cast<double>(r.finish - r.first_token) / span_ns).epsilon(1e-9));
  CHECK(s.prefill_pool.kv_usage_max[0] == Catch::Approx(u).epsilon(1e-12));
  CHECK(s.prefill_pool.kv_usage_mean[0] == 0.0);
  // No drafts: one token per step, so the mean ITL of its 5 gaps is its TPOT.
  CHECK(s.itl.count == 5);
  CHECK(s.itl.mean == Catch::Approx(s.tpot.mean).epsilon(1e-12));

  // The same request on one colocated engine: six steps (prefill + first token, then five
  // decodes), 7 blocks at each end, the same formula.
  auto engine = Engine::Create(Load(Yaml(), {"cluster=null", "workload.system_prompt.tokens=0",
                                             "workload.prompt_tokens={dist: fixed, mean: 100}",
                                             "workload.output_tokens={dist: fixed, mean: 6}"}));
  REQUIRE(engine.ok());
  engine.value()->Run();
  const RunSummary es = engine.value()->Summary();
  const RequestRecord& er = engine.value()->metrics().records()[0];
  REQUIRE(es.requests_finished == 1);
  CHECK(es.kv_usage_max == Catch::Approx(u).epsilon(1e-12));
  CHECK(es.kv_usage_mean ==
        Catch::Approx(u * static_cast<double>(er.finish - er.first_token) / (es.makespan_s * 1e9))
            .epsilon(1e-9));
}

// The makespan is the Engine's (Metrics::Summarize): from the first request's send time
// (TTFT's origin, before intake) to the last finish, or to the end of the run while a
// request is unfinished. One request sent at 0.25 s with 6 outputs: finish − 0.25 s; one
// with 5000 outputs in a run stopped at 0.5 s: exactly 0.25 s.
TEST_CASE("deployments: the makespan runs from the first send, as the Engine's") {
  const Tick sent = kTicksPerSecond / 4;
  ScriptedWorkload* wl = nullptr;
  auto done = RunCluster(Load(Yaml()), &wl, {{sent, 100, 6, 1}});
  const ClusterSummary s = done->Summary();
  REQUIRE(s.finished == 1);
  CHECK(done->records()[0].arrival == sent);
  CHECK(s.makespan_s * 1e9 ==
        Catch::Approx(static_cast<double>(done->records()[0].finish - sent)).epsilon(1e-12));

  auto cut = RunCluster(Load(Yaml(), {"run.max_sim_seconds=0.5"}), &wl, {{sent, 100, 5000, 1}});
  const ClusterSummary c = cut->Summary();
  REQUIRE(c.unfinished == 1);
  CHECK(c.makespan_s == Catch::Approx(0.25).epsilon(1e-12));

  // The Engine, same cut: a 5000-token answer cannot finish in 0.5 s either.
  auto engine = Engine::Create(
      Load(Yaml(), {"cluster=null", "run.max_sim_seconds=0.5", "workload.system_prompt.tokens=0",
                    "workload.prompt_tokens={dist: fixed, mean: 100}",
                    "workload.output_tokens={dist: fixed, mean: 5000}"}));
  REQUIRE(engine.ok());
  engine.value()->Run();
  const RunSummary es = engine.value()->Summary();
  REQUIRE(es.requests_unfinished == 1);
  const Tick engine_sent = engine.value()->metrics().records()[0].arrival;
  CHECK(es.makespan_s * 1e9 ==
        Catch::Approx(static_cast<double>(kTicksPerSecond / 2 - engine_sent)).epsilon(1e-12));
}

}  // namespace
}  // namespace kvsim
