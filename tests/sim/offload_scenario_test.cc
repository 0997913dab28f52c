// cache.offload in scenarios: typed parse, errors naming file:line:key, and the checks vLLM's
// OffloadingSpec asserts, against real plans (kv-offload.md §1, §9).
#include <catch2/catch_test_macros.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "sim/instance_builder.h"
#include "sim/scenario/scenario_loader.h"

namespace kvsim {
namespace {

namespace fs = std::filesystem;

std::string WriteScenario(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / ("kvsim_offload_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path p = dir / name;
  std::ofstream(p) << text;
  return p.string();
}

bool Contains(const std::string& s, const std::string& frag) {
  return s.find(frag) != std::string::npos;
}

// Llama-3.1-8B, block 16: one GPU block is 32 layers × 16 tokens × 2 (K, V) × 8 heads × 128
// × 2 B = 2 MiB.
const char* kLlama =
    "name: off\n"
    "model: {preset: llama-3.1-8b}\n"
    "cache:\n"
    "  block_size: 16\n"
    "  num_gpu_blocks: 1000\n";

TEST_CASE("cache.offload parses into a typed section", "[offload]") {
  const std::string p = WriteScenario(
      "a.yaml", std::string(kLlama) +
                    "  offload: {cpu_bytes: 1GiB, block_size: 64, eviction_policy: arc, "
                    "store_threshold: 2}\n");
  auto sc = LoadScenario(LoadOptions{p, {}});
  REQUIRE(sc.ok());
  CHECK(sc->offload.enabled);
  CHECK(sc->offload.cpu_bytes == (1LL << 30));
  CHECK(sc->offload.block_size == 64);
  CHECK(sc->offload.eviction_policy == "arc");
  CHECK(sc->offload.store_threshold == 2);
  auto plan = sc->Plan();
  REQUIRE(plan.ok());
  CHECK(GpuBlockBytesAllRanks(*plan) == 2 * 1024 * 1024);
  auto cfg = ScenarioOffloadConfig(*sc, *plan);
  REQUIRE(cfg.ok());
  CHECK(cfg->block_size_factor == 4);
  CHECK(cfg->tier.num_blocks == 128);  // 1 GiB / (4 × 2 MiB)
  CHECK(cfg->tier.policy == CpuEvictionPolicyKind::kArc);
  // Without the section there is no tier.
  auto none = LoadScenario(LoadOptions{WriteScenario("n.yaml", kLlama), {}});
  REQUIRE(none.ok());
  CHECK_FALSE(none->offload.enabled);
}

TEST_CASE("cache.offload errors name the file, line and key", "[offload]") {
  SECTION("no size") {
    const std::string p =
        WriteScenario("b.yaml", std::string(kLlama) + "  offload: {block_size: 16}\n");
    auto sc = LoadScenario(LoadOptions{p, {}});
    REQUIRE_FALSE(sc.ok());
    CHECK(Contains(sc.status().message(), "b.yaml:6"));
    CHECK(Contains(sc.status().message(), "cache.offload"));
  }
  SECTION("both sizes") {
    const std::string p = WriteScenario(
        "c.yaml", std::string(kLlama) + "  offload:\n    cpu_bytes: 1GiB\n    num_cpu_blocks: 8\n");
    auto sc = LoadScenario(LoadOptions{p, {}});
    REQUIRE_FALSE(sc.ok());
    CHECK(Contains(sc.status().message(), "c.yaml:8"));
    CHECK(Contains(sc.status().message(), "cache.offload.num_cpu_blocks"));
  }
  SECTION("unknown policy") {
    const std::string p = WriteScenario(
        "d.yaml", std::string(kLlama) + "  offload: {num_cpu_blocks: 8, eviction_policy: lfu}\n");
    auto sc = LoadScenario(LoadOptions{p, {}});
    REQUIRE_FALSE(sc.ok());
    CHECK(Contains(sc.status().message(), "cache.offload.eviction_policy"));
  }
  SECTION("offloaded block not a multiple of the GPU block") {
    const std::string p = WriteScenario(
        "e.yaml",
        std::string(kLlama) + "  offload:\n    num_cpu_blocks: 8\n    block_size: 24\n");
    auto sc = LoadScenario(LoadOptions{p, {}});
    REQUIRE(sc.ok());
    auto plan = sc->Plan();
    REQUIRE(plan.ok());
    auto cfg = ScenarioOffloadConfig(*sc, *plan);
    REQUIRE_FALSE(cfg.ok());
    CHECK(Contains(cfg.status().message(), "e.yaml:8"));
    CHECK(Contains(cfg.status().message(), "cache.offload.block_size"));
    CHECK(Contains(cfg.status().message(), "multiple of the GPU block size 16"));
  }
  SECTION("a CPU tier smaller than one offloaded block") {
    const std::string p =
        WriteScenario("f.yaml", std::string(kLlama) + "  offload: {cpu_bytes: 1MiB}\n");
    auto sc = LoadScenario(LoadOptions{p, {}});
    REQUIRE(sc.ok());
    auto cfg = ScenarioOffloadConfig(*sc, *sc->Plan());
    REQUIRE_FALSE(cfg.ok());
    CHECK(Contains(cfg.status().message(), "cache.offload.cpu_bytes"));
  }
}

TEST_CASE("Hybrid Mamba align with a CPU tier is refused up front, as vLLM would abort",
          "[offload]") {
  const std::string p = WriteScenario(
      "g.yaml",
      "name: g\nmodel: {preset: qwen3.5-35b-a3b}\nparallel: {tp: 2}\ncache:\n"
      "  num_gpu_blocks: 500\n  mamba_cache_mode: align\n  offload: {num_cpu_blocks: 64}\n");
  auto sc = LoadScenario(LoadOptions{p, {}});
  REQUIRE(sc.ok());
  auto plan = sc->Plan();
  REQUIRE(plan.ok());
  auto cfg = ScenarioOffloadConfig(*sc, *plan);
  REQUIRE_FALSE(cfg.ok());
  CHECK(cfg.status().code() == kOffloadErrMambaAlign);
  CHECK(Contains(cfg.status().message(), "g.yaml:6"));
  CHECK(Contains(cfg.status().message(), "cache.mamba_cache_mode"));
}

}  // namespace
}  // namespace kvsim
