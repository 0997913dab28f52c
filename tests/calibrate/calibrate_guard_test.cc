// The guards of kvsim calibrate against a silent misuse (sim/calibrate/calibrate.h): counting
// independent measurements, marking a value on its bound, the list of fittable keys, the
// hardware file's bound comments, and the search path for input files. Expected values are
// worked by hand from the definitions in the header.
#include <catch2/catch_test_macros.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "sim/calibrate/calibrate.h"

namespace kvsim {
namespace {

namespace fs = std::filesystem;

TEST_CASE("bound note: within 0.1 % of the range of a bound (else empty)") {
  // mfu in [0.3, 0.9]: the range is 0.6, so the tolerance is 0.0006.
  CHECK(BoundNote(0.9, 0.3, 0.9) == "at its upper bound 0.9: not a fit");
  CHECK(BoundNote(0.8995, 0.3, 0.9) == "at its upper bound 0.9: not a fit");  // 0.0005 away
  CHECK(BoundNote(0.899, 0.3, 0.9).empty());                                  // 0.001 away
  CHECK(BoundNote(0.3, 0.3, 0.9) == "at its lower bound 0.3: not a fit");
  CHECK(BoundNote(0.3005, 0.3, 0.9) == "at its lower bound 0.3: not a fit");
  CHECK(BoundNote(0.6, 0.3, 0.9).empty());
  // step_overhead_us in [0, 10000]: tolerance 10 µs.
  CHECK(BoundNote(10000, 0, 10000) == "at its upper bound 10000: not a fit");
  CHECK(BoundNote(9985, 0, 10000).empty());
  // An overhead >= 0 with no upper bound: only (about) 0 is on the bound.
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(BoundNote(0, 0, inf) == "at its lower bound 0: not a fit");
  CHECK(BoundNote(1e-6, 0, inf).empty());
  CHECK(BoundNote(1e9, 0, inf).empty());
}

TEST_CASE("independent measurements: one per run and metric (or per stage when stages count)") {
  std::vector<ServingMeasurement> m = {
      // Run a: three whole-run means, no stages → 3.
      {"a", "ttft_mean_ms", 1},
      {"a", "tpot_mean_ms", 1},
      {"a", "e2e_mean_ms", 1},
      // Run b: two metrics over two stages; the whole-run means combine the stages → 4, not 6.
      {"b", "ttft_mean_ms", 1},
      {"b", "tpot_mean_ms", 1},
      {"b", "stage0.ttft_mean_ms", 1},
      {"b", "stage1.ttft_mean_ms", 1},
      {"b", "stage0.tpot_mean_ms", 1},
      {"b", "stage1.tpot_mean_ms", 1},
      // Run c: the same metric name as run a counts again (another run) → 1.
      {"c", "ttft_mean_ms", 1}};
  CHECK(IndependentMeasurements(m) == 3 + 4 + 1);
  CHECK(IndependentMeasurements({}) == 0);
  // The same measurement given twice is still one.
  CHECK(IndependentMeasurements({{"a", "tpot_mean_ms", 1}, {"a", "tpot_mean_ms", 2}}) == 1);
}

TEST_CASE("fittable keys: every serving-fit key (each readable and writable by name)") {
  const std::vector<std::string> keys = FittableHardwareKeys();
  for (const FitParameter& p : ServingFitParameters()) {
    INFO(p.key);
    CHECK(std::find(keys.begin(), keys.end(), p.key) != keys.end());
  }
  for (const std::string& k : keys) {
    INFO(k);
    HardwareSpec hw;
    CHECK(SetHardwareKey(hw, k, 0.25));
    double v = 0;
    CHECK(GetHardwareKey(hw, k, &v));
    CHECK(v == 0.25);
  }
  CHECK(std::find(keys.begin(), keys.end(), "nosuch") == keys.end());
}

TEST_CASE("hardware file: a key on its bound carries the note on its own line above it") {
  const std::string yaml =
      HardwareFileYaml("", "fitted on: x", {{"mfu", 0.9}, {"intake_us", 4000}},
                       {{"mfu", "at its upper bound 0.9: not a fit"}, {"intake_us", ""}});
  CHECK(yaml.find("# mfu: at its upper bound 0.9: not a fit\nmfu: 0.9\n") != std::string::npos);
  // The value line stays bare (scripts read `key: value`), and an empty note writes nothing.
  CHECK(yaml.find("intake_us: 4000\n") != std::string::npos);
  CHECK(yaml.find("# intake_us") == std::string::npos);
}

TEST_CASE("calibration inputs: found as given or in $KVSIM_TRACE_DIR by path or file name") {
  const fs::path dir = fs::temp_directory_path() / "kvsim_calibrate_guard_test";
  fs::remove_all(dir);
  fs::create_directories(dir / "sub");
  std::ofstream(dir / "sub" / "ops.json") << "{}";
  const char* old = std::getenv("KVSIM_TRACE_DIR");
  const std::string saved = old ? old : "";
  setenv("KVSIM_TRACE_DIR", dir.c_str(), 1);

  std::vector<std::string> tried;
  // By its path under the folder.
  CHECK(FindCalibrationInput("sub/ops.json", &tried) == (dir / "sub" / "ops.json").string());
  CHECK(tried.front() == "sub/ops.json");  // the working directory first
  // By file name, wherever the path said it was (the README's ../shared/data/... form).
  CHECK(FindCalibrationInput("../elsewhere/ops.json", nullptr) == "");  // not in dir/ itself
  std::ofstream(dir / "ops2.json") << "{}";
  CHECK(FindCalibrationInput("../elsewhere/ops2.json", nullptr) == (dir / "ops2.json").string());
  // An absolute path is only itself.
  tried.clear();
  CHECK(FindCalibrationInput((dir / "nope.json").string(), &tried).empty());
  CHECK(tried.size() == 1);
  // A missing file lists every place it looked, the environment folder and the shared one.
  tried.clear();
  CHECK(FindCalibrationInput("nope.json", &tried).empty());
  CHECK(std::find(tried.begin(), tried.end(), (dir / "nope.json").string()) != tried.end());
  CHECK(std::find(tried.begin(), tried.end(),
                  (fs::path(kSharedDataDir) / "fidelity" / "nope.json").string()) != tried.end());

  if (old) {
    setenv("KVSIM_TRACE_DIR", saved.c_str(), 1);
  } else {
    unsetenv("KVSIM_TRACE_DIR");
  }
  fs::remove_all(dir);
}

TEST_CASE("operator fit: fewer samples than keys is the caller's call (none is an error)") {
  HardwareSpec hw;
  OperatorSample s;
  s.label = "h100 m tp1 N=8";
  s.gpu = "h100";
  s.linears = {{"qkv", 1, 6144, 4096, false}};
  s.tokens = 8;
  s.measured_s = 1e-4;
  CHECK(FitOperatorProfiles(hw, {s}, hw.dense_tflops_bf16 * 1e12).ok());
  CHECK(FitOperatorProfiles(hw, {}, hw.dense_tflops_bf16 * 1e12).status().code() ==
        "too_few_samples");
}

}  // namespace
}  // namespace kvsim
