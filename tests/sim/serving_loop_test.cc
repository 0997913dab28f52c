// The serving loop alone (sim/pool/serving_loop.h), under a minimal deployment that admits every
// arrival to its pool's pick and ends each request when it finishes: the order of an external
// clock's completions against the events of the same tick, the request footprint, a stop time,
// and the global indices of a second pool. Expected values come from the scripted requests.
#include <catch2/catch_test_macros.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sim/instance_builder.h"
#include "sim/pool/serving_loop.h"
#include "tests/sim/cluster_test_workload.h"
#include "tests/sim/load_scenario.h"

namespace kvsim {
namespace {

// Intake costs nothing, so a request enters at its send time.
const char* kYaml = R"(
name: loop
seed: 1
model: {preset: llama-3.1-8b}
hardware: {preset: H100-SXM, intake_us: 0, intake_token_ns: 0}
cache: {block_size: 16, num_gpu_blocks: 1000}
scheduler: {max_num_batched_tokens: 2048, max_num_seqs: 8}
)";

InstanceConfig Config() {
  const Scenario sc = LoadScenarioText(kYaml, "loop.yaml");
  auto plan = sc.Plan();
  REQUIRE(plan.ok());
  auto c = BuildInstanceConfig(sc, plan.value(), InstanceRole::kColocated, Rng(1));
  REQUIRE(c.ok());
  return std::move(c.value());
}

class Recorder final : public Deployment {
 public:
  explicit Recorder(ServingLoop& loop, int pool = 0) : loop_(loop), pool_(pool) {}
  void Arrived(RequestId id) override {
    const RequestSpec& spec = loop_.spec(id);
    log.push_back("arrive " + std::to_string(id.value()) + " @" + std::to_string(loop_.now()));
    auto l = std::make_unique<LiveRequest>();
    l->spec = &spec;
    l->id = id;
    l->arrival_tick = loop_.now();
    l->max_output_tokens = spec.max_output_tokens;
    const int i = loop_.PickInstance(pool_);
    instances.push_back(i);
    loop_.Admit(i, l.get(), loop_.PromptOf(spec));
    live_[id] = std::move(l);
    loop_.RequestSchedule(i);
  }
  void Preempted(int, SimRequest&, Tick) override {}
  void ConnectorAdmitted(int, const ConnectorAdmission&, Tick) override {}
  void StepLaunched(int i, const StepPlan&, Tick, Tick) override { stepped.push_back(i); }
  void Emitted(int, LiveRequest&, Tick) override { ++tokens; }
  void StepEnded(int, Tick, Tick, const EngineInstance&, int64_t, int64_t) override {}
  void StepOutputs(int, const std::vector<SimRequest*>& finished) override {
    for (SimRequest* r : finished) {
      const RequestId id = r->id;
      log.push_back("end " + std::to_string(id.value()) + " @" + std::to_string(loop_.now()));
      loop_.End(id, r->num_output_tokens);
      live_.erase(id);
    }
  }
  void Dropped(int, SimRequest* head) override {
    loop_.End(head->id, 0);
    live_.erase(head->id);
  }
  void RequestEvent(EventKind, RequestId) override {}

  std::vector<std::string> log;
  std::vector<int> instances, stepped;
  int64_t tokens = 0;

 private:
  ServingLoop& loop_;
  int pool_;
  std::map<RequestId, std::unique_ptr<LiveRequest>> live_;
};

// Completes once at `at`; logs when it fires.
class OneShotClock final : public ExternalClock {
 public:
  OneShotClock(Tick at, std::vector<std::string>* log, const ServingLoop* loop)
      : at_(at), log_(log), loop_(loop) {}
  std::optional<Tick> NextCompletion() const override {
    return fired_ ? std::nullopt : std::optional<Tick>(at_);
  }
  void AdvanceTo(Tick now) override { last_advance = now; }
  void Fire() override {
    fired_ = true;
    log_->push_back("fire @" + std::to_string(loop_->now()));
  }
  Tick last_advance = -1;

 private:
  Tick at_;
  bool fired_ = false;
  std::vector<std::string>* log_;
  const ServingLoop* loop_;
};

TEST_CASE("serving loop: an external completion at t runs before the arrival at t") {
  auto wl = std::make_unique<ScriptedWorkload>(
      std::vector<ScriptedRequest>{{5000, 32, 4, 1}, {9000, 32, 4, 2}});
  ScriptedWorkload* w = wl.get();
  ServingLoop loop(std::move(wl), -1);
  std::vector<InstanceConfig> configs;
  configs.push_back(Config());
  loop.AddPool(std::move(configs), {""}, false, 0);
  Recorder d(loop);
  OneShotClock clock(5000, &d.log, &loop);
  loop.SetDeployment(&d);
  loop.SetExternalClock(&clock);
  loop.Run();
  REQUIRE(d.log.size() >= 3);
  CHECK(d.log[0] == "fire @5000");
  CHECK(d.log[1] == "arrive 0 @5000");
  // Both requests ran to their 4 tokens and were ended once each, in order of arrival.
  CHECK(w->finished == std::vector<RequestId>{RequestId{0}, RequestId{1}});
  CHECK(d.tokens == 8);
  // Nothing is held after the run: no spec, no announced arrival.
  CHECK(loop.footprint().pending == 0);
  CHECK(loop.footprint().spec_bytes == 0);
  CHECK(loop.footprint().live_max >= 1);
  CHECK(loop.footprint().live_max <= 2);
  CHECK(clock.last_advance == loop.now());
}

TEST_CASE("serving loop: a stop time ends the run before later arrivals") {
  auto wl = std::make_unique<ScriptedWorkload>(
      std::vector<ScriptedRequest>{{1000, 32, 2, 1}, {kTicksPerSecond * 10, 32, 2, 2}});
  ScriptedWorkload* w = wl.get();
  ServingLoop loop(std::move(wl), kTicksPerSecond);
  std::vector<InstanceConfig> configs;
  configs.push_back(Config());
  loop.AddPool(std::move(configs), {""}, false, 0);
  Recorder d(loop);
  loop.SetDeployment(&d);
  loop.Run();
  CHECK(loop.now() == kTicksPerSecond);
  CHECK(w->finished == std::vector<RequestId>{RequestId{0}});
  // The second request was announced (pulled when the first entered) and never arrived.
  CHECK(loop.footprint().pending == 1);
}

TEST_CASE("serving loop: a second pool's instances follow the first's; its balancer deals them") {
  auto wl = std::make_unique<ScriptedWorkload>(
      std::vector<ScriptedRequest>{{0, 32, 2, 1}, {0, 32, 2, 2}, {0, 32, 2, 3}, {0, 32, 2, 4}});
  ServingLoop loop(std::move(wl), -1);
  std::vector<InstanceConfig> first, second;
  first.push_back(Config());
  second.push_back(Config());
  second.push_back(Config());
  CHECK(loop.AddPool(std::move(first), {"a"}, false, 0) == 0);
  CHECK(loop.AddPool(std::move(second), {"b 0", "b 1"}, false, 0) == 1);
  CHECK(loop.num_instances() == 3);
  CHECK(loop.pool_first(1) == 1);
  CHECK(loop.pool_size(1) == 2);
  CHECK(loop.tag(2) == "b 1");
  Recorder d(loop, /*pool=*/1);
  loop.SetDeployment(&d);
  loop.Run();
  // Published counts never (interval 0): the front end's own assignments deal round-robin.
  CHECK(d.instances == std::vector<int>{1, 2, 1, 2});
  for (int i : d.stepped) CHECK(i != 0);
  CHECK(loop.usage(0).requests == 0);
  CHECK(loop.usage(1).requests == 2);
  CHECK(loop.usage(2).requests == 2);
}

}  // namespace
}  // namespace kvsim
