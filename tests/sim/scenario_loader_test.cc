// The scenario loader on good and bad input. Every error class of issue 2 has a test that
// asserts the message names the file, the 1-based line and the key path, so a newcomer can
// go straight to the mistake.
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <unistd.h>

#include "core/kv_cache_manager.h"
#include "sim/scenario/scenario_loader.h"

namespace kvsim {
namespace {

namespace fs = std::filesystem;

// A fresh temporary directory per test case, removed afterwards.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    dir_ = fs::temp_directory_path() /
           ("kvsim_loader_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(dir_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // Writes `text` to `name` and returns its path.
  std::string Write(const std::string& name, const std::string& text) const {
    const fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  fs::path dir_;
};

Result<Scenario> Load(const std::string& path, std::vector<std::string> sets = {}) {
  return LoadScenario(LoadOptions{path, std::move(sets)});
}

// Loads and plans: the error a user sees from `kvsim layout`.
Status LoadAndPlan(const std::string& path, std::vector<std::string> sets = {}) {
  auto sc = Load(path, std::move(sets));
  if (!sc.ok()) return sc.status();
  auto plan = sc->Plan();
  return plan.ok() ? Status::Ok() : plan.status();
}

// The message contains every fragment.
void ExpectError(const Status& s, const std::string& code,
                 std::initializer_list<std::string> fragments) {
  INFO(s.ToString());
  REQUIRE_FALSE(s.ok());
  CHECK(s.code() == code);
  for (const auto& f : fragments) {
    INFO("fragment: " << f);
    CHECK(s.message().find(f) != std::string::npos);
  }
}

constexpr const char* kGood = R"(name: good
model:
  preset: llama-3.1-8b
parallel:
  tp: 2
cache:
  kv_memory_bytes: 8GiB
  block_size: 32
)";

TEST_CASE("a good scenario parses into typed structs") {
  TempDir d;
  auto sc = Load(d.Write("good.yaml", kGood));
  INFO(sc.status().ToString());
  REQUIRE(sc.ok());
  CHECK(sc->name == "good");
  CHECK(sc->model_preset == "llama-3.1-8b");
  CHECK(sc->model.num_layers() == 32);
  CHECK(sc->cache.tp == 2);
  CHECK(sc->cache.block_size == 32);
  CHECK(sc->cache.kv_memory_bytes == 8LL << 30);
  auto plan = sc->Plan();
  REQUIRE(plan.ok());
  CHECK(plan->attn_block_size == 32);
  // 32 layers × 32 tokens × 4 heads × 256 B × 2 B per block.
  CHECK(plan->num_blocks == (8LL << 30) / (32 * 32 * 4 * 512));
}

TEST_CASE("malformed YAML names the file, line and column") {
  TempDir d;
  const std::string p = d.Write("x.yaml", "name: x\nmodel: {preset: llama-3.1-8b\ncache: [\n");
  ExpectError(Load(p).status(), "bad_yaml", {"x.yaml:", "malformed YAML"});
  const std::string tab = d.Write("tab.yaml", "name: x\nmodel:\n  preset: a\n   bad: - 1\n");
  ExpectError(Load(tab).status(), "bad_yaml", {"tab.yaml:4", "malformed YAML"});
}

TEST_CASE("unknown keys name file:line and key path, with a did-you-mean") {
  TempDir d;
  const std::string p = d.Write("x.yaml", R"(name: x
model:
  preset: llama-3.1-8b
cache:
  kv_memory_bytes: 8GiB
  attn_pack_size: 1
  blok_size: 16
)");
  ExpectError(Load(p).status(), "unknown_key",
              {"x.yaml:7", "cache.blok_size", "did you mean cache.block_size"});

  const std::string top = d.Write("top.yaml", "name: x\nmodle:\n  preset: llama-3.1-8b\n");
  ExpectError(Load(top).status(), "unknown_key", {"top.yaml:2", "modle", "did you mean model"});

  const std::string layer = d.Write("layer.yaml", R"(model:
  layers:
    - type: full_attention
      num_kv_heads: 8
      head_sise: 128
cache: {kv_memory_bytes: 1GiB}
)");
  ExpectError(Load(layer).status(), "unknown_key",
              {"layer.yaml:5", "model.layers[0].head_sise",
               "did you mean model.layers[0].head_size"});

  const std::string nothing_close = d.Write("far.yaml", "name: x\nzzzzzzzz: 1\n");
  auto far = Load(nothing_close);
  ExpectError(far.status(), "unknown_key", {"far.yaml:2", "zzzzzzzz: unknown key"});
  CHECK(far.status().message().find("did you mean") == std::string::npos);
}

TEST_CASE("duplicate keys are errors (yaml-cpp would keep one silently)") {
  TempDir d;
  const std::string p = d.Write("dup.yaml", R"(model:
  preset: llama-3.1-8b
cache:
  block_size: 16
  block_size: 32
)");
  ExpectError(Load(p).status(), "duplicate_key",
              {"dup.yaml:5", "cache.block_size", "duplicate key", "line 4"});
}

TEST_CASE("wrong types name the expected type and what was given") {
  TempDir d;
  ExpectError(Load(d.Write("a.yaml", "model: {preset: llama-3.1-8b}\nparallel:\n  tp: two\n"))
                  .status(),
              "wrong_type", {"a.yaml:3", "parallel.tp", "expected an integer", "\"two\""});
  ExpectError(Load(d.Write("b.yaml", "model: {preset: llama-3.1-8b}\ncache: 5\n")).status(),
              "wrong_type", {"b.yaml:2", "cache", "expected a map"});
  ExpectError(
      Load(d.Write("c.yaml", "model: {preset: llama-3.1-8b}\ncache:\n  kv_memory_bytes: lots\n"))
          .status(),
      "wrong_type", {"c.yaml:3", "cache.kv_memory_bytes", "byte count"});
  ExpectError(Load(d.Write("e.yaml", "model: {preset: llama-3.1-8b}\ncache:\n"
                                     "  enable_prefix_caching: maybe\n"))
                  .status(),
              "wrong_type", {"e.yaml:3", "cache.enable_prefix_caching", "true or false"});
  ExpectError(Load(d.Write("f.yaml", "model: {preset: llama-3.1-8b}\ncache:\n"
                                     "  kv_dtype: fp7\n"))
                  .status(),
              "bad_value", {"f.yaml:3", "cache.kv_dtype", "did you mean fp8"});
  ExpectError(Load(d.Write("g.yaml", "model:\n  layers: {type: full}\n")).status(), "wrong_type",
              {"g.yaml:2", "model.layers", "expected a list"});
}

TEST_CASE("impossible values are errors naming file:line and key") {
  TempDir d;
  SECTION("tp 0") {
    ExpectError(Load(d.Write("x.yaml", "model: {preset: llama-3.1-8b}\nparallel:\n  tp: 0\n"))
                    .status(),
                "bad_value", {"x.yaml:3", "parallel.tp", "out of range"});
  }
  SECTION("pack 0") {
    ExpectError(
        Load(d.Write("x.yaml", "model: {preset: llama-3.1-8b}\ncache:\n  attn_pack_size: 0\n"))
            .status(),
        "bad_value", {"x.yaml:3", "cache.attn_pack_size", "out of range"});
  }
  SECTION("negative sizes") {
    ExpectError(
        Load(d.Write("x.yaml", "model: {preset: llama-3.1-8b}\ncache:\n  kv_memory_bytes: -5\n"))
            .status(),
        "bad_value", {"x.yaml:3", "cache.kv_memory_bytes"});
    ExpectError(Load(d.Write("y.yaml", "model:\n  layers:\n"
                                       "    - {type: full, num_kv_heads: 8, head_size: -1}\n"))
                    .status(),
                "bad_value", {"y.yaml:3", "model.layers[0].head_size", "out of range"});
    ExpectError(
        Load(d.Write("z.yaml", "model: {preset: llama-3.1-8b}\ncache:\n  block_size: -16\n"))
            .status(),
        "bad_value", {"z.yaml:3", "cache.block_size"});
  }
  SECTION("block size the backend cannot run") {
    ExpectError(LoadAndPlan(d.Write("x.yaml", R"(model: {preset: llama-3.1-8b}
cache:
  kv_memory_bytes: 8GiB
  block_size: 24
)")),
                "invalid_config", {"x.yaml:4", "cache.block_size", "flash_attn"});
  }
  SECTION("model with no layers") {
    ExpectError(Load(d.Write("x.yaml", "model:\n  name: empty\n")).status(), "missing_key",
                {"x.yaml:2", "model.layers", "no layers"});
    ExpectError(Load(d.Write("y.yaml", "name: nomodel\n")).status(), "missing_key",
                {"y.yaml", "model"});
  }
  SECTION("sliding_window layer without a window") {
    ExpectError(Load(d.Write("x.yaml", R"(model:
  layers:
    - {type: full, num_kv_heads: 8, head_size: 128}
    - {type: sliding_window, num_kv_heads: 8, head_size: 128}
)"))
                    .status(),
                "missing_key", {"x.yaml:4", "model.layers[1].sliding_window"});
  }
  SECTION("attention layer without heads") {
    ExpectError(Load(d.Write("x.yaml", "model:\n  layers:\n    - {type: full, head_size: 64}\n"))
                    .status(),
                "missing_key", {"x.yaml:3", "model.layers[0].num_kv_heads"});
  }
  SECTION("mamba shapes and dtypes do not match") {
    ExpectError(Load(d.Write("x.yaml", R"(model:
  layers:
    - type: mamba
      shapes: [[3, 64], [4, 8]]
      dtypes: [bf16]
)"))
                    .status(),
                "bad_value", {"x.yaml:5", "model.layers[0].dtypes", "one dtype per shape"});
    ExpectError(Load(d.Write("y.yaml", R"(model:
  layers:
    - type: mamba
      shapes: [[3, x]]
      dtypes: [bf16]
)"))
                    .status(),
                "wrong_type", {"y.yaml:4", "model.layers[0].shapes", "positive integers"});
    ExpectError(Load(d.Write("z.yaml", R"(model:
  layers:
    - type: mamba
      shapes: [[3, 64]]
      dtypes: [auto]
)"))
                    .status(),
                "bad_value", {"z.yaml:5", "model.layers[0].dtypes", "not a state dtype"});
  }
  SECTION("TP that does not divide the GDN heads") {
    ExpectError(LoadAndPlan(d.Write("x.yaml", R"(model:
  preset: qwen3-next-80b-a3b
parallel:
  tp: 3
cache:
  kv_memory_bytes: 8GiB
)")),
                "tp_not_divisible", {"x.yaml:4", "parallel.tp", "GDN", "TP 3"});
    // Set on the command line: the position is the override.
    ExpectError(LoadAndPlan(d.Write("y.yaml", "model: {preset: qwen3-next-80b-a3b}\n"
                                              "cache: {kv_memory_bytes: 8GiB}\n"),
                            {"parallel.tp=64"}),
                "tp_not_divisible", {"--set parallel.tp", "parallel.tp", "GDN value heads"});
  }
  SECTION("KV memory too small for two blocks") {
    ExpectError(LoadAndPlan(d.Write("x.yaml", R"(model: {preset: llama-3.1-8b}
cache:
  kv_memory_bytes: 1MiB
)")),
                "kv_memory_too_small", {"x.yaml:3", "cache.kv_memory_bytes"});
  }
  SECTION("a pack on a dense model") {
    ExpectError(LoadAndPlan(d.Write("x.yaml", R"(model: {preset: llama-3.1-8b}
cache:
  kv_memory_bytes: 8GiB
  attn_pack_size: 4
)")),
                "invalid_config", {"x.yaml:4", "cache.attn_pack_size", "hybrid"});
  }
}

TEST_CASE("EAGLE groups are the groups that hold the drafter's layers") {
  TempDir d;
  const std::string base = "model:\n  preset: gpt-oss-120b\n";
  const std::string rest =
      "cache: {num_gpu_blocks: 4000, num_speculative_tokens: 3}\n"
      "spec: {method: eagle, acceptance_rate: 0.7}\n";
  // gpt-oss: sliding-window and full-attention groups; an EAGLE3 drafter's one full-attention
  // layer (8 KV heads of 64, as the target's) joins the full-attention group.
  auto with = Load(d.Write("a.yaml", base +
                                         "  draft:\n    layers: [{type: full_attention, count: 1, "
                                         "num_kv_heads: 8, head_size: 64}]\n" +
                                         rest));
  REQUIRE(with.ok());
  auto mc = KvCacheManagerConfigFromPlan(with->Plan().value());
  REQUIRE(mc.ok());
  REQUIRE(mc->groups.size() == 2);
  for (const KvGroupConfig& g : mc->groups)
    CHECK(g.eagle_group == (g.kind == KvGroupKind::kFullAttention));
  // Without a drafter in the plan every group counts (vLLM's fallback).
  auto without = Load(d.Write("b.yaml", base + rest));
  REQUIRE(without.ok());
  mc = KvCacheManagerConfigFromPlan(without->Plan().value());
  REQUIRE(mc.ok());
  for (const KvGroupConfig& g : mc->groups) CHECK(g.eagle_group);
}

TEST_CASE("cache.prefix_cache_retention_interval: 0, N, null; bad values named") {
  TempDir d;
  const std::string base = "model: {preset: qwen3.5-35b-a3b}\ncache:\n  num_gpu_blocks: 1000\n";
  auto sc = Load(d.Write("a.yaml", base + "  vllm_semantics: latest\n"));
  REQUIRE(sc.ok());
  CHECK(sc->cache.prefix_cache_retention_interval == -2);  // the profile's default
  // Qwen3.5's scheduler block is 1056 tokens: an interval is a whole number of them.
  sc = Load(d.Write("b.yaml", base + "  prefix_cache_retention_interval: 4224\n"));
  REQUIRE(sc.ok());
  CHECK(sc->cache.prefix_cache_retention_interval == 4224);
  auto plan = sc->Plan();
  REQUIRE(plan.ok());
  auto mc = KvCacheManagerConfigFromPlan(plan.value());
  REQUIRE(mc.ok());
  CHECK(mc->effective_retention_interval() == 4224);
  ExpectError(LoadAndPlan(d.Write("b2.yaml", base + "  prefix_cache_retention_interval: 4096\n")),
              "bad_value",
              {"b2.yaml:4", "cache.prefix_cache_retention_interval", "scheduler block size 1056"});
  sc = Load(d.Write("c.yaml", base + "  prefix_cache_retention_interval: null\n"));
  REQUIRE(sc.ok());
  CHECK(sc->cache.prefix_cache_retention_interval == -1);
  sc = Load(d.Write("d.yaml", base + "  vllm_semantics: classic\n"), {});
  REQUIRE(sc.ok());
  mc = KvCacheManagerConfigFromPlan(sc->Plan().value());
  REQUIRE(mc.ok());
  CHECK(mc->effective_retention_interval() == KvCacheManagerConfig::kRetentionDense);
  ExpectError(Load(d.Write("e.yaml", base + "  prefix_cache_retention_interval: -3\n")).status(),
              "bad_value", {"e.yaml:4", "cache.prefix_cache_retention_interval", "at least 0"});
  ExpectError(Load(d.Write("f.yaml", base + "  prefix_cache_retention_interval: often\n")).status(),
              "wrong_type", {"f.yaml:4", "cache.prefix_cache_retention_interval", "or null"});
  ExpectError(Load(d.Write("g.yaml", base + "  vllm_semantics: classic\n"
                                            "  prefix_cache_retention_interval: 0\n"))
                  .status(),
              "bad_value", {"g.yaml:5", "cache.prefix_cache_retention_interval", "latest"});
}

TEST_CASE("a missing scenario file is an error naming it") {
  TempDir d;
  ExpectError(Load(d.Path("nope.yaml")).status(), "missing_file", {"nope.yaml", "no such"});
}

TEST_CASE("includes: merged underneath, missing ones and cycles named at the include line") {
  TempDir d;
  d.Write("base.yaml", "model:\n  preset: llama-3.1-8b\ncache:\n  kv_memory_bytes: 4GiB\n"
                       "  block_size: 16\n");
  auto sc = Load(d.Write("top.yaml", "name: top\ninclude: base.yaml\ncache:\n  block_size: 64\n"));
  INFO(sc.status().ToString());
  REQUIRE(sc.ok());
  CHECK(sc->cache.block_size == 64);  // the including file wins
  CHECK(sc->cache.kv_memory_bytes == 4LL << 30);
  CHECK(sc->model_preset == "llama-3.1-8b");

  ExpectError(Load(d.Write("miss.yaml", "name: m\ninclude: [base.yaml, gone.yaml]\n")).status(),
              "missing_file", {"miss.yaml:2", "include", "gone.yaml"});

  d.Write("c1.yaml", "name: c1\ninclude: c2.yaml\n");
  d.Write("c2.yaml", "include: c1.yaml\n");
  ExpectError(Load(d.Path("c1.yaml")).status(), "include_cycle",
              {"c2.yaml:1", "include", "c1.yaml", "cycle"});
  ExpectError(Load(d.Write("self.yaml", "include: self.yaml\n")).status(), "include_cycle",
              {"self.yaml:1", "include"});
}

TEST_CASE("unknown presets suggest the closest name and list the known ones") {
  TempDir d;
  ExpectError(Load(d.Write("x.yaml", "name: x\nmodel:\n  preset: lama-3.1-8b\n")).status(),
              "unknown_preset",
              {"x.yaml:3", "model.preset", "did you mean llama-3.1-8b", "qwen3.5-397b-a17b"});
  auto m = LoadModelPreset("qwen3-next");
  REQUIRE_FALSE(m.ok());
  CHECK(m.status().message().find("qwen3-next-80b-a3b") != std::string::npos);
}

TEST_CASE("set overrides: applied after includes; bad ones are errors") {
  TempDir d;
  const std::string p = d.Write("good.yaml", kGood);
  auto sc = Load(p, {"cache.block_size=64", "parallel.tp=4", "model.preset=qwen3.5-35b-a3b"});
  INFO(sc.status().ToString());
  REQUIRE(sc.ok());
  CHECK(sc->cache.block_size == 64);
  CHECK(sc->cache.tp == 4);
  CHECK(sc->model_preset == "qwen3.5-35b-a3b");

  ExpectError(Load(p, {"cache.block_size"}).status(), "bad_override",
              {"--set cache.block_size", "key.path=value"});
  ExpectError(Load(p, {"=3"}).status(), "bad_override", {"--set =3"});
  ExpectError(Load(p, {"cache..block_size=3"}).status(), "bad_override", {"empty key"});
  ExpectError(Load(p, {"cache.block_size=[1"}).status(), "bad_override",
              {"--set cache.block_size=[1", "not valid YAML"});
  ExpectError(Load(p, {"cache.block_size=abc"}).status(), "wrong_type",
              {"--set cache.block_size", "cache.block_size", "expected an integer"});
  ExpectError(Load(p, {"cache.blok_size=16"}).status(), "unknown_key",
              {"--set cache.blok_size", "did you mean cache.block_size"});
}

TEST_CASE("every error in a file is reported, one per line") {
  TempDir d;
  auto s = Load(d.Write("x.yaml", R"(model: {preset: llama-3.1-8b}
parallel: {tp: 0}
cache:
  attn_pack_size: 0
  kv_memory_bytes: -5
  colour: blue
)"))
               .status();
  REQUIRE_FALSE(s.ok());
  CHECK(s.message().find("x.yaml:2: parallel.tp") != std::string::npos);
  CHECK(s.message().find("x.yaml:4: cache.attn_pack_size") != std::string::npos);
  CHECK(s.message().find("x.yaml:5: cache.kv_memory_bytes") != std::string::npos);
  CHECK(s.message().find("x.yaml:6: cache.colour") != std::string::npos);
  CHECK(std::count(s.message().begin(), s.message().end(), '\n') == 3);
}

TEST_CASE("the describe mode lists every key once with help") {
  const auto keys = DescribeScenarioKeys();
  std::set<std::string> seen;
  for (const auto& k : keys) {
    INFO(k.path);
    CHECK_FALSE(k.help.empty());
    CHECK(seen.insert(k.path).second);
  }
  for (const char* want : {"cache.block_size", "cache.attn_pack_size", "cache.kv_dtype",
                           "cache.layout", "cache.kv_memory_bytes", "cache.num_gpu_blocks",
                           "cache.mamba_cache_mode", "cache.num_speculative_tokens",
                           "parallel.tp", "model.preset", "model.layers[].sliding_window",
                           "model.layers[].shapes", "model.draft.layers"}) {
    CHECK(seen.count(want) == 1);
  }
}

}  // namespace
}  // namespace kvsim
