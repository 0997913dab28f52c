// Sweeps: expansion order, zip groups, shards that partition the points, resume after a
// torn journal, merge of shard files; P/D cluster sweeps (cluster columns, -j independence,
// failed points counted).
#include "sim/sweep/sweep_runner.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <catch2/catch_test_macros.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "sim/config/config_reader.h"

namespace kvsim {
namespace {

namespace fs = std::filesystem;

ConfigNode Tree(const std::string& yaml) {
  auto t = ParseYaml(yaml, "sweep.yaml");
  REQUIRE(t.ok());
  return t.value();
}

std::string Slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const char* kSmall = R"(
name: small
seed: 1
model: {preset: llama-3.1-8b}
cache: {block_size: 16, num_gpu_blocks: 2000}
workload:
  kind: shared_prefix
  num_requests: 30
  rate_per_s: 20
  system_prompt: {tokens: 200}
  prompt_tokens: {dist: fixed, mean: 50}
  output_tokens: {dist: fixed, mean: 20}
sweep:
  cache.block_size: [16, 32, 64]
  zip:
    - {workload.rate_per_s: [10, 40], seed: [1, 2]}
)";

TEST_CASE("sweep: cartesian product in file order, last axis fastest, zip advances together") {
  auto pts = ExpandSweep(Tree(kSmall));
  REQUIRE(pts.ok());
  REQUIRE(pts->size() == 6);
  CHECK(pts.value()[0].Label() == "cache.block_size=16 workload.rate_per_s=10 seed=1");
  CHECK(pts.value()[1].Label() == "cache.block_size=16 workload.rate_per_s=40 seed=2");
  CHECK(pts.value()[5].Label() == "cache.block_size=64 workload.rate_per_s=40 seed=2");
  const ConfigNode& t = pts.value()[3].tree;
  CHECK(t.Find("sweep") == nullptr);
  CHECK(t.Find("cache")->Find("block_size")->scalar == "32");
  CHECK(t.Find("seed")->scalar == "2");
  auto keys = SweepKeys(Tree(kSmall));
  CHECK(keys.value() == std::vector<std::string>{"cache.block_size", "workload.rate_per_s", "seed"});
}

TEST_CASE("sweep: zip lists of different lengths are an error naming the line") {
  auto pts = ExpandSweep(Tree("sweep:\n  zip:\n    - {a: [1, 2], b: [1]}\n"));
  REQUIRE_FALSE(pts.ok());
  CHECK(pts.status().message().find("sweep.yaml:3") != std::string::npos);
  CHECK(pts.status().message().find("equal lengths") != std::string::npos);
  CHECK_FALSE(ExpandSweep(Tree("sweep:\n  a: 3\n")).ok());
}

TEST_CASE("sweep: shards partition the points and merge back to the unsharded CSV") {
  const fs::path dir = fs::temp_directory_path() / "kvsim_sweep_test_shards";
  fs::remove_all(dir);
  const ConfigNode tree = Tree(kSmall);
  std::ostringstream log;
  SweepOptions full;
  full.out_dir = (dir / "full").string();
  full.jobs = 2;
  REQUIRE(RunSweep(tree, "sweep.yaml", full, log).ok());
  std::vector<std::string> shards;
  for (int k = 0; k < 3; ++k) {
    SweepOptions o;
    o.out_dir = (dir / "shards").string();
    o.shard_k = k;
    o.shard_n = 3;
    REQUIRE(RunSweep(tree, "sweep.yaml", o, log).ok());
    shards.push_back(SweepCsvPath(o));
  }
  // Each shard holds exactly its points.
  std::set<std::string> seen;
  for (const auto& s : shards) {
    std::istringstream in(Slurp(s));
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) CHECK(seen.insert(line.substr(0, line.find(','))).second);
  }
  CHECK(seen.size() == 6);
  const std::string merged = (dir / "merged.csv").string();
  REQUIRE(MergeSweepCsvs(shards, merged, log).ok());
  CHECK(Slurp(merged) == Slurp(SweepCsvPath(full)));
  fs::remove_all(dir);
}

TEST_CASE("sweep: a journal with a torn last line resumes to the same CSV") {
  const fs::path dir = fs::temp_directory_path() / "kvsim_sweep_test_resume";
  fs::remove_all(dir);
  const ConfigNode tree = Tree(kSmall);
  std::ostringstream log;
  SweepOptions o;
  o.out_dir = (dir / "a").string();
  REQUIRE(RunSweep(tree, "sweep.yaml", o, log).ok());
  const std::string want = Slurp(SweepCsvPath(o));
  CHECK_FALSE(fs::exists(SweepCsvPath(o) + ".journal"));

  // An interrupted run: two points journaled, then half a row written when it died.
  SweepOptions r;
  r.out_dir = (dir / "b").string();
  r.max_points = 2;
  REQUIRE(RunSweep(tree, "sweep.yaml", r, log).ok());
  const std::string journal = SweepCsvPath(r) + ".journal";
  REQUIRE(fs::exists(journal));
  CHECK_FALSE(fs::exists(SweepCsvPath(r)));
  std::ofstream(journal, std::ios::app) << "2,32,10,1,ok,32,19";  // torn: no newline
  r.max_points = 0;
  REQUIRE(RunSweep(tree, "sweep.yaml", r, log).ok());
  CHECK(log.str().find("resuming, 2 of 6") != std::string::npos);
  CHECK(Slurp(SweepCsvPath(r)) == want);

  // A journal from another scenario is refused.
  SweepOptions x;
  x.out_dir = (dir / "c").string();
  x.max_points = 1;
  REQUIRE(RunSweep(tree, "sweep.yaml", x, log).ok());
  ConfigNode other = tree;
  REQUIRE(ApplyOverride(other, "seed=99").ok());
  x.max_points = 0;
  const Status s = RunSweep(other, "sweep.yaml", x, log);
  CHECK(s.code() == "journal_mismatch");
  fs::remove_all(dir);
}

TEST_CASE("sweep: -j 1 and -j 3 write the same bytes") {
  const fs::path dir = fs::temp_directory_path() / "kvsim_sweep_test_jobs";
  fs::remove_all(dir);
  std::ostringstream log;
  SweepOptions a, b;
  a.out_dir = (dir / "j1").string();
  b.out_dir = (dir / "j3").string();
  b.jobs = 3;
  REQUIRE(RunSweep(Tree(kSmall), "sweep.yaml", a, log).ok());
  REQUIRE(RunSweep(Tree(kSmall), "sweep.yaml", b, log).ok());
  CHECK(Slurp(SweepCsvPath(a)) == Slurp(SweepCsvPath(b)));
  fs::remove_all(dir);
}

TEST_CASE("sweep: a point with an invalid configuration becomes an error row") {
  const fs::path dir = fs::temp_directory_path() / "kvsim_sweep_test_err";
  fs::remove_all(dir);
  std::ostringstream log;
  SweepOptions o;
  o.out_dir = dir.string();
  ConfigNode t = Tree(kSmall);
  REQUIRE(ApplyOverride(t, "sweep={cache.attn_pack_size: [1, 2]}").ok());
  REQUIRE(RunSweep(t, "sweep.yaml", o, log).ok());
  const std::string csv = Slurp(SweepCsvPath(o));
  CHECK(csv.find("\n0,1,ok,") != std::string::npos);
  CHECK(csv.find("\n1,2,error: ") != std::string::npos);  // packs need a hybrid model
  fs::remove_all(dir);
}

TEST_CASE("sweep: failed points are counted in the tally, resumed rows included") {
  const fs::path dir = fs::temp_directory_path() / "kvsim_sweep_test_tally";
  fs::remove_all(dir);
  std::ostringstream log;
  SweepOptions o;
  o.out_dir = dir.string();
  ConfigNode t = Tree(kSmall);
  REQUIRE(ApplyOverride(t, "sweep={cache.attn_pack_size: [1, 2, 1, 4]}").ok());
  o.max_points = 2;  // stop half way: the journal keeps points 0 and 1
  SweepTally part;
  REQUIRE(RunSweep(t, "sweep.yaml", o, log, &part).ok());
  CHECK_FALSE(part.complete);
  CHECK(part.failed == std::vector<int64_t>{1});
  o.max_points = 0;
  SweepTally tally;
  REQUIRE(RunSweep(t, "sweep.yaml", o, log, &tally).ok());
  CHECK(tally.complete);
  CHECK(tally.kinds == std::vector<std::string>{"engine"});
  CHECK(tally.points == 4);
  CHECK(tally.failed == std::vector<int64_t>{1, 3});  // 1 from the journal, 3 from this run
  CHECK(log.str().find("2 FAILED (points 1 3;") != std::string::npos);
  fs::remove_all(dir);
}

// A small P/D cluster (prefill NHD/64 → decode HND/16) swept over the pool ratio.
const char* kCluster = R"(
name: pd_sweep_test
seed: 3
model:
  name: toy
  max_model_len: 8192
  layers:
    - {type: full_attention, count: 8, num_kv_heads: 8, head_size: 128}
  compute: {hidden_size: 4096, num_attention_heads: 32, num_params: 2000000000,
            num_active_params: 2000000000, vocab_size: 32000}
cache: {num_gpu_blocks: 4000}
scheduler: {max_num_batched_tokens: 2048, max_num_seqs: 64}
workload:
  kind: shared_prefix
  num_requests: 40
  rate_per_s: 40
  prompt_tokens: {dist: uniform, mean: 600, min: 200, max: 1000}
  output_tokens: {dist: fixed, mean: 6}
  system_prompt: {tokens: 256, count: 2}
cluster:
  prefill: {count: 1, cache: {block_size: 64, layout: NHD, enable_prefix_caching: false}}
  decode: {count: 1, cache: {block_size: 16, layout: HND}}
  transfer: {save_side_postprocess: true}
sweep:
  cluster.prefill.count: [1, 2]
  cluster.decode.count: [1, 2]
)";

TEST_CASE("sweep: P/D cluster points run the cluster simulation, one row of cluster metrics each") {
  const fs::path dir = fs::temp_directory_path() / "kvsim_sweep_test_cluster";
  fs::remove_all(dir);
  std::ostringstream log;
  SweepOptions a, b;
  a.out_dir = (dir / "j1").string();
  b.out_dir = (dir / "j2").string();
  b.jobs = 2;
  SweepTally ta, tb;
  REQUIRE(RunSweep(Tree(kCluster), "sweep.yaml", a, log, &ta).ok());
  REQUIRE(RunSweep(Tree(kCluster), "sweep.yaml", b, log, &tb).ok());
  CHECK(ta.kinds == std::vector<std::string>{"pd"});
  CHECK(ta.points == 4);
  CHECK(ta.failed.empty());
  const std::string csv = Slurp(SweepCsvPath(a));
  CHECK(csv == Slurp(SweepCsvPath(b)));
  const RowSchema schema = RowSchemaFor({&ClusterKind()});
  CHECK(csv.rfind(SweepCsvHeader({"cluster.prefill.count", "cluster.decode.count"}, schema) + "\n",
                  0) == 0);
  CHECK(csv.find("\n0,1,1,ok,40,0,0,") != std::string::npos);  // all 40 requests finished
  CHECK(csv.find("\n3,2,2,ok,40,0,0,") != std::string::npos);
  // The row equals what RunPoint reports for the same point (the `kvsim run` path).
  auto pts = ExpandSweep(Tree(kCluster));
  REQUIRE(pts.ok());
  const SweepPoint& p = pts.value()[2];
  PointResult r = RunPoint(p.index, p.labels, p.tree, "sweep.yaml", {});
  REQUIRE(r.status.ok());
  CHECK(r.kind == &ClusterKind());
  CHECK(r.metrics.Number("finished") == 40);
  CHECK(r.metrics.Number("transferred_requests") == 40);
  CHECK(csv.find("\n" + SweepCsvRow(r, schema, IdentifySweep(Tree(kCluster), 4)) + "\n") !=
        std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("sweep: a P/D point whose setup is invalid is an error row with the cluster columns") {
  const fs::path dir = fs::temp_directory_path() / "kvsim_sweep_test_cluster_err";
  fs::remove_all(dir);
  std::ostringstream log;
  SweepOptions o;
  o.out_dir = dir.string();
  ConfigNode t = Tree(kCluster);
  REQUIRE(ApplyOverride(t, "sweep={cluster.topology.nic_gbytes_per_s: [50, -1]}").ok());
  SweepTally tally;
  REQUIRE(RunSweep(t, "sweep.yaml", o, log, &tally).ok());
  CHECK(tally.failed == std::vector<int64_t>{1});
  const std::string csv = Slurp(SweepCsvPath(o));
  // The status field is quoted only where the message holds a comma or a quote.
  size_t row = csv.find("\n1,-1,\"error: ");
  if (row == std::string::npos) row = csv.find("\n1,-1,error: ");
  REQUIRE(row != std::string::npos);
  // Same number of fields as the header: the label, the status and an empty field per metric.
  std::string line = csv.substr(row + 1, csv.find('\n', row + 1) - row - 1);
  // The sweep's identity closes every row, error rows included.
  const std::string identity = "," + IdentifySweep(t, 2).id + ",2";
  REQUIRE(line.size() > identity.size());
  CHECK(line.substr(line.size() - identity.size()) == identity);
  line.resize(line.size() - identity.size());
  const size_t ncols = ClusterKind().columns.size();
  CHECK(line.size() > ncols);
  CHECK(line.substr(line.size() - ncols) == std::string(ncols, ','));
  fs::remove_all(dir);
}

// The fields of one CSV line (RFC 4180 quotes: a P/D label holds commas).
std::vector<std::string> Fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      out.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST_CASE("sweep: an axis that switches colocated <-> P/D gives one CSV with both kinds") {
  const fs::path dir = fs::temp_directory_path() / "kvsim_sweep_test_mixed";
  fs::remove_all(dir);
  std::ostringstream log;
  ConfigNode t = Tree(kCluster);
  // null removes the base scenario's `cluster:` (a single engine); the map is a P/D cluster.
  REQUIRE(ApplyOverride(t,
                        "sweep={cluster: [null, {prefill: {count: 1, cache: {block_size: 64, "
                        "layout: NHD, enable_prefix_caching: false}}, decode: {count: 1, cache: "
                        "{block_size: 16, layout: HND}}, transfer: {save_side_postprocess: "
                        "true}}], seed: [3, 4]}")
              .ok());
  SweepOptions full;
  full.out_dir = (dir / "full").string();
  SweepTally tally;
  REQUIRE(RunSweep(t, "sweep.yaml", full, log, &tally).ok());
  CHECK(tally.kinds == std::vector<std::string>{"engine", "pd"});
  CHECK(tally.points == 4);
  CHECK(tally.failed.empty());
  const std::string csv = Slurp(SweepCsvPath(full));
  const std::vector<std::string> lines = Lines(csv);
  REQUIRE(lines.size() == 5);
  const std::vector<std::string> header = Fields(lines[0]);
  auto col = [&](const std::string& name) {
    const auto it = std::find(header.begin(), header.end(), name);
    REQUIRE(it != header.end());
    CHECK(std::count(header.begin(), header.end(), name) == 1);  // shared columns once
    return static_cast<size_t>(it - header.begin());
  };
  // point, the two sweep keys, status, then the kind.
  CHECK(col("status") == 3);
  CHECK(col("kind") == 4);
  const size_t block = col("attn_block_size"), transfer = col("transfer_mean_ms");
  const size_t finished = col("finished"), moved = col("transferred_requests");
  CHECK(col("sweep_points") == header.size() - 1);
  for (int p = 0; p < 4; ++p) {
    const std::vector<std::string> f = Fields(lines[static_cast<size_t>(p) + 1]);
    INFO("point " << p << ": " << lines[static_cast<size_t>(p) + 1]);
    REQUIRE(f.size() == header.size());
    CHECK(f[0] == std::to_string(p));
    CHECK(f[3] == "ok");
    CHECK(f[finished] == "40");  // every request of the workload, either way
    // The cluster axis is the first, so it varies slowest: points 0 and 1 are cluster=null.
    if (p < 2) {
      CHECK(f[1] == "null");
      CHECK(f[4] == "engine");
      CHECK(f[block] == "16");
      CHECK(f[transfer].empty());
      CHECK(f[moved].empty());
    } else {
      CHECK(f[1].rfind("{prefill: ", 0) == 0);
      CHECK(f[4] == "pd");
      CHECK(f[block].empty());
      CHECK(std::stod(f[transfer]) > 0);
      CHECK(f[moved] == "40");  // each prompt's KV crossed the network once
    }
  }
  // Resumed twice from the journal (stopped after 1, then after 2 more points): the same CSV.
  SweepOptions part;
  part.out_dir = (dir / "part").string();
  part.jobs = 2;
  SweepTally t1, t2, t3;
  part.max_points = 1;
  REQUIRE(RunSweep(t, "sweep.yaml", part, log, &t1).ok());
  CHECK_FALSE(t1.complete);
  part.max_points = 2;
  REQUIRE(RunSweep(t, "sweep.yaml", part, log, &t2).ok());
  CHECK_FALSE(t2.complete);
  part.max_points = 0;
  REQUIRE(RunSweep(t, "sweep.yaml", part, log, &t3).ok());
  CHECK(t3.complete);
  CHECK(Slurp(SweepCsvPath(part)) == csv);
  // Shards mix kinds too (0/2 holds points 0 and 2) and still merge to the same CSV.
  std::vector<std::string> shards;
  for (int k = 0; k < 2; ++k) {
    SweepOptions o;
    o.out_dir = (dir / "sh").string();
    o.shard_k = k;
    o.shard_n = 2;
    REQUIRE(RunSweep(t, "sweep.yaml", o, log).ok());
    shards.push_back(SweepCsvPath(o));
  }
  const std::string merged = (dir / "merged.csv").string();
  REQUIRE(MergeSweepCsvs(shards, merged, log).ok());
  CHECK(Slurp(merged) == csv);
  fs::remove_all(dir);
}

TEST_CASE("sweep: --shard slurm maps 0-based, 1-based and stepped job arrays to K/N") {
  auto env = [](std::map<std::string, std::string> vars) {
    return [vars](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  };
  int k = -1, n = -1;
  REQUIRE(ParseShard("1/3", env({}), &k, &n).ok());
  CHECK((k == 1 && n == 3));
  CHECK_FALSE(ParseShard("3/3", env({}), &k, &n).ok());
  CHECK_FALSE(ParseShard("1/3x", env({}), &k, &n).ok());
  // --array=0-3: task 2 is shard 2 of 4.
  auto zero = std::map<std::string, std::string>{{"SLURM_ARRAY_TASK_ID", "2"},
                                                 {"SLURM_ARRAY_TASK_MIN", "0"},
                                                 {"SLURM_ARRAY_TASK_MAX", "3"},
                                                 {"SLURM_ARRAY_TASK_COUNT", "4"}};
  REQUIRE(ParseShard("slurm", env(zero), &k, &n).ok());
  CHECK((k == 2 && n == 4));
  // --array=1-4: task 1 is shard 0, task 4 is shard 3.
  auto one = std::map<std::string, std::string>{{"SLURM_ARRAY_TASK_ID", "1"},
                                                {"SLURM_ARRAY_TASK_MIN", "1"},
                                                {"SLURM_ARRAY_TASK_MAX", "4"},
                                                {"SLURM_ARRAY_TASK_COUNT", "4"}};
  REQUIRE(ParseShard("slurm", env(one), &k, &n).ok());
  CHECK((k == 0 && n == 4));
  one["SLURM_ARRAY_TASK_ID"] = "4";
  REQUIRE(ParseShard("slurm", env(one), &k, &n).ok());
  CHECK((k == 3 && n == 4));
  // --array=10-16:2 has tasks 10, 12, 14, 16: task 14 is shard 2 of 4.
  auto step = std::map<std::string, std::string>{{"SLURM_ARRAY_TASK_ID", "14"},
                                                 {"SLURM_ARRAY_TASK_MIN", "10"},
                                                 {"SLURM_ARRAY_TASK_MAX", "16"},
                                                 {"SLURM_ARRAY_TASK_STEP", "2"},
                                                 {"SLURM_ARRAY_TASK_COUNT", "4"}};
  REQUIRE(ParseShard("slurm", env(step), &k, &n).ok());
  CHECK((k == 2 && n == 4));
  // --array=0,3,7 (a list: 3 tasks over 0..7) cannot number its shards without gaps.
  auto list = std::map<std::string, std::string>{{"SLURM_ARRAY_TASK_ID", "3"},
                                                 {"SLURM_ARRAY_TASK_MIN", "0"},
                                                 {"SLURM_ARRAY_TASK_MAX", "7"},
                                                 {"SLURM_ARRAY_TASK_COUNT", "3"}};
  CHECK(ParseShard("slurm", env(list), &k, &n).code() == "bad_shard");
  // Outside a job array.
  CHECK(ParseShard("slurm", env({}), &k, &n).code() == "bad_shard");
}

TEST_CASE("sweep: a rerun of one Slurm array task runs its own shard, given N") {
  auto env = [](std::map<std::string, std::string> vars) {
    return [vars](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  };
  int k = -1, n = -1;
  // `sbatch --array=2` reruns task 2 of a 4-shard sweep: Slurm describes an array of one task
  // (MIN = MAX = 2, COUNT 1). From the array alone that reads as shard 0 of 1, the whole sweep.
  auto rerun = std::map<std::string, std::string>{{"SLURM_ARRAY_TASK_ID", "2"},
                                                  {"SLURM_ARRAY_TASK_MIN", "2"},
                                                  {"SLURM_ARRAY_TASK_MAX", "2"},
                                                  {"SLURM_ARRAY_TASK_COUNT", "1"}};
  REQUIRE(ParseShard("slurm/4", env(rerun), &k, &n).ok());
  CHECK((k == 2 && n == 4));
  rerun["KVSIM_SHARDS"] = "4";  // as submit.sh exports it
  REQUIRE(ParseShard("slurm", env(rerun), &k, &n).ok());
  CHECK((k == 2 && n == 4));
  // A 1-based array of 4 with N given: tasks 1..4 are shards 1, 2, 3, 0 (each once), and
  // rerunning task 4 reruns shard 0.
  std::set<int> seen;
  for (int id = 1; id <= 4; ++id) {
    REQUIRE(ParseShard("slurm/4", env({{"SLURM_ARRAY_TASK_ID", std::to_string(id)}}), &k, &n)
                .ok());
    CHECK(n == 4);
    seen.insert(k);
  }
  CHECK(seen == std::set<int>{0, 1, 2, 3});
  // Bad N, and no task id.
  CHECK(ParseShard("slurm/0", env(rerun), &k, &n).code() == "bad_shard");
  CHECK(ParseShard("slurm/x", env(rerun), &k, &n).code() == "bad_shard");
  CHECK(ParseShard("slurm/4", env({}), &k, &n).code() == "bad_shard");
  CHECK(ParseShard("slurm", env({{"SLURM_ARRAY_TASK_ID", "1"}, {"KVSIM_SHARDS", "two"}}), &k,
                   &n)
            .code() == "bad_shard");
}

TEST_CASE("sweep: merge is strict about foreign shards and missing points") {
  const fs::path dir = fs::temp_directory_path() / "kvsim_sweep_test_strict_merge";
  fs::remove_all(dir);
  std::ostringstream log;
  const ConfigNode tree = Tree(kSmall);
  ConfigNode other = tree;
  REQUIRE(ApplyOverride(other, "seed=7").ok());
  std::vector<std::string> shards;
  for (int k = 0; k < 3; ++k) {
    SweepOptions o;
    o.out_dir = (dir / (k == 1 ? "other" : "mine")).string();
    o.shard_k = k;
    o.shard_n = 3;
    // Shard 1 comes from another experiment (a different seed): same columns, other sweep.
    REQUIRE(RunSweep(k == 1 ? other : tree, "sweep.yaml", o, log).ok());
    shards.push_back(SweepCsvPath(o));
  }
  const std::string merged = (dir / "merged.csv").string();
  const Status foreign = MergeSweepCsvs(shards, merged, log);
  CHECK(foreign.code() == "foreign_shard");
  CHECK(foreign.message().find("shard-1-of-3") != std::string::npos);
  CHECK_FALSE(fs::exists(merged));
  // Shards 0 and 2 of 6 points: points 1 and 4 (index % 3 == 1) are missing.
  const std::vector<std::string> two = {shards[0], shards[2]};
  const Status missing = MergeSweepCsvs(two, merged, log);
  CHECK(missing.code() == "missing_points");
  CHECK(missing.message().find("2 of 6 point(s) missing: 1 4") != std::string::npos);
  CHECK_FALSE(fs::exists(merged));
  REQUIRE(MergeSweepCsvs(two, merged, log, /*allow_missing=*/true).ok());
  const std::string text = Slurp(merged);
  CHECK(std::count(text.begin(), text.end(), '\n') == 5);  // the header and 4 rows
  fs::remove_all(dir);
}

TEST_CASE("sweep: a rerun of a finished shard runs nothing; another sweep's CSV is refused") {
  const fs::path dir = fs::temp_directory_path() / "kvsim_sweep_test_rerun";
  fs::remove_all(dir);
  const ConfigNode tree = Tree(kSmall);
  SweepOptions o;
  o.out_dir = dir.string();
  o.shard_k = 1;
  o.shard_n = 3;
  std::ostringstream first;
  REQUIRE(RunSweep(tree, "sweep.yaml", o, first).ok());
  const std::string csv = Slurp(SweepCsvPath(o));
  std::ostringstream again;
  REQUIRE(RunSweep(tree, "sweep.yaml", o, again).ok());
  CHECK(again.str().find("2 of 2 points already in") != std::string::npos);
  CHECK(again.str().find("done (") == std::string::npos);  // no point ran
  CHECK(Slurp(SweepCsvPath(o)) == csv);
  // The same directory and shard for another experiment: refused, unless --force.
  ConfigNode other = tree;
  REQUIRE(ApplyOverride(other, "seed=7").ok());
  std::ostringstream log;
  CHECK(RunSweep(other, "sweep.yaml", o, log).code() == "sweep_exists");
  CHECK(Slurp(SweepCsvPath(o)) == csv);
  o.force = true;
  REQUIRE(RunSweep(other, "sweep.yaml", o, log).ok());
  CHECK(Slurp(SweepCsvPath(o)) != csv);
  fs::remove_all(dir);
}

TEST_CASE("sweep: a shard that another process is running is refused (lock file)") {
  const fs::path dir = fs::temp_directory_path() / "kvsim_sweep_test_lock";
  fs::remove_all(dir);
  fs::create_directories(dir);
  SweepOptions o;
  o.out_dir = dir.string();
  const std::string lock = SweepCsvPath(o) + ".lock";
  const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);  // "another process" holds the shard
  std::ostringstream log;
  CHECK(RunSweep(Tree(kSmall), "sweep.yaml", o, log).code() == "shard_busy");
  ::close(fd);
  CHECK(RunSweep(Tree(kSmall), "sweep.yaml", o, log).ok());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kvsim

namespace kvsim {
namespace {

// Issue 12 §3: sweep values written with a unit get a numeric column beside them. Bytes by
// hand: 16 GiB = 16 · 2^30 = 17179869184, 1.5 TB = 1.5e12.
TEST_CASE("sweep CSV: an axis written with byte units gets a numeric .value column") {
  CHECK(ParseByteCount("16GiB") == int64_t{17179869184});
  CHECK(ParseByteCount("1.5 TB") == int64_t{1500000000000});
  CHECK(ParseByteCount("4096") == int64_t{4096});
  CHECK_FALSE(ParseByteCount("16 GiBs").has_value());
  CHECK_FALSE(ParseByteCount("-1GiB").has_value());

  auto tree = ParseYaml(
      "sweep:\n  cache.kv_memory_bytes: [16GiB, 1.5 TB]\n  cache.block_size: [16]\n",
      "s.yaml");
  REQUIRE(tree.ok());
  auto pts = ExpandSweep(tree.value());
  REQUIRE(pts.ok());
  const RowSchema schema = SweepRowSchema(pts.value());
  REQUIRE(schema.valued_labels == std::vector<size_t>{0});  // block sizes are plain numbers
  const std::string header =
      SweepCsvHeader({"cache.kv_memory_bytes", "cache.block_size"}, schema);
  CHECK(header.rfind("point,cache.kv_memory_bytes,cache.block_size,cache.kv_memory_bytes.value,"
                     "status,",
                     0) == 0);
  PointResult r;
  r.index = 1;
  r.labels = pts->at(1).labels;
  r.status = Status::Error("x", "not run");
  const std::string row = SweepCsvRow(r, schema, SweepIdentity{"id", 2});
  CHECK(row.rfind("1,1.5 TB,16,1500000000000,error: not run,", 0) == 0);
}

}  // namespace
}  // namespace kvsim
