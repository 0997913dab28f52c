// Pinning a scenario tree (sim/scenario/pin_scenario.h): after pinning, the model and
// hardware presets are no longer read for their values, so a refit of a preset cannot change
// what a resolved scenario runs. Checked by properties: every key of the preset is in the
// pinned section with the preset's value; a pinned value that differs from the preset (what
// a refit makes of it) is the value the run uses; pinning is idempotent; swept sections and
// calibration files are left alone; a trace gets its size and SHA-256.
#include "sim/scenario/pin_scenario.h"

#include <catch2/catch_test_macros.hpp>
#include <filesystem>
#include <fstream>

#include "sim/embedded_data.h"
#include "sim/file_pin.h"
#include "sim/scenario/scenario_loader.h"

namespace kvsim {
namespace {

ConfigNode Tree(const std::string& yaml) {
  auto t = ParseYaml(yaml, "pin.yaml");
  REQUIRE(t.ok());
  return t.value();
}

const char* kScenario = R"(
name: pin
model: {preset: llama-3.1-8b, max_model_len: 4096}
hardware: {preset: H100-SXM, mbu: 0.5}
cache: {block_size: 16, num_gpu_blocks: 2000}
workload: {kind: shared_prefix, num_requests: 10, rate_per_s: 5}
)";

TEST_CASE("pin: the presets' keys are written in, the scenario's own keys still win") {
  ConfigNode t = Tree(kScenario);
  PinScenarioTree(t, "pin.yaml");
  const ConfigNode* hw = t.Find("hardware");
  REQUIRE(hw != nullptr);
  auto preset = ParseYaml(*FindEmbeddedFile("scenarios/hardware/h100-sxm.yaml"), "h100");
  REQUIRE(preset.ok());
  for (const auto& [k, v] : preset.value().map) {
    const ConfigNode* got = hw->Find(k);
    REQUIRE(got != nullptr);
    if (k != "mbu") CHECK(ToYaml(*got) == ToYaml(v));
  }
  CHECK(hw->Find("mbu")->scalar == "0.5");  // the scenario's own value
  CHECK(hw->Find("preset")->scalar == "H100-SXM");
  const ConfigNode* model = t.Find("model");
  CHECK(model->Find("layers") != nullptr);
  CHECK(model->Find("max_model_len")->scalar == "4096");
  // Pinning a pinned tree changes nothing (the sweep id of a rerun stays the same).
  ConfigNode again = t;
  PinScenarioTree(again, "pin.yaml");
  CHECK(ToYaml(again) == ToYaml(t));
}

TEST_CASE("pin: a pinned value, not the preset's, is what runs (a refit cannot move it)") {
  ConfigNode t = Tree(kScenario);
  PinScenarioTree(t, "pin.yaml");
  auto plain = ParseScenario(Tree(kScenario), "pin.yaml");
  auto pinned = ParseScenario(t, "pin.yaml");
  REQUIRE(plain.ok());
  REQUIRE(pinned.ok());
  CHECK(pinned->sim.hardware.mfu == plain->sim.hardware.mfu);
  CHECK(pinned->sim.hardware_source == plain->sim.hardware_source);
  CHECK(pinned->model.layers.size() == plain->model.layers.size());
  // What a refit of the preset does to a pinned file: the file keeps its old value, and
  // that value is the one used, whatever the preset now says.
  ConfigNode old = t;
  old.Find("hardware")->Find("mfu")->scalar = "0.5";
  old.Find("hardware")->Find("step_overhead_us")->scalar = "745";
  auto run = ParseScenario(old, "pin.yaml");
  REQUIRE(run.ok());
  CHECK(run->sim.hardware.mfu == 0.5);
  CHECK(run->sim.hardware.step_overhead_us == 745);
}

TEST_CASE("pin: swept sections and calibration files keep their names only") {
  ConfigNode swept = Tree(std::string(kScenario) + "sweep: {hardware.preset: [H100-SXM, H200]}\n");
  PinScenarioTree(swept, "pin.yaml");
  CHECK(swept.Find("hardware")->Find("mfu") == nullptr);
  CHECK(swept.Find("model")->Find("layers") != nullptr);  // the model is not swept
  ConfigNode file = Tree(R"(
model: {preset: llama-3.1-8b}
hardware: {file: calib.yaml}
)");
  PinScenarioTree(file, "pin.yaml");
  CHECK(file.Find("hardware")->Find("mfu") == nullptr);
}

TEST_CASE("pin: a trace gets its size and SHA-256") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "kvsim_pin_test";
  fs::create_directories(dir);
  const std::string text = "{\"timestamp\": 0, \"input_length\": 20, \"output_length\": 5, "
                           "\"hash_ids\": [1]}\n";
  std::ofstream(dir / "t.jsonl") << text;
  ConfigNode t = Tree(R"(
model: {preset: llama-3.1-8b}
workload: {kind: trace, trace: {path: t.jsonl}}
)");
  PinScenarioTree(t, (dir / "s.yaml").string());
  const ConfigNode* tr = t.Find("workload")->Find("trace");
  REQUIRE(tr->Find("sha256") != nullptr);
  CHECK(tr->Find("sha256")->scalar == Sha256Hex(text));
  CHECK(tr->Find("bytes")->scalar == std::to_string(text.size()));
  CHECK(tr->Find("resolved_path")->scalar == (dir / "t.jsonl").string());
  fs::remove_all(dir);
}

TEST_CASE("pin: SHA-256 of known strings") {
  // FIPS 180-2 test vectors.
  CHECK(Sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(Sha256Hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

}  // namespace
}  // namespace kvsim
