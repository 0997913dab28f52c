// The Steps panel's model: a step log read into records, each chunk classified as prefill,
// decode or recompute, and errors that name file and line. The sample log
// (tests/viz/data/steps_sample.jsonl) is a hand-written four-step story: a (6-token prompt)
// and b (6) start in step 0 (b gets 2 of its 6 prompt tokens), a decodes in steps 1-2 while
// b finishes its prompt in step 1, b is preempted in step 2 (it had computed 6 tokens), and
// b resumes in step 5 with a 4-token hit, recomputing tokens 4..6 and sampling its last token.
#include "viz/step_log.h"

#include <catch2/catch_test_macros.hpp>

#include "tests/viz/headless.h"
#include "viz/panels/steps_panel.h"

namespace kvsim::viz {
namespace {

const std::string kSample = std::string(KVSIM_SOURCE_DIR) + "/tests/viz/data/steps_sample.jsonl";

TEST_CASE("step log: records, request ids and chunk kinds of the hand-written sample") {
  auto r = ReadStepLog(kSample);
  REQUIRE(r.ok());
  const StepLog& log = r.value();
  REQUIRE(log.steps.size() == 4);
  CHECK(log.has_summary);
  CHECK(log.request_ids == std::vector<std::string>{"a", "b"});
  CHECK(log.steps[3].step == 5);  // idle gaps keep their step numbers
  CHECK(log.total_preemptions == 1);
  CHECK(log.max_tokens_in_step == 8);  // step 0: 6 + 2
  CHECK(log.max_free_blocks == 7);
  using K = ChunkKind;
  CHECK(log.steps[0].scheduled[0].kind == K::kPrefill);
  CHECK(log.steps[0].scheduled[1].kind == K::kPrefill);
  CHECK(log.steps[1].scheduled[0].kind == K::kDecode);   // a sampled in step 0
  CHECK(log.steps[1].scheduled[1].kind == K::kPrefill);  // b's second prompt chunk
  CHECK(log.steps[2].scheduled[0].kind == K::kDecode);
  CHECK(log.steps[2].preempted == std::vector<int32_t>{1});
  CHECK(log.steps[2].finished == std::vector<int32_t>{0});
  CHECK(log.steps[3].scheduled[0].kind == K::kRecompute);  // before 4 < 6 computed before
  CHECK(log.steps[3].scheduled[0].hit == 4);
  CHECK(log.steps[1].running == 2);
  CHECK(log.steps[2].waiting == 1);
}

TEST_CASE("step log: without a summary line, 1-token chunks of running requests are decode") {
  const std::string text =
      R"({"step": 0, "scheduled": [["x", 3, 0, 0]], "preempted": [], "finished": [], "num_free_blocks": 2})"
      "\n"
      R"({"step": 1, "scheduled": [["x", 1, 3, -1]], "preempted": [], "finished": ["x"], "num_free_blocks": 3})"
      "\n";
  auto r = ParseStepLog(text, "t.jsonl");
  REQUIRE(r.ok());
  CHECK_FALSE(r->has_summary);
  CHECK(r->steps[0].scheduled[0].kind == ChunkKind::kPrefill);
  CHECK(r->steps[1].scheduled[0].kind == ChunkKind::kDecode);
  CHECK(r->steps[0].running == -1);  // optional fields left out
}

TEST_CASE("step log: bad input names file and line") {
  auto err = [](const std::string& text) {
    auto r = ParseStepLog(text, "s.jsonl", 2);
    REQUIRE_FALSE(r.ok());
    return r.status().message();
  };
  const std::string ok =
      R"({"step": 0, "scheduled": [], "preempted": [], "finished": [], "num_free_blocks": 1})";
  CHECK(err("not json\n").find("s.jsonl:1: not a JSON object") == 0);
  CHECK(err(ok + "\n" + R"({"step": 1, "scheduled": [["a", 1]], "preempted": [], "finished": [], "num_free_blocks": 1})")
            .find("s.jsonl:2: 'scheduled'") == 0);
  CHECK(err(ok + "\n" + ok).find("s.jsonl:2: 'step': steps must increase") == 0);
  CHECK(err(R"({"step": 0, "scheduled": [], "preempted": [], "finished": []})")
            .find("'num_free_blocks'") != std::string::npos);
  CHECK(err(ok + "\n" + R"({"step": 1, "scheduled": [], "preempted": [], "finished": [], "num_free_blocks": 1})" +
            "\n" + R"({"step": 2, "scheduled": [], "preempted": [], "finished": [], "num_free_blocks": 1})")
            .find("more than 2 steps") != std::string::npos);
  CHECK(err("\n\n").find("no step records") != std::string::npos);
  CHECK_FALSE(ReadStepLog("/nonexistent/steps.jsonl").ok());
}

TEST_CASE("Steps panel: opens the sample, draws, and PgDn/End move the selected step") {
  testing::HeadlessImGui imgui;
  StepsPanel panel;
  ViewerContext ctx;
  ctx.step_log = kSample;
  auto frame = [&] { panel.Draw(ctx); };
  REQUIRE(imgui.Frame(frame));
  REQUIRE(panel.log() != nullptr);
  CHECK(panel.error().empty());
  CHECK(panel.selected() == 0);
  imgui.Press(testing::kKeyPageDown, frame);
  CHECK(panel.selected() == 1);
  imgui.Press(testing::kKeyEnd, frame);
  CHECK(panel.selected() == 3);
  CHECK(ImGui::GetDrawData()->TotalVtxCount > 100);
  // A bad path shows the error instead of a chart.
  StepsPanel bad;
  ViewerContext bctx;
  bctx.step_log = "/nonexistent/steps.jsonl";
  REQUIRE(imgui.Frame([&] { bad.Draw(bctx); }));
  CHECK(bad.log() == nullptr);
  CHECK(bad.error().find("no such step log") != std::string::npos);
}

}  // namespace
}  // namespace kvsim::viz
