// Findings of the newcomer audit (docs: shared reports/newcomer-audit.md) about scenario input:
// an error names the file, line and key and says what is allowed in words a user reads right;
// `kvsim list` describes each key by what it counts; a sweep axis can be set with --set.
#include <unistd.h>

#include <catch2/catch_test_macros.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "sim/config/config_tree.h"
#include "sim/engine.h"
#include "sim/instance_builder.h"
#include "sim/scenario/scenario_loader.h"
#include "sim/trace/request_trace.h"

namespace kvsim {
namespace {

namespace fs = std::filesystem;

// A scenario file over the built-in default, in a directory of its own.
class ScenarioFile {
 public:
  explicit ScenarioFile(const std::string& body) {
    static int counter = 0;
    dir_ = fs::temp_directory_path() /
           ("kvsim_audit_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(dir_);
    path_ = (dir_ / "s.yaml").string();
    std::ofstream(path_) << "model: {preset: qwen3.5-35b-a3b}\nparallel: {tp: 2}\n" << body;
  }
  ~ScenarioFile() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  fs::path dir_;
  std::string path_;
};

bool Contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

// (a)#23, (b)#17: "0 is out of range [0.000000, inf]" read as if 0 were allowed.
TEST_CASE("audit: rate_per_s 0 says it must be > 0, at the file and line", "[scenario]") {
  ScenarioFile f("workload:\n  rate_per_s: 0\n");
  auto sc = LoadScenario(LoadOptions{f.path(), {}});
  REQUIRE_FALSE(sc.ok());
  const std::string& m = sc.status().message();
  CHECK(Contains(m, f.path() + ":4: workload.rate_per_s: 0 is out of range: must be > 0"));
  CHECK_FALSE(Contains(m, "[0.000000"));
  // A range with both ends says both, as numbers a user writes.
  auto cv = LoadScenario(LoadOptions{"", {"workload.prompt_tokens.cv=200"}});
  REQUIRE_FALSE(cv.ok());
  CHECK(Contains(cv.status().message(), "200 is out of range: must be between 0 and 100"));
}

// (a)#23, (b)#8: "num_blocks must be below 2^30" with no file, line or key.
TEST_CASE("audit: a pool of 2^30 blocks names the file, line and key that sized it",
          "[scenario]") {
  ScenarioFile f("cache:\n  kv_memory_bytes: 100000TiB\n");
  auto sc = LoadScenario(LoadOptions{f.path(), {}});
  REQUIRE(sc.ok());
  auto plan = sc->Plan();
  REQUIRE(plan.ok());
  auto kv = EngineKvConfig(sc.value(), plan.value());
  REQUIRE_FALSE(kv.ok());
  CHECK(Contains(kv.status().message(), f.path() + ":4: cache.kv_memory_bytes: num_blocks must "
                                                   "be below 2^30"));
  // The engine of a sweep point says the same (it used to give the bare message).
  auto engine = Engine::Create(sc.value());
  REQUIRE_FALSE(engine.ok());
  CHECK(Contains(engine.status().message(), f.path() + ":4: cache.kv_memory_bytes:"));
  // num_gpu_blocks, when given, is the key that sized the pool.
  ScenarioFile g("cache:\n  kv_memory_bytes: 1GiB\n  num_gpu_blocks: 2000000000\n");
  auto sg = LoadScenario(LoadOptions{g.path(), {}});
  REQUIRE(sg.ok());
  auto kg = EngineKvConfig(sg.value(), sg->Plan().value());
  REQUIRE_FALSE(kg.ok());
  CHECK(Contains(kg.status().message(), g.path() + ":5: cache.num_gpu_blocks:"));
}

// (a)#14: `kvsim list` said "mean tokens" for the number of turns of a session.
TEST_CASE("audit: kvsim list describes multi_turn.turns.mean as turns", "[scenario]") {
  bool found = false;
  for (const KeyDoc& k : DescribeScenarioKeys()) {
    if (k.path == "workload.multi_turn.turns.mean") {
      found = true;
      CHECK(Contains(k.help, "turns"));
      CHECK_FALSE(Contains(k.help, "tokens"));
      CHECK(k.default_value == "4");  // as a user writes it, not "4.000000"
    }
    if (k.path == "workload.prompt_tokens.mean") CHECK(k.help == "mean tokens");
  }
  CHECK(found);
}

// (a)#14: `--set sweep.cache.block_size=[16]` failed with "sweep: cache: expected a non-empty
// list of values"; the keys of sweep: are dotted paths, so it sets that one axis.
TEST_CASE("audit: --set sweep.KEY.PATH sets one sweep axis", "[scenario]") {
  auto tree = LoadScenarioTree(LoadOptions{"", {"sweep.cache.block_size=[16, 64]"}});
  REQUIRE(tree.ok());
  const ConfigNode* sweep = tree->Find("sweep");
  REQUIRE(sweep != nullptr);
  const ConfigNode* axis = sweep->Find("cache.block_size");
  REQUIRE(axis != nullptr);
  CHECK(axis->seq.size() == 2);
  CHECK(sweep->Find("cache.attn_pack_size") != nullptr);  // the default's axis stays
  CHECK(sweep->Find("cache") == nullptr);
}

// (b)#7: 20 digits said "expected an integer" as if it were not one.
TEST_CASE("audit: an integer too large for 64 bits says so", "[scenario]") {
  auto sc = LoadScenario(LoadOptions{"", {"cache.block_size=99999999999999999999"}});
  REQUIRE_FALSE(sc.ok());
  CHECK(Contains(sc.status().message(),
                 "cache.block_size: 99999999999999999999 is out of range: too large for a "
                 "64-bit integer"));
  auto word = LoadScenario(LoadOptions{"", {"cache.block_size=sixteen"}});
  REQUIRE_FALSE(word.ok());
  CHECK(Contains(word.status().message(), "expected an integer"));
}

// (b)#27: a tab in the indentation gave "illegal map value" without naming the cause.
TEST_CASE("audit: a tab-indented line is named as the cause", "[scenario]") {
  auto r = ParseYaml("model:\n  preset: llama-3.1-8b\ncache:\n\tblock_size: 16\n", "tab.yaml");
  REQUIRE_FALSE(r.ok());
  CHECK(Contains(r.status().message(), "tab.yaml:4:"));
  CHECK(Contains(r.status().message(), "indented with a tab"));
}

// (b)#28: a directory as the scenario gave "a scenario needs a model".
TEST_CASE("audit: a directory is not a scenario file", "[scenario]") {
  const std::string dir = fs::temp_directory_path().string();
  auto sc = LoadScenario(LoadOptions{dir, {}});
  REQUIRE_FALSE(sc.ok());
  CHECK(Contains(sc.status().message(), dir + ": is a directory, not a scenario file"));
  CHECK_FALSE(Contains(sc.status().message(), "needs a model"));
}

// (b)#38: `cache.block_size: 32` inside a file: say that dotted paths are for --set/sweep:.
TEST_CASE("audit: a dotted key in a file says how to nest it", "[scenario]") {
  ScenarioFile f("cache.block_size: 32\n");
  auto sc = LoadScenario(LoadOptions{f.path(), {}});
  REQUIRE_FALSE(sc.ok());
  CHECK(Contains(sc.status().message(), f.path() + ":3: cache.block_size: unknown key"));
  CHECK(Contains(sc.status().message(), "nest it: cache: {block_size: ...}"));
}

// (a)#23, (b)#72: an Azure CSV given to replay said only "line 1: not valid JSON".
TEST_CASE("audit: an Azure CSV read as a JSONL trace says what it is", "[trace]") {
  auto t = RequestTrace::Parse("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                               "2023-11-16 18:17:03.9799600,100,10\n",
                               "azure.csv");
  REQUIRE_FALSE(t.ok());
  CHECK(Contains(t.status().message(), "azure.csv:1: not valid JSON"));
  CHECK(Contains(t.status().message(), "Azure CSV"));
}

// A number too large for a double ended the process (nlohmann throws out_of_range 406 even from
// its non-throwing parse); it is a line that is not valid JSON.
TEST_CASE("audit: a JSONL trace with an overflowing number is refused, naming its line", "[trace]") {
  auto t = RequestTrace::Parse("{\"timestamp\": 0, \"tokens\": [1, 2], \"output_length\": 1}\n"
                               "{\"timestamp\": 1e999, \"tokens\": [1, 2], \"output_length\": 1}\n",
                               "big.jsonl");
  REQUIRE_FALSE(t.ok());
  CHECK(Contains(t.status().message(), "big.jsonl:2: not valid JSON"));
}

}  // namespace
}  // namespace kvsim
