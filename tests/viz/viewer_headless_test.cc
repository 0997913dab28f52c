// The whole viewer in a headless ImGui context: every panel draws, the global keys switch
// panels and quit, and hovering a page-map cell reports the coordinates and offset that
// core's KvLayout gives for that byte.
#include "viz/viewer.h"

#include <catch2/catch_test_macros.hpp>

#include <chrono>
#include <thread>

#include "tests/viz/headless.h"
#include "viz/panels/block_pool_panel.h"
#include "viz/panels/page_map_panel.h"
#include "viz/panels/steps_panel.h"

namespace kvsim::viz {
namespace {

using testing::HeadlessImGui;

std::unique_ptr<Viewer> MakeViewer(std::vector<std::string> overrides = {},
                                   std::string panel = "plan") {
  ViewerOptions o;
  o.overrides = std::move(overrides);
  o.panel = std::move(panel);
  auto v = Viewer::Create(o);
  REQUIRE(v.ok());
  return std::move(v.value());
}

TEST_CASE("every panel draws a valid frame, for a padded mixed-page-size plan too") {
  for (const auto& overrides :
       {std::vector<std::string>{},
        std::vector<std::string>{"model.preset=mimo-style", "parallel.tp=4"}}) {
    HeadlessImGui imgui;
    auto v = MakeViewer(overrides);
    for (int p = 0; p < v->num_panels(); ++p) {
      v->SelectPanel(p);
      for (int f = 0; f < 3; ++f) {
        REQUIRE(imgui.Frame([&] { v->Frame(); }));
      }
      CHECK(ImGui::GetDrawData()->TotalVtxCount > 100);
    }
  }
}

TEST_CASE("window title names the scenario and model") {
  auto v = MakeViewer();
  CHECK(v->WindowTitle().find("default") != std::string::npos);
  CHECK(v->WindowTitle().find("Qwen3.5") != std::string::npos);
}

TEST_CASE("Tab, arrows and digits switch panels; Esc and Q quit; Ctrl+S asks for a screenshot") {
  HeadlessImGui imgui;
  auto v = MakeViewer();
  auto frame = [&] { v->Frame(); };
  imgui.Frame(frame);
  CHECK(v->panel_index() == 0);
  imgui.Press(testing::kKeyTab, frame);
  CHECK(v->panel_index() == 1);
  imgui.Press(testing::kKeyTab, frame, false, /*shift=*/true);
  CHECK(v->panel_index() == 0);
  imgui.Press(testing::kKeyLeft, frame);
  CHECK(v->panel_index() == v->num_panels() - 1);
  imgui.Press(testing::kKeyRight, frame);
  CHECK(v->panel_index() == 0);
  imgui.Press('3', frame);
  CHECK(std::string(v->current_panel().id()) == "block_pool");
  CHECK_FALSE(v->TakeScreenshotRequest());
  imgui.Press('S', frame, /*ctrl=*/true);
  CHECK(v->TakeScreenshotRequest());
  CHECK_FALSE(v->TakeScreenshotRequest());
  CHECK_FALSE(v->quit_requested());
  imgui.Press('Q', frame);
  CHECK(v->quit_requested());
  auto w = MakeViewer();
  auto frame_w = [&] { w->Frame(); };
  imgui.Press(testing::kKeyEscape, frame_w);
  CHECK(w->quit_requested());
}

TEST_CASE("unknown --panel is an error naming the known ones") {
  ViewerOptions o;
  o.panel = "pool";
  auto v = Viewer::Create(o);
  REQUIRE_FALSE(v.ok());
  CHECK(v.status().message().find("block_pool") != std::string::npos);
}

TEST_CASE("hovering a page-map cell reports its coordinates and KvLayout offset") {
  HeadlessImGui imgui;
  auto v = MakeViewer({}, "page_map");
  auto frame = [&] { v->Frame(); };
  imgui.Frame(frame);
  imgui.Frame(frame);
  auto* panel = dynamic_cast<PageMapPanel*>(&v->panel(v->panel_index()));
  REQUIRE(panel != nullptr);
  const PageMapPanel::Side& a = panel->side(0);
  REQUIRE(a.map.has_value());
  // Token 40 of L4, V byte 100, in block 1: where core's layout puts it.
  const KvCachePlan& plan = v->plan().plan();
  int l4 = -1;
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    if (plan.layers[i].name == "L4") l4 = static_cast<int>(i);
  }
  REQUIRE(l4 >= 0);
  const KvLayout layout = plan.LayoutForLayer(l4);
  const int64_t byte = layout.offset(0, 1, 0, 40, 512 + 100);
  // Zoom in until one screen row is one token row, so the cell under the mouse starts
  // within a few bytes of `byte`.
  panel->mutable_side(0).zoom = 16;
  imgui.Frame(frame);
  REQUIRE(panel->side(0).raster.rows_per_line == 1);
  ImVec2 pos;
  REQUIRE(panel->ScreenPosOfByte(0, byte, &pos));
  ImGui::GetIO().MousePos = pos;
  imgui.Frame(frame);
  REQUIRE(panel->hovered_side() == 0);
  const ByteInfo& h = panel->hovered();
  REQUIRE(h.valid());
  // The hover names the cell's first byte: same token of the same layer, and its offset is
  // that byte.
  CHECK(h.layer_name == "L4");
  CHECK(h.coord.block == 1);
  CHECK(h.manager_token == 40);
  CHECK(h.region == Region::kValue);
  const int64_t cell = a.raster.CellOf(byte);
  CHECK(h.offset == a.raster.CellBegin(cell));
  CHECK(byte - h.offset < a.raster.cell_bytes);
  CHECK(h.coord.token == 40);
  CHECK(h.coord.byte == 612 - (byte - h.offset));
  CHECK(h.offset ==
        layout.offset(h.coord.layer, h.coord.block, h.coord.head, h.coord.token, h.coord.byte));
  // Next frame the hovered token is highlighted on both sides (B: pack 4, another page).
  imgui.Frame(frame);
  REQUIRE(panel->highlighted().has_value());
  CHECK(panel->highlighted()->layer_name == "L4");
  CHECK(panel->highlighted()->position == 1056 + 40);
  REQUIRE(panel->highlight_ranges(0).size() == 1);
  CHECK(panel->highlight_ranges(0)[0].begin == layout.offset(0, 1, 0, 40, 0));
  REQUIRE(panel->compare_model() != nullptr);
  REQUIRE(panel->compare_model()->has_plan());
  CHECK(panel->compare_model()->plan().attn_block_size == 272);
  REQUIRE(panel->highlight_ranges(1).size() == 1);
  // On side B the same token (position 1096) is token 1096 - 4 x 272 = 8 of block 4.
  CHECK(panel->side(1).sel.block == 4);
  const PageMapPanel::Side& b = panel->side(1);
  REQUIRE(b.map.has_value());
  const ByteInfo hb = b.map->Locate(panel->highlight_ranges(1)[0].begin);
  CHECK(hb.layer_name == "L4");
  CHECK(hb.manager_token == 8);
}

TEST_CASE("plan knob changes made between frames re-plan and reach the page map") {
  HeadlessImGui imgui;
  auto v = MakeViewer({}, "page_map");
  auto frame = [&] { v->Frame(); };
  imgui.Frame(frame);
  auto* panel = dynamic_cast<PageMapPanel*>(&v->panel(v->panel_index()));
  REQUIRE(panel);
  REQUIRE(panel->side(0).map);
  CHECK(panel->side(0).map->manager_block_tokens() == 1056);
  v->plan().mutable_knobs().attn_pack_size = 2;
  imgui.Frame(frame);
  imgui.Frame(frame);
  REQUIRE(panel->side(0).map);
  CHECK(v->plan().plan().attn_block_size == panel->side(0).map->manager_block_tokens());
  CHECK(panel->side(0).map->manager_block_tokens() != 1056);
}

}  // namespace
}  // namespace kvsim::viz

namespace kvsim::viz {
namespace {

TEST_CASE("page map keys: PgDn/PgUp change block, = and - zoom, Home resets") {
  HeadlessImGui imgui;
  auto v = MakeViewer({}, "page_map");
  auto frame = [&] { v->Frame(); };
  imgui.Frame(frame);
  auto* panel = dynamic_cast<PageMapPanel*>(&v->panel(v->panel_index()));
  REQUIRE(panel);
  CHECK(panel->side(0).sel.block == 1);
  imgui.Press(testing::kKeyPageDown, frame);
  CHECK(panel->side(0).sel.block == 2);
  REQUIRE(panel->side(0).map);
  CHECK(panel->side(0).map->selection().block == 2);
  imgui.Press(testing::kKeyPageUp, frame);
  CHECK(panel->side(0).sel.block == 1);
  imgui.Press('=', frame);
  CHECK(panel->side(0).zoom == 2.0);
  CHECK(panel->side(0).raster.bytes == panel->side(0).map->size() / 2);
  imgui.Press('-', frame);
  CHECK(panel->side(0).zoom == 1.0);
  imgui.Press('=', frame);
  imgui.Press(testing::kKeyHome, frame);
  CHECK(panel->side(0).zoom == 1.0);
  CHECK(panel->side(0).view_offset == 0);
}

TEST_CASE("page map: a click pins the token under the mouse") {
  HeadlessImGui imgui;
  auto v = MakeViewer({"model.preset=llama-3.1-8b", "parallel.tp=1"}, "page_map");
  auto frame = [&] { v->Frame(); };
  imgui.Frame(frame);
  imgui.Frame(frame);
  auto* panel = dynamic_cast<PageMapPanel*>(&v->panel(v->panel_index()));
  REQUIRE(panel);
  const PageMap& m = *panel->side(0).map;
  // Token 9 of layer L1, head 2: one of its bytes.
  const auto ranges = m.TokenRanges(0, 9);
  REQUIRE(ranges.size() == 8);
  ImVec2 pos;
  REQUIRE(panel->ScreenPosOfByte(0, ranges[2].begin, &pos));
  ImGuiIO& io = ImGui::GetIO();
  io.MousePos = pos;
  imgui.Frame(frame);
  io.MouseDown[0] = true;
  imgui.Frame(frame);
  io.MouseDown[0] = false;
  imgui.Frame(frame);
  io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);  // move away: the pin stays
  imgui.Frame(frame);
  imgui.Frame(frame);
  REQUIRE(panel->highlighted().has_value());
  CHECK(panel->highlighted()->layer_name == "L1");
  CHECK(panel->highlighted()->position == 16 + 9);
  // Both sides (NHD and HND) highlight the token's 8 head rows.
  CHECK(panel->highlight_ranges(0).size() == 8);
  CHECK(panel->highlight_ranges(1).size() == 8);
}

TEST_CASE("a P/D scenario opens on its prefill pool, compared with its decode pool") {
  HeadlessImGui imgui;
  ViewerOptions o;
  o.scenario_path = std::string(KVSIM_SOURCE_DIR) + "/scenarios/pd_nhd64_tp4_hnd16_tp2.yaml";
  o.panel = "page_map";
  auto made = Viewer::Create(o);
  REQUIRE(made.ok());
  Viewer& v = *made.value();
  auto frame = [&] { v.Frame(); };
  imgui.Frame(frame);
  imgui.Frame(frame);
  CHECK(v.plan().role() == "prefill");
  auto* panel = dynamic_cast<PageMapPanel*>(&v.panel(v.panel_index()));
  REQUIRE(panel);
  REQUIRE(panel->compare_model());
  CHECK(panel->compare_model()->role() == "decode");
  REQUIRE(panel->side(0).map);
  REQUIRE(panel->side(1).map);
  CHECK(panel->side(0).map->manager_block_tokens() == 64);
  CHECK(panel->side(1).map->manager_block_tokens() == 16);
  // The default highlight (token 17 of block 1 = position 81) is token 1 of decode block 5,
  // one range per KV head on each side (TP 4 → 2 heads, TP 2 → 4 heads).
  CHECK(panel->side(1).sel.block == 5);
  REQUIRE(panel->highlight_ranges(0).size() == 2);
  REQUIRE(panel->highlight_ranges(1).size() == 4);
  // NHD keeps the token's heads adjacent; HND puts them a head block (16 tokens) apart.
  CHECK(panel->highlight_ranges(0)[1].begin == panel->highlight_ranges(0)[0].end);
  CHECK(panel->highlight_ranges(1)[1].begin - panel->highlight_ranges(1)[0].begin == 16 * 512);
}

TEST_CASE("block pool keys: Home/End/PgDn move in time, Space plays") {
  HeadlessImGui imgui;
  auto v = MakeViewer({"model.preset=mimo-style", "parallel.tp=4"}, "block_pool");
  auto frame = [&] { v->Frame(); };
  imgui.Frame(frame);
  auto* panel = dynamic_cast<BlockPoolPanel*>(&v->panel(v->panel_index()));
  REQUIRE(panel);
  REQUIRE(panel->error().empty());
  REQUIRE(panel->replay());
  const int64_t last = panel->replay()->num_steps() - 1;
  CHECK(panel->time() == last);  // opens at the end of the trace
  imgui.Press(testing::kKeyHome, frame);
  CHECK(panel->time() == 0);
  CHECK(panel->replay()->time() == 0);
  imgui.Press(testing::kKeyPageDown, frame);
  CHECK(panel->time() == 1);
  imgui.Press(testing::kKeyEnd, frame);
  CHECK(panel->replay()->time() == last);
  imgui.Press(testing::kKeyHome, frame);
  imgui.Press(testing::kKeySpace, frame);
  CHECK(panel->playing());
  for (int i = 0; i < 30; ++i) imgui.Frame(frame);  // 0.5 s at 8 requests/s
  CHECK(panel->time() >= 3);
  imgui.Press(testing::kKeySpace, frame);
  CHECK_FALSE(panel->playing());
}

}  // namespace
}  // namespace kvsim::viz

namespace kvsim::viz {
namespace {

using testing::HeadlessImGui;

const std::string kRequests =
    std::string(KVSIM_SOURCE_DIR) + "/scenarios/traces/sample_requests.jsonl";

ViewerOptions TwoTier() {
  ViewerOptions o;
  o.schedule.requests = kRequests;
  o.schedule.num_gpu_blocks = 40;
  o.schedule.max_num_batched_tokens = 64;
  o.schedule.num_cpu_blocks = 200;
  o.step = 62;
  o.panel = "steps";
  return o;
}

TEST_CASE("a step past the simulation's last step (--step) is an error naming the range") {
  auto first = Viewer::Create(TwoTier());
  REQUIRE(first.ok());
  const auto& steps = first.value()->context().sim->log().steps;
  REQUIRE(!steps.empty());
  const int64_t last = steps.back().step;
  ViewerOptions at_end = TwoTier();
  at_end.step = last;
  CHECK(Viewer::Create(at_end).ok());
  ViewerOptions past = TwoTier();
  past.step = last + 1;
  auto bad = Viewer::Create(past);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() ==
        "--step " + std::to_string(last + 1) + ": beyond the simulation, whose steps run from " +
            std::to_string(steps.front().step) + " to " + std::to_string(last));
}

TEST_CASE("a simulation is shared: scrubbing the Steps or the Block pool panel moves both") {
  HeadlessImGui imgui;
  auto vr = Viewer::Create(TwoTier());
  REQUIRE(vr.ok());
  Viewer& v = *vr.value();
  auto frame = [&] { v.Frame(); };
  ViewerContext& ctx = v.context();
  REQUIRE(ctx.sim);
  const int64_t n = ctx.sim->num_steps();
  CHECK(ctx.sim->log().steps[static_cast<size_t>(ctx.sim_index)].step == 62);
  imgui.Frame(frame);
  auto* steps = dynamic_cast<StepsPanel*>(&v.panel(v.panel_index()));
  REQUIRE(steps);
  CHECK(steps->source() == StepsPanel::Source::kSchedule);
  CHECK(steps->log() == &ctx.sim->log());
  CHECK(steps->selected() == ctx.sim_index);
  imgui.Press(testing::kKeyPageDown, frame);
  CHECK(ctx.sim_index == 63);
  REQUIRE(v.SelectPanel("block_pool"));
  imgui.Frame(frame);
  auto* pool = dynamic_cast<BlockPoolPanel*>(&v.panel(v.panel_index()));
  REQUIRE(pool);
  CHECK(pool->replay() == nullptr);  // no trace replay while a simulation is loaded
  imgui.Press(testing::kKeyEnd, frame);
  CHECK(ctx.sim_index == n - 1);
  imgui.Press(testing::kKeyPageUp, frame);
  CHECK(ctx.sim_index == n - 2);
  REQUIRE(v.SelectPanel("steps"));
  imgui.Frame(frame);
  CHECK(steps->selected() == n - 2);
  // Hovering the grids draws tooltips without trouble, at every step.
  ImGui::GetIO().MousePos = ImVec2(600, 200);
  REQUIRE(v.SelectPanel("block_pool"));
  for (int i = 0; i < 5; ++i) imgui.Press(testing::kKeyPageUp, frame);
  ImGui::GetIO().MousePos = ImVec2(600, 430);
  REQUIRE(imgui.Frame(frame));
  // The step-log file source drops the simulation; the Block pool replays its trace again.
  steps->SetSource(ctx, StepsPanel::Source::kFile);
  CHECK_FALSE(ctx.sim);
  imgui.Frame(frame);
  CHECK(pool->replay() != nullptr);
}

TEST_CASE("Block pool panel: steps past the snapshot budget say so instead of drawing a pool") {
  for (int64_t budget : {0, 3000}) {
    SimRunLimits limits;
    limits.snapshot_budget_bytes = budget;
    auto r = RunScheduleSimulation(TwoTier().schedule, limits);
    REQUIRE(r.ok());
    HeadlessImGui imgui;
    BlockPoolPanel panel;
    ViewerContext ctx;
    ctx.sim = std::move(r.value());
    CHECK(ctx.sim->num_snapshots() < ctx.sim->num_steps());
    for (int64_t i : {int64_t{0}, ctx.sim->num_steps() - 1}) {
      ctx.sim_index = i;
      REQUIRE(imgui.Frame([&] { panel.Draw(ctx); }));
    }
  }
}

TEST_CASE("the Steps panel runs kvsim schedule on a worker thread, then both panels show it") {
  HeadlessImGui imgui;
  ViewerOptions o;
  o.panel = "steps";
  auto vr = Viewer::Create(o);
  REQUIRE(vr.ok());
  Viewer& v = *vr.value();
  auto frame = [&] { v.Frame(); };
  imgui.Frame(frame);
  auto* steps = dynamic_cast<StepsPanel*>(&v.panel(v.panel_index()));
  REQUIRE(steps);
  ViewerContext& ctx = v.context();
  // The panel opened on the default scenario's run (one run at a time): let it finish first.
  for (int i = 0; i < 2000 && steps->running(); ++i) {
    imgui.Frame(frame);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE_FALSE(steps->running());
  ctx.schedule = TwoTier().schedule;
  steps->Run(ctx, StepsPanel::Source::kSchedule);
  for (int i = 0; i < 2000 && steps->running(); ++i) {
    imgui.Frame(frame);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  imgui.Frame(frame);
  REQUIRE_FALSE(steps->running());
  INFO(steps->error());
  REQUIRE(ctx.sim);
  CHECK(ctx.sim->num_steps() == 99);
  CHECK(steps->log() == &ctx.sim->log());
  // A bad flag is the panel's error, not a crash.
  ctx.schedule.num_gpu_blocks = 1;
  steps->Run(ctx, StepsPanel::Source::kSchedule, /*wait=*/true);
  CHECK(steps->error().find("--num-gpu-blocks") != std::string::npos);
  CHECK(ctx.sim);  // the last good simulation stays
}

// Opened with nothing for it to show (no --steps, --requests or --run), the Steps panel runs
// the loaded scenario through the engine and shows that run, not an empty state. Expected
// values come from the scenario (its request count) and from a separate run of the same
// scenario, not from the panel.
TEST_CASE("the Steps panel opens on the scenario's own simulation") {
  for (const bool wait : {true, false}) {
    CAPTURE(wait);
    HeadlessImGui imgui;
    ViewerOptions o;
    o.overrides = {"workload.num_requests=60"};
    o.panel = "steps";
    o.wait_for_runs = wait;
    auto vr = Viewer::Create(o);
    REQUIRE(vr.ok());
    Viewer& v = *vr.value();
    ViewerContext& ctx = v.context();
    CHECK_FALSE(ctx.sim);  // nothing runs until the panel is first drawn
    auto frame = [&] { v.Frame(); };
    REQUIRE(imgui.Frame(frame));
    auto* steps = dynamic_cast<StepsPanel*>(&v.panel(v.panel_index()));
    REQUIRE(steps);
    CHECK(steps->source() == StepsPanel::Source::kScenario);
    // Waited for (headless --screenshot): the first frame already shows the run.
    if (wait) CHECK((!steps->running() && ctx.sim));
    for (int i = 0; i < 2000 && steps->running(); ++i) {
      REQUIRE(imgui.Frame(frame));
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    REQUIRE(imgui.Frame(frame));
    INFO(steps->error());
    CHECK(steps->error().empty());
    REQUIRE(ctx.sim);
    CHECK(ctx.sim->kind() == SimRun::Kind::kScenario);
    REQUIRE(steps->log() == &ctx.sim->log());
    CHECK(steps->log()->request_ids.size() == 60);
    auto direct = RunScenarioSimulation(v.plan().scenario(), "direct");
    REQUIRE(direct.ok());
    CHECK(ctx.sim->num_steps() == direct.value()->num_steps());
    CHECK(ctx.sim->num_steps() > 0);
  }
  // Given a step log, the panel shows the file and runs nothing.
  {
    HeadlessImGui imgui;
    ViewerOptions o;
    o.step_log = std::string(KVSIM_SOURCE_DIR) + "/tests/viz/data/steps_sample.jsonl";
    o.panel = "steps";
    o.wait_for_runs = true;
    auto vr = Viewer::Create(o);
    REQUIRE(vr.ok());
    REQUIRE(imgui.Frame([&] { vr.value()->Frame(); }));
    auto* steps = dynamic_cast<StepsPanel*>(&vr.value()->panel(vr.value()->panel_index()));
    REQUIRE(steps);
    CHECK(steps->source() == StepsPanel::Source::kFile);
    CHECK_FALSE(vr.value()->context().sim);
    REQUIRE(steps->log());
    CHECK(steps->log()->steps.size() > 0);
  }
  // A P/D scenario is a cluster, not one engine: the panel keeps its empty state, no error.
  {
    HeadlessImGui imgui;
    ViewerOptions o;
    o.scenario_path = std::string(KVSIM_SOURCE_DIR) + "/scenarios/pd_nhd64_tp4_hnd16_tp2.yaml";
    o.panel = "steps";
    o.wait_for_runs = true;
    auto vr = Viewer::Create(o);
    REQUIRE(vr.ok());
    REQUIRE(imgui.Frame([&] { vr.value()->Frame(); }));
    auto* steps = dynamic_cast<StepsPanel*>(&vr.value()->panel(vr.value()->panel_index()));
    REQUIRE(steps);
    CHECK_FALSE(vr.value()->context().sim);
    CHECK(steps->error().empty());
    CHECK(steps->log() == nullptr);
  }
}

TEST_CASE("run_scenario (--run): the scenario through the engine; P/D and --step alone refused") {
  ViewerOptions o;
  o.overrides = {"workload.num_requests=40"};
  o.run_scenario = true;
  o.panel = "block_pool";
  auto vr = Viewer::Create(o);
  INFO((vr.ok() ? "" : vr.status().message()));
  REQUIRE(vr.ok());
  REQUIRE(vr.value()->context().sim);
  CHECK(vr.value()->context().sim->kind() == SimRun::Kind::kScenario);
  HeadlessImGui imgui;
  REQUIRE(imgui.Frame([&] { vr.value()->Frame(); }));

  ViewerOptions pd;
  pd.scenario_path = std::string(KVSIM_SOURCE_DIR) + "/scenarios/pd_nhd64_tp4_hnd16_tp2.yaml";
  pd.run_scenario = true;
  auto r = Viewer::Create(pd);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("P/D") != std::string::npos);
  ViewerOptions step_only;
  step_only.step = 3;
  CHECK_FALSE(Viewer::Create(step_only).ok());
}

}  // namespace
}  // namespace kvsim::viz
