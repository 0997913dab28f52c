// The run layer: MetricSet's formatters (CSV field, JSON, text table), the row schema of
// sweeps that hold one or two kinds of simulation, and the kind of a point read from its
// tree agreeing with the parsed scenario's.
#include <catch2/catch_test_macros.hpp>
#include <string>

#include "sim/config/config_tree.h"
#include "sim/run/point.h"
#include "sim/run/run_report.h"
#include "sim/scenario/scenario_loader.h"

namespace kvsim {
namespace {

TEST_CASE("metric set: integers stay exact, reals get 6 significant digits") {
  MetricSet m;
  m.Add("bytes", "bytes", int64_t{90764738560});
  m.Add("rate", "fraction", 0.5);
  m.Add("big", "bytes", 1512745642.67);
  m.Add("count", "count", 3);  // an int literal is an integer metric
  REQUIRE(m.items().size() == 4);
  CHECK(CsvValue(m.items()[0]) == "90764738560");
  CHECK(CsvValue(m.items()[1]) == "0.5");
  CHECK(CsvValue(m.items()[2]) == "1.51275e+09");
  CHECK(m.items()[3].integer());
  CHECK(m.Number("count") == 3);
  CHECK(m.Number("absent", -1) == -1);
  CHECK(MetricSetJson(m) == R"({"bytes":90764738560,"rate":0.5,"big":1512745642.67,"count":3})");
}

TEST_CASE("metric set: the table aligns columns, scales reals, and says n/a and error") {
  TableLayout layout;
  layout.indent = 2;
  layout.gap = 2;
  layout.columns = {{"block", "b", 5, 0, 1, "", true}, {"hit", "h", 5, 1, 100, "%", false}};
  MetricSet a, none;
  a.Add("b", "tokens", 16);
  a.Add("h", "fraction", 0.1234);
  none.Add("b", "tokens", 272);
  none.Add("h", "fraction", 0.0);
  const std::string got = FormatTable(layout, {{"x=1", &a, "", true},
                                               {"x=22", &none, "", false},
                                               {"x=3", nullptr, "pack 3 is not allowed", true}});
  // By hand: label column 5 wide ("point"), block right-aligned in 5, hit in 5 + "%".
  const std::string want =
      "  point  block     hit\n"
      "  x=1       16   12.3%\n"
      "  x=22     272     n/a\n"
      "  x=3    error: pack 3 is not allowed\n";
  CHECK(got == want);
}

TEST_CASE("row schema: one kind's columns; two kinds add `kind` and the union") {
  const RowSchema engine = RowSchemaFor({&EngineKind(), nullptr, &EngineKind()});
  CHECK_FALSE(engine.with_kind);
  CHECK(engine.columns.size() == EngineKind().columns.size());
  const RowSchema mixed = RowSchemaFor({&EngineKind(), &ClusterKind()});
  CHECK(mixed.with_kind);
  // 28 engine columns + 32 cluster columns, 12 of them shared (finished, rejected,
  // makespan_s, ttft_mean/p90/p99_ms, tpot_mean_ms, e2e_mean_ms, output_tok_per_s, and the
  // queue-growth three: overloaded, queue_wait_q1_s, queue_wait_q4_s) and written once.
  CHECK(EngineKind().columns.size() == 28);
  CHECK(ClusterKind().columns.size() == 32);
  CHECK(mixed.columns.size() == 28 + 32 - 12);
  CHECK(mixed.width() == 49);
  CHECK(mixed.columns.front() == "attn_block_size");  // the first kind's order first
  CHECK(mixed.columns.back() == "decode_preemptions");
  // A row fills its own metrics and leaves the other kind's empty.
  PointResult r;
  r.kind = &ClusterKind();
  r.metrics.Add("finished", "requests", 7);
  const std::vector<std::string> f = RowFields(r, mixed);
  REQUIRE(f.size() == 49);
  CHECK(f[0] == "pd");
  CHECK(f[1].empty());  // attn_block_size: an engine metric
  size_t finished = 0;
  while (mixed.columns[finished] != "finished") ++finished;
  CHECK(f[1 + finished] == "7");
}

TEST_CASE("kind of a point: read from the tree, as the parsed scenario says") {
  const char* engine = R"(
name: e
model: {preset: llama-3.1-8b}
cache: {block_size: 16, num_gpu_blocks: 2000}
)";
  const std::string cluster = std::string(engine) + R"(cluster:
  prefill: {count: 1}
  decode: {count: 1}
)";
  for (const std::string& yaml :
       {std::string(engine), cluster, std::string(engine) + "cluster: null\n"}) {
    auto tree = ParseYaml(yaml, "k.yaml");
    REQUIRE(tree.ok());
    auto sc = ParseScenario(tree.value(), "k.yaml");
    INFO(yaml);
    REQUIRE(sc.ok());
    CHECK(KindOfPoint(tree.value()) == &KindOf(sc.value()));
  }
  auto tree = ParseYaml(cluster, "k.yaml");
  REQUIRE(tree.ok());
  CHECK(KindOfPoint(tree.value()) == &ClusterKind());
}

TEST_CASE("run report: every point failed is one error; a failed point is a row and exit 1") {
  PointResult ok, bad;
  ok.index = 0;
  ok.labels = {{"x", "1"}};
  ok.kind = &EngineKind();
  for (const MetricInfo& c : EngineKind().columns) ok.metrics.Add(c.name, c.unit, 1.0);
  ok.report = "header\n";
  bad.index = 1;
  bad.labels = {{"x", "2"}};
  bad.kind = &EngineKind();
  bad.status = Status::Error("bad", "no such pack");
  const RunReport both = FormatRun({&ok, &bad}, {"s", true, false, ""});
  CHECK(both.error.ok());
  CHECK(both.exit_code == 1);
  CHECK(both.out.rfind("header\n\n  point", 0) == 0);
  CHECK(both.out.find("  x=2    error: no such pack\n") != std::string::npos);
  CHECK(both.out.find("1 of 2 points failed") != std::string::npos);
  const RunReport none = FormatRun({&bad}, {"s", false, false, ""});
  CHECK(none.error.code() == "bad");
}

// Newcomer audit (a)#27: a P/D sweep's table had no header (an engine sweep's has the
// scenario's name, description and workload above it), was about 170 columns wide and had
// no prefix-hit columns.
TEST_CASE("run report: a P/D sweep's table is headed by the scenario and its workload") {
  std::vector<PointResult> pts(2);
  for (size_t i = 0; i < pts.size(); ++i) {
    pts[i].index = static_cast<int64_t>(i);
    pts[i].labels = {{"cluster.prefill.count", std::to_string(i + 1)}};
    pts[i].kind = &ClusterKind();
    for (const MetricInfo& c : ClusterKind().columns) pts[i].metrics.Add(c.name, c.unit, 1.0);
    pts[i].report = "P/D cluster: setup of point " + std::to_string(i) + "\n";
    pts[i].workload = "shared_prefix: 20 requests";
  }
  RunReportOptions o{"pd", true, false, ""};
  o.title = "kvsim run: pd — a P/D study";
  const RunReport r = FormatRun({&pts[0], &pts[1]}, o);
  CHECK(r.out.rfind("kvsim run: pd — a P/D study\n  workload shared_prefix: 20 requests\n\n", 0) ==
        0);
  // Rows are labelled without the cluster. prefix (the table stays narrow), and the pools'
  // hit rates are columns (1.0 → 100.0 %).
  CHECK(r.out.find("\nprefill.count=2 ") != std::string::npos);
  CHECK(r.out.find("cluster.prefill.count") == std::string::npos);
  CHECK(r.out.find("P hit %  D hit %") != std::string::npos);
  CHECK(r.out.find("   100.0    100.0\n") != std::string::npos);
}

}  // namespace
}  // namespace kvsim
