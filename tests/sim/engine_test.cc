// End-to-end engine properties on small scenarios: determinism (byte-identical outputs for
// the same seed), conservation of requests and tokens, prefix hits that match hand counts,
// preemption under memory pressure, spec-decode accounting and the Mamba align chunking.
#include "sim/engine.h"

#include <catch2/catch_test_macros.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "sim/metrics_output.h"
#include "sim/scenario/scenario_loader.h"
#include "tests/sim/load_scenario.h"

namespace kvsim {
namespace {

Scenario Load(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  return LoadScenarioText(yaml, "test.yaml", sets);
}

std::unique_ptr<Engine> RunScenario(const Scenario& sc) {
  auto e = Engine::Create(sc);
  INFO(e.status().message());
  REQUIRE(e.ok());
  e.value()->Run();
  return std::move(e.value());
}

const char* kDense = R"(
name: dense
seed: 7
model: {preset: llama-3.1-8b}
cache: {block_size: 16, num_gpu_blocks: 4000}
scheduler: {max_num_batched_tokens: 2048, max_num_seqs: 64}
workload:
  kind: shared_prefix
  num_requests: 200
  rate_per_s: 20
  system_prompt: {tokens: 1000, count: 1}
  prompt_tokens: {dist: uniform, min: 20, max: 200}
  output_tokens: {dist: uniform, min: 10, max: 100}
)";

std::string Fingerprint(const Engine& e) {
  std::string s = RunToJson(e, {}).dump();
  for (const auto& r : e.metrics().records()) {
    s += std::to_string(r.id.value()) + ":" + std::to_string(r.first_token) + ":" +
         std::to_string(r.finish) + ":" + std::to_string(r.cached_tokens) + ";";
  }
  return s;
}

TEST_CASE("engine: same scenario and seed give byte-identical outputs") {
  const Scenario sc = Load(kDense);
  auto a = RunScenario(sc);
  auto b = RunScenario(sc);
  CHECK(Fingerprint(*a) == Fingerprint(*b));
  const Scenario other = Load(kDense, {"seed=8"});
  auto c = RunScenario(other);
  CHECK(Fingerprint(*a) != Fingerprint(*c));
}

TEST_CASE("engine: every request finishes with its output length, tokens are conserved") {
  const Scenario sc = Load(kDense);
  auto e = RunScenario(sc);
  const RunSummary s = e->Summary();
  CHECK(s.requests_arrived == 200);
  CHECK(s.requests_finished == 200);
  CHECK(s.requests_rejected == 0);
  CHECK(s.requests_unfinished == 0);
  int64_t prompt = 0, output = 0;
  for (const auto& r : e->metrics().records()) {
    CHECK(r.finish >= r.first_token);
    CHECK(r.first_token >= r.first_scheduled);
    CHECK(r.first_scheduled >= r.arrival);
    CHECK(r.output_tokens >= 10);
    CHECK(r.output_tokens <= 100);
    prompt += r.prompt_tokens;
    output += r.output_tokens;
  }
  CHECK(s.prompt_tokens == prompt);
  CHECK(s.output_tokens == output);
  // Without preemption every prompt token not hit is computed once, and every output token
  // but the last of each request is fed back once.
  REQUIRE(s.preemptions == 0);
  CHECK(s.computed_tokens == prompt - s.hit_tokens + output - s.requests_finished);
}

TEST_CASE("engine: the shared 1000-token prompt hits 992 tokens (62 blocks of 16)") {
  const Scenario sc = Load(kDense);
  auto e = RunScenario(sc);
  const auto& recs = e->metrics().records();
  // The first request finds nothing; later ones find at least the 62 full system-prompt
  // blocks (992 tokens) and at most that plus nothing else (user text is random).
  CHECK(recs[0].cached_tokens == 0);
  int64_t exact = 0;
  for (size_t i = 1; i < recs.size(); ++i) {
    CHECK(recs[i].cached_tokens >= 0);
    if (recs[i].cached_tokens == 992) ++exact;
  }
  // Requests admitted before the first finished its prefill may miss; most hit exactly.
  CHECK(exact >= 190);
}

TEST_CASE("engine: a tight cache preempts and still finishes everything") {
  const Scenario sc = Load(kDense, {"cache.num_gpu_blocks=300", "workload.rate_per_s=200",
                                    "workload.system_prompt.tokens=0",
                                    "workload.prompt_tokens={dist: fixed, mean: 600}",
                                    "workload.output_tokens={dist: fixed, mean: 400}"});
  auto e = RunScenario(sc);
  const RunSummary s = e->Summary();
  CHECK(s.preemptions > 0);
  CHECK(s.requests_finished == 200);
  for (const auto& r : e->metrics().records()) CHECK(r.output_tokens == 400);
}

TEST_CASE("engine: prompts that can never fit are rejected, not hung on") {
  const Scenario sc = Load(kDense, {"cache.num_gpu_blocks=20", "workload.num_requests=5",
                                    "workload.system_prompt.tokens=0",
                                    "workload.prompt_tokens={dist: fixed, mean: 1000}"});
  auto e = RunScenario(sc);
  const RunSummary s = e->Summary();
  CHECK(s.requests_rejected == 5);
  CHECK(s.requests_finished == 0);
}

TEST_CASE("engine: spec decode accepts about acceptance_rate of drafts and needs fewer steps") {
  const std::vector<std::string> base = {"workload.system_prompt.tokens=0",
                                         "workload.output_tokens={dist: fixed, mean: 200}",
                                         "workload.num_requests=50"};
  auto plain = RunScenario(Load(kDense, base));
  auto with = base;
  with.push_back("cache.num_speculative_tokens=3");
  with.push_back("spec.acceptance_rate=0.6");
  with.push_back("spec.method=draft");
  auto spec = RunScenario(Load(kDense, with));
  const RunSummary a = plain->Summary(), b = spec->Summary();
  CHECK(b.requests_finished == 50);
  CHECK(b.output_tokens == a.output_tokens);
  CHECK(b.spec_acceptance > 0.3);  // i.i.d. 0.6 per draft, stopping at the first rejection
  CHECK(b.spec_acceptance < 0.7);
  CHECK(b.steps < a.steps);
  for (const auto& r : spec->metrics().records()) CHECK(r.output_tokens == 200);
}

TEST_CASE("engine: hybrid model in Mamba align mode hits whole attention blocks") {
  const char* hybrid = R"(
name: hybrid
seed: 3
model: {preset: qwen3.5-35b-a3b}
parallel: {tp: 2}
cache: {kv_memory_bytes: 8GiB, attn_pack_size: 4}
workload:
  kind: shared_prefix
  num_requests: 60
  rate_per_s: 5
  system_prompt: {tokens: 2000, count: 1}
  prompt_tokens: {dist: fixed, mean: 60}
  output_tokens: {dist: fixed, mean: 20}
)";
  auto e = RunScenario(Load(hybrid));
  REQUIRE(e->plan().attn_block_size == 272);
  const auto& recs = e->metrics().records();
  // 2060-token prompts: the last cacheable boundary is 7 × 272 = 1904, which the first
  // request's chunk is forced to end on; later requests hit exactly those 1904 tokens.
  int64_t hits = 0;
  for (size_t i = 1; i < recs.size(); ++i) {
    CHECK(recs[i].cached_tokens % 272 == 0);
    if (recs[i].cached_tokens == 1904) ++hits;
  }
  CHECK(hits >= 55);
  CHECK(e->Summary().requests_finished == 60);
}

TEST_CASE("engine: multi-turn sessions reuse their own history") {
  const char* mt = R"(
name: mt
seed: 11
model: {preset: llama-3.1-8b}
cache: {block_size: 16, num_gpu_blocks: 20000}
workload:
  kind: multi_turn
  num_requests: 120
  rate_per_s: 2
  prompt_tokens: {dist: fixed, mean: 100}
  output_tokens: {dist: fixed, mean: 50}
  multi_turn: {turns: {dist: fixed, mean: 3}, think_time_s: 1.0}
)";
  auto e = RunScenario(Load(mt));
  const auto& recs = e->metrics().records();
  int64_t later_turns = 0;
  for (const auto& r : recs) {
    if (r.turn == 0) {
      CHECK(r.prompt_tokens == 100);
      continue;
    }
    ++later_turns;
    // Turn k's prompt = turn k−1's prompt + its 50 outputs + 100 new tokens; everything
    // computed for turn k−1 (all but its last output token) is cached, rounded to blocks.
    const int64_t prev_prompt = r.prompt_tokens - 150;
    CHECK(r.cached_tokens == (prev_prompt + 49) / 16 * 16);
  }
  CHECK(later_turns > 0);
  CHECK(e->Summary().requests_finished == static_cast<int64_t>(recs.size()));
}

// The CPU tier in `kvsim run`. With GPU prefix caching off every hit comes from the tier, so a
// later turn's hit is what the earlier turn stored: classic stores every full block it
// computed (prompt + 49 of its 50 outputs), latest only the prompt's blocks. The load then
// takes the host link's time before the turn's first step: 10 µs + 1 copy kernel (5 µs) +
// b · 2 MiB at 55 GB/s for b blocks (Llama-3.1-8B: 2 MiB per 16-token block).
TEST_CASE("engine with a CPU tier: later turns load what earlier turns stored") {
  const char* mt = R"(
name: mt_offload
seed: 11
model: {preset: llama-3.1-8b}
cache:
  block_size: 16
  num_gpu_blocks: 20000
  enable_prefix_caching: false
  offload: {num_cpu_blocks: 100000}
workload:
  kind: multi_turn
  num_requests: 60
  rate_per_s: 2
  prompt_tokens: {dist: fixed, mean: 100}
  output_tokens: {dist: fixed, mean: 50}
  multi_turn: {turns: {dist: fixed, mean: 3}, think_time_s: 1.0}
)";
  for (const std::string sem : {"classic", "latest"}) {
    auto e = RunScenario(Load(mt, {"cache.vllm_semantics=" + sem}));
    int64_t later = 0;
    for (const auto& r : e->metrics().records()) {
      CHECK(r.cached_tokens == 0);
      if (r.turn == 0) {
        CHECK(r.cpu_cached_tokens == 0);
        continue;
      }
      ++later;
      const int64_t prev_prompt = r.prompt_tokens - 150;
      const int64_t want = sem == "classic" ? (prev_prompt + 49) / 16 * 16 : prev_prompt / 16 * 16;
      CHECK(r.cpu_cached_tokens == want);
      REQUIRE(r.load_start >= 0);
      const int64_t blocks = want / 16;
      const int64_t copy_ns = 10'000 + 5'000 + (blocks * 2 * 1024 * 1024 + 54) / 55;
      CHECK(r.first_scheduled - r.load_start >= copy_ns);
    }
    CHECK(later >= 30);  // 60 requests of 3-turn sessions (the last sessions cut short)
    const RunSummary s = e->Summary();
    CHECK(s.requests_finished == 60);
    CHECK(s.hit_tokens == 0);
    CHECK(s.cpu_hit_tokens > 0);
    CHECK(s.load_wait_ms.count == later);  // every later turn waited for one load
  }
}

// kv-offload.md §6: a finished request's pending store whose GPU source block is handed to
// another request is flushed: the worker waits for it before the step's forward pass. Worked
// by hand: 5 usable GPU blocks; A (64 tokens = 4 blocks, 1 output token) runs step 0 and
// finishes; B (64 other tokens) could not fit beside it and is admitted in step 1, taking the
// one never-used block and 3 of A's. Decision 0 planned the store of A's 4 blocks; it starts
// as step 1 runs and is flushed by decision 1, so step 1's GPU part starts only when it ends:
// 10 µs latency + 32 kernels (one per layer's KV tensor) × 5 µs + 4 × 2 MiB (32 layers × 8 KV
// heads × 128 × K,V × 2 bytes × 16 tokens) at 0.1 bytes/ns = 83,886,080 ns on the wire.
TEST_CASE("engine with a CPU tier: a flushed store delays the step that reuses its blocks") {
  const char* two = R"(
name: flush
seed: 5
model: {preset: llama-3.1-8b}
cache:
  block_size: 16
  num_gpu_blocks: 6
  offload: {num_cpu_blocks: 100, pcie_gbytes_per_s: 0.1}
workload:
  kind: shared_prefix
  num_requests: 2
  rate_per_s: 1000
  arrival: constant
  prompt_tokens: {dist: fixed, mean: 64}
  output_tokens: {dist: fixed, mean: 1}
)";
  const int64_t store_ns = 10'000 + 32 * 5'000 + 83'886'080;
  for (const std::string sem : {"classic", "latest"}) {
    for (const std::string gbps : {"0.1", "55"}) {
      INFO(sem << " at " << gbps << " GB/s");
      auto e = Engine::Create(Load(two, {"cache.vllm_semantics=" + sem,
                                         "cache.offload.pcie_gbytes_per_s=" + gbps}));
      REQUIRE(e.ok());
      std::vector<StepRecord> steps;
      const StepRecordSink sink = [&](const StepRecord& r) { steps.push_back(r); };
      e.value()->SetStepLog(&sink);
      e.value()->Run();
      CHECK(e.value()->Summary().requests_finished == 2);
      std::vector<StepRecord> computed;  // steps that ran a forward pass
      for (const StepRecord& r : steps)
        if (r.num_scheduled_tokens > 0) computed.push_back(r);
      REQUIRE(computed.size() == 2);
      CHECK(computed[0].admitted_new == std::vector<int32_t>{0});
      CHECK(computed[1].admitted_new == std::vector<int32_t>{1});
      const int64_t step1 = computed[1].t_end_ns - computed[1].t_start_ns;
      if (gbps == "0.1") {
        CHECK(step1 > store_ns);
      } else {
        CHECK(step1 < 20'000'000);  // the 4-block store takes 0.3 ms on a 55 GB/s link
      }
    }
  }
}

// A multi-turn stream on a sliding-window hybrid whose GPU pool is too small to keep the
// history, with a CPU tier that can.
constexpr const char* kSwaOffload = R"(
name: swa_offload
seed: 3
model: {preset: gemma-3-27b}
cache:
  block_size: 16
  num_gpu_blocks: 1500
  offload: {num_cpu_blocks: 8000}
scheduler: {max_num_batched_tokens: 2048, max_num_seqs: 16}
workload:
  kind: multi_turn
  num_requests: 60
  rate_per_s: 4
  prompt_tokens: {dist: fixed, mean: 400}
  output_tokens: {dist: fixed, mean: 40}
  multi_turn: {turns: {dist: fixed, mean: 3}, think_time_s: 2.0}
)";

// kv-offload.md §9: a sliding-window hybrid keeps HMA on and offloads every group. On a
// multi-turn stream whose GPU pool is too small to keep the history, later turns find it in
// the tier; tokens and requests are conserved and the tier stays within its slots.
TEST_CASE("engine with a CPU tier on a sliding-window hybrid: later turns hit the tier") {
  for (const std::string sem : {"classic", "latest"}) {
    INFO(sem);
    auto e = RunScenario(Load(kSwaOffload, {"cache.vllm_semantics=" + sem}));
    const RunSummary s = e->Summary();
    CHECK(s.requests_finished == 60);
    CHECK(s.cpu_hit_tokens > 0);
    int64_t out = 0;
    for (const auto& r : e->metrics().records()) {
      out += r.output_tokens;
      CHECK(r.cached_tokens + r.cpu_cached_tokens < r.prompt_tokens);  // the hit cap
    }
    CHECK(out == 60 * 40);
    CHECK(s.cpu_tier_usage_max <= 1.0);
  }
}

// step-log §3: `waiting` counts every arrived, unfinished, not-running request, so a request
// set aside while the tier loads its blocks is waiting (it is in `loading`); `kvsim run
// --step-log` used to count the WAITING queue only, as `kvsim schedule` did not.
TEST_CASE("engine with a CPU tier: the step log's waiting count includes requests loading") {
  for (const std::string sem : {"classic", "latest"}) {
    INFO(sem);
    auto e = Engine::Create(Load(
        kSwaOffload, {"cache.vllm_semantics=" + sem, "cache.offload.pcie_gbytes_per_s=2"}));
    REQUIRE(e.ok());
    std::vector<StepRecord> steps;
    const StepRecordSink sink = [&](const StepRecord& r) { steps.push_back(r); };
    e.value()->SetStepLog(&sink);
    e.value()->Run();
    int64_t with_loads = 0;
    for (const StepRecord& r : steps) {
      INFO("step " << r.step);
      CHECK(r.waiting >= static_cast<int64_t>(r.loading.size()));
      with_loads += r.loading.empty() ? 0 : 1;
    }
    CHECK(with_loads > 0);
  }
}

// An empty tier (cpu_bytes 0: a sweep's baseline) changes nothing but the columns.
TEST_CASE("engine: an empty CPU tier runs exactly as no tier") {
  auto a = RunScenario(Load(kDense));
  auto b = RunScenario(Load(kDense, {"cache.offload={cpu_bytes: 0}"}));
  CHECK(Fingerprint(*a) == Fingerprint(*b));
  CHECK(b->Summary().cpu_hit_tokens == 0);
}

// Issue 12: a 200k-request multi-turn run used to hold every waiting request's prompt ids.
// The engine now holds only requests in flight, each as a recipe of a few parts.
const char* kSessions = R"(
name: sessions
seed: 3
model: {preset: llama-3.1-8b}
cache: {block_size: 16, num_gpu_blocks: 20000}
workload:
  kind: multi_turn
  num_requests: 3000
  rate_per_s: 2
  system_prompt: {tokens: 1000, count: 2}
  prompt_tokens: {dist: fixed, mean: 100}
  output_tokens: {dist: fixed, mean: 20}
  multi_turn: {turns: {dist: fixed, mean: 3}, think_time_s: 1.0}
)";

TEST_CASE("engine: the requests held follow what is in flight, not the workload's size") {
  auto e = RunScenario(Load(kSessions));
  const RequestFootprint& f = e->footprint();
  CHECK(e->Summary().requests_finished == 3000);
  // Little's law by hand: 2 sessions/s, each alive for 3 turns of ~1 s think time plus well
  // under a second of service, so about 2 × 4 = 8 sessions in flight, each holding one
  // request (entered or announced). 60 leaves room for Poisson bursts; a workload that made
  // its sessions ahead of time would hold hundreds.
  CHECK(f.live_max + f.pending_max <= 60);
  CHECK(f.live_max >= 1);
  // Every spec announced was released.
  CHECK(f.pending == 0);
  CHECK(f.spec_bytes == 0);
}

TEST_CASE("engine: an overloaded queue holds recipes, not prompt ids") {
  // 200 sessions/s against a cache of 1000 blocks: the waiting queue grows through the run.
  auto e = RunScenario(Load(kSessions, {"workload.rate_per_s=200", "workload.num_requests=1500",
                                        "cache.num_gpu_blocks=1000"}));
  const RequestFootprint& f = e->footprint();
  CHECK(f.live_max >= 300);  // the queue really grew
  // Each prompt is ≥ 1100 tokens (the 1000-token system prompt + 100): 4400 B as ids. A
  // recipe is the spec plus at most 2 + 2 × turn parts (system, user text, then one reply
  // and one user text per earlier turn): under 512 B for 3 turns.
  const int64_t held = f.live_max + f.pending_max;
  CHECK(f.spec_bytes_max <= held * 512);
  CHECK(f.spec_bytes == 0);
}

// Async scheduling's timing (core/cost_model.h): a step decided while the previous one ran has
// had its CPU part (here step_overhead_us = 1000 µs, seq_overhead_us = 0, step_token_ns = 0, set
// in the scenario so that a refit of the H100 preset does not move them) overlap that step's GPU
// part, so a back-to-back decode step lasts its GPU part alone, 1000 µs less than the same
// batch's step in sync mode (the GPU part, Llama-3.1-8B's 16 GB of weights, exceeds 1000 µs).
TEST_CASE("engine, async scheduling: a back-to-back step's CPU part hides behind the GPU") {
  const char* one = R"(
name: one
seed: 1
model: {preset: llama-3.1-8b}
hardware: {preset: H100-SXM, step_overhead_us: 1000, seq_overhead_us: 0, step_token_ns: 0}
cache: {block_size: 16, num_gpu_blocks: 2000}
workload:
  kind: shared_prefix
  num_requests: 1
  system_prompt: {tokens: 0, count: 1}
  prompt_tokens: {dist: fixed, mean: 200}
  output_tokens: {dist: fixed, mean: 12}
)";
  auto durations = [&](bool async) {
    const Scenario sc = Load(one, {std::string("scheduler.async_scheduling=") +
                                   (async ? "true" : "false")});
    auto e = Engine::Create(sc);
    REQUIRE(e.ok());
    std::map<int64_t, int64_t> by_before;  // chunk start → step duration
    const StepRecordSink sink = [&](const StepRecord& r) {
      if (r.scheduled.size() == 1) by_before[r.scheduled[0].before] = r.t_end_ns - r.t_start_ns;
    };
    e.value()->SetStepLog(&sink);
    e.value()->Run();
    return by_before;
  };
  const auto sync = durations(false), async = durations(true);
  REQUIRE(sync.size() == 12);  // the prefill and 11 decodes
  int64_t checked = 0;
  for (const auto& [before, dt] : async) {
    if (before <= 200) continue;  // the prefill and the first decode follow no running step
    CHECK(dt == sync.at(before) - 1000'000);
    ++checked;
  }
  CHECK(checked == 10);
}

TEST_CASE("engine: max_sim_seconds stops the run and counts the unfinished") {
  const Scenario sc = Load(kDense, {"run.max_sim_seconds=2"});
  auto e = RunScenario(sc);
  const RunSummary s = e->Summary();
  CHECK(s.requests_arrived < 200);
  CHECK(s.requests_finished + s.requests_unfinished == s.requests_arrived);
  CHECK(e->now() <= 2 * kTicksPerSecond);
}

}  // namespace
}  // namespace kvsim

namespace kvsim {
namespace {

TEST_CASE("engine: trace workloads replay the built-in samples at their timestamps") {
  const char* yaml = R"(
name: tr
seed: 1
model: {preset: llama-3.1-8b, max_model_len: 131072}
cache: {block_size: 16, kv_memory_bytes: 60GiB}
workload:
  kind: trace
  num_requests: 0
  trace: {path: mooncake_conversation_head60.jsonl, required: true}
)";
  auto tree = ParseYaml(yaml, "tr.yaml");
  REQUIRE(tree.ok());
  auto sc = ParseScenario(tree.value(), "tr.yaml");
  REQUIRE(sc.ok());
  auto e = Engine::Create(sc.value());
  INFO(e.status().message());
  REQUIRE(e.ok());
  e.value()->Run();
  const RunSummary s = e.value()->Summary();
  CHECK(s.requests_finished == 60);
  CHECK(s.hit_tokens > 0);  // every request starts with the shared block of hash id 0
  CHECK(e.value()->workload_description().find("mooncake") != std::string::npos);
  // Hits are whole 512-token hash blocks in this trace (16 divides 512).
  for (const auto& r : e.value()->metrics().records()) CHECK(r.cached_tokens % 512 == 0);

  REQUIRE(ApplyOverride(tree.value(), "workload.trace.path=sample_tokens.jsonl").ok());
  auto sc2 = ParseScenario(tree.value(), "tr.yaml");
  REQUIRE(sc2.ok());
  auto e2 = Engine::Create(sc2.value());
  REQUIRE(e2.ok());
  e2.value()->Run();
  CHECK(e2.value()->Summary().requests_finished == 120);
  CHECK(e2.value()->Summary().prefix_hit_rate > 0.3);
}

}  // namespace
}  // namespace kvsim

namespace kvsim {

TEST_CASE("engine, async scheduling: every request finishes with its outputs; steps chain") {
  // Async scheduling decides step k+1 while step k runs: each step starts when the previous
  // one ends (no idle gap while work is queued), a request whose last token is in flight is
  // never scheduled again, and the token accounting of step-log.md §5 still holds.
  for (const char* async : {"true", "false"}) {
    INFO("async " << async);
    const Scenario sc = Load(kDense, {std::string("scheduler.async_scheduling=") + async,
                                      "cache.num_gpu_blocks=300"});
    auto e = Engine::Create(sc);
    REQUIRE(e.ok());
    std::vector<StepRecord> steps;
    StepRecordSink sink = [&](const StepRecord& r) { steps.push_back(r); };
    e.value()->SetStepLog(&sink);
    e.value()->Run();
    int64_t finished = 0;
    for (const auto& r : e.value()->metrics().records()) {
      if (r.rejected) continue;
      ++finished;
      CHECK(r.finish >= r.first_token);
      CHECK(r.output_tokens >= 1);
    }
    CHECK(finished == 200);
    REQUIRE(!steps.empty());
    std::map<int32_t, int64_t> finished_at;  // request → step that finished it
    for (size_t i = 0; i < steps.size(); ++i) {
      CHECK(steps[i].step == static_cast<int64_t>(i));
      CHECK(steps[i].t_end_ns >= steps[i].t_start_ns);
      if (i > 0) CHECK(steps[i].t_start_ns >= steps[i - 1].t_end_ns);
      for (int32_t f : steps[i].finished) finished_at[f] = steps[i].step;
      for (const auto& c : steps[i].scheduled) {
        auto it = finished_at.find(c.request);
        CHECK((it == finished_at.end() || it->second >= steps[i].step));
      }
    }
    CHECK(static_cast<int64_t>(finished_at.size()) == finished);
  }
}

namespace {

TEST_CASE("engine: intake delays the scheduler, output processing delays what the user sees") {
  const Scenario sc = Load(R"(
name: hooks
seed: 1
model: {preset: llama-3.1-8b}
hardware: {preset: H100-SXM, intake_us: 1000, intake_token_ns: 2000, output_token_us: 50}
cache: {block_size: 16, num_gpu_blocks: 1000, enable_prefix_caching: false}
scheduler: {max_num_batched_tokens: 2048, max_num_seqs: 8}
workload:
  kind: shared_prefix
  num_requests: 1
  arrival: burst
  prompt_tokens: {dist: fixed, mean: 100, min: 1, max: 100}
  output_tokens: {dist: fixed, mean: 3, min: 1, max: 3}
)");
  auto e = RunScenario(sc);
  auto plan = sc.Plan();
  REQUIRE(plan.ok());
  CostModel cm(sc.model, plan.value(), sc.sim.hardware);
  const Tick intake = 1000000 + 100 * 2000;  // 1 ms + 100 prompt tokens × 2 us
  const Tick out = 50000;                    // one token per step × 50 us
  const Tick prefill = cm.BatchNanos({{100, 0}});
  const Tick decode1 = cm.BatchNanos({{1, 100}});
  const Tick decode2 = cm.BatchNanos({{1, 101}});
  const RequestRecord& r = e->metrics().records().at(0);
  CHECK(r.arrival == 0);  // the clock starts when the client sends
  CHECK(r.first_token == intake + prefill + out);
  CHECK(r.finish == intake + prefill + decode1 + decode2 + out);
}

}  // namespace
}  // namespace kvsim

namespace kvsim {
namespace {

TEST_CASE("point labels in JSON keep the scenario's types and the axis order") {
  const Labels labels = {{"cache.block_size", "16"},   {"hardware.mbu", "0.85"},
                         {"cache.enable_prefix_caching", "false"},
                         {"cluster.topology.ratio", "2:2"}, {"model.preset", "llama-3.1-8b"},
                         {"cache.prefix_cache_retention_interval", "null"},
                         {"cache.kv_memory_bytes", "8GiB"}, {"x.big", "1e3"}};
  const nlohmann::ordered_json j = LabelsToJson(labels);
  CHECK(j.dump() ==
        R"({"cache.block_size":16,"hardware.mbu":0.85,"cache.enable_prefix_caching":false,)"
        R"("cluster.topology.ratio":"2:2","model.preset":"llama-3.1-8b",)"
        R"("cache.prefix_cache_retention_interval":null,"cache.kv_memory_bytes":"8GiB",)"
        R"("x.big":1000.0})");
  CHECK(LabelsToJson({}).dump() == "{}");
}

}  // namespace
}  // namespace kvsim
