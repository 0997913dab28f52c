// kvsim calibrate [--ops PROFILES.json] [--runs SCENARIO...] [--gpu-validate V.json]
//                 [--hardware PRESET] [--fit KEY,...] [--metrics NAME,...] [--force]
//                 [-o OUT.yaml]
// Fits the step-time model's coefficients (sim/calibrate/calibrate.h) to measurements:
// operator profiles (Vidur's format) fit mbu, mfu, layer_overhead_us; gpu-validate JSON fits
// attention_mbu, attention_call_us from its decode-attention timings and mbu, mfu, moe_mbu and
// the GEMMs' share of layer_overhead_us from its cuBLASLt GEMM timings (sim/calibrate/
// gemm_shapes.h; with --ops too, the whole-layer profiles keep layer_overhead_us); measured
// serving runs (scenarios with `reference:`) fit the --fit keys (default: the CPU, intake,
// output and efficiency terms) by simulating them; each run keeps its own preset's
// coefficients and the fit moves them all by one shift.
// Guards against a silent misuse: a fit of more keys than independent measurements is
// refused without --force (IndependentMeasurements); a key that ends on a bound is marked
// "not a fit" (BoundNote) in the text, on stderr and in the file; the starting preset is the
// runs' own (hardware.preset), and runs on several GPUs whose presets start a fitted key at
// different values are refused without --hardware or --from-defaults (one shift cannot give
// each GPU its own value).
// Prints in-sample and leave-one-out errors and writes the fitted keys as a hardware file
// (merge it with `hardware: {preset: ..., file: OUT.yaml}`).
// Exit codes: 0 fitted; 2 bad input (files, keys, a scenario without `reference:`, too few
// measurements, mixed GPUs).
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <thread>
#include <tuple>

#include "apps/kvsim/commands.h"
#include "sim/calibrate/calibrate.h"
#include "sim/calibrate/gemm_shapes.h"
#include "sim/config/config_reader.h"
#include "sim/embedded_data.h"
#include "sim/engine.h"
#include "sim/report/reference_report.h"
#include "sim/scenario/scenario_loader.h"

namespace kvsim::cli {
namespace {

struct CalibrateArgs {
  std::string ops;
  std::string ops_gpu;
  std::vector<std::string> runs;
  std::string gpu_validate;
  std::string hardware;  // empty: the runs' own preset, else kDefaultHardware
  std::string fit;
  std::string metrics = "ttft_mean_ms,tpot_mean_ms,e2e_mean_ms";
  int iterations = 6;
  double prior = 0;
  bool from_defaults = false;
  bool stages = true;
  bool force = false;
  std::string out;
};

// The preset a calibration without --hardware and without --runs starts from.
constexpr const char* kDefaultHardware = "H100-SXM";

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::Error("file_not_found", path + ": cannot open");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// "meta-llama/Llama-2-7b-hf" → the model preset llama-2-7b: the last path component,
// lower case, without -hf and -instruct.
std::string PresetNameFor(const std::string& hf_name) {
  std::string s = Lower(hf_name.substr(hf_name.rfind('/') + 1));
  for (const char* suffix : {"-hf", "-instruct"}) {
    const std::string suf = suffix;
    while (s.size() > suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0) {
      s.erase(s.size() - suf.size());
    }
  }
  return s;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void PrintErrors(const std::string& title, const std::vector<SampleError>& errors) {
  std::cout << title << "\n";
  std::cout << fmt::format("  {:<72} {:>10} {:>14}\n", "sample", "in-sample", "leave-one-out");
  std::vector<double> in, loo;
  for (const SampleError& e : errors) {
    std::cout << fmt::format("  {:<72} {:>+9.1f}% {:>+13.1f}%\n", e.label.substr(0, 72),
                             100 * e.in_sample, 100 * e.leave_one_out);
    in.push_back(std::abs(e.in_sample));
    loo.push_back(std::abs(e.leave_one_out));
  }
  std::cout << fmt::format(
      "  median |error|: in-sample {:.1f}%, leave-one-out {:.1f}%; "
      "worst {:.1f}% / {:.1f}%\n",
      100 * Median(in), 100 * Median(loo), 100 * *std::max_element(in.begin(), in.end()),
      100 * *std::max_element(loo.begin(), loo.end()));
}

// Sets `key` in the fitted list, replacing an earlier fit's value (a hardware file must not
// name a key twice).
void Upsert(std::vector<std::pair<std::string, double>>& fitted, const std::string& key,
            double value) {
  for (auto& [k, v] : fitted) {
    if (k == key) {
      v = value;
      return;
    }
  }
  fitted.emplace_back(key, value);
}

Result<HardwareSpec> PresetHardware(const std::string& preset) {
  auto tree = ParseYaml("model: {preset: llama-3.1-8b}\nhardware: {preset: \"" + preset + "\"}\n",
                        "--hardware");
  if (!tree.ok()) return tree.status();
  auto sc = ParseScenario(tree.value(), "--hardware");
  if (!sc.ok()) return sc.status();
  return sc->sim.hardware;
}

void Warn(const std::string& message) { std::cerr << "kvsim: warning: " << message << "\n"; }

std::string Join(const std::vector<std::string>& items, const std::string& sep = ", ") {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

// An input file (--ops, --gpu-validate) through the search path, or an error that says
// where it looked.
Result<std::string> LocateInput(const std::string& flag, const std::string& path) {
  std::vector<std::string> tried;
  std::string found = FindCalibrationInput(path, &tried);
  if (!found.empty()) return found;
  return Status::Error("file_not_found", flag + " " + path + ": no such file (looked for " +
                                             Join(tried) +
                                             "; set $KVSIM_TRACE_DIR to the folder that holds it)");
}

// A --runs scenario: as given (a file, or one of kvsim's built-in scenarios/), else through
// the calibrate search path.
Result<ConfigNode> LoadRun(const std::string& path, std::string* source) {
  *source = path;
  auto tree = LoadScenarioTree({path, {}});
  if (tree.ok() || tree.status().code() != "missing_file" ||
      tree.status().message() != path + ": no such scenario file") {
    return tree;
  }
  std::vector<std::string> tried;
  const std::string found = FindCalibrationInput(path, &tried);
  if (found.empty()) {
    return Status::Error("missing_file", "--runs " + path + ": no such scenario file (looked for " +
                                             Join(tried) + " and kvsim's built-in scenarios/" +
                                             "; set $KVSIM_TRACE_DIR to the folder that holds it)");
  }
  *source = found;
  return LoadScenarioTree({found, {}});
}

// The hardware preset a run names (hardware.preset, or the loader's default), from the
// loader's record of where the run's hardware came from ("preset X + file f.yaml + inline").
std::string RunPreset(const Scenario& sc) {
  const std::string& src = sc.sim.hardware_source;
  if (src.rfind("preset ", 0) != 0) return sc.sim.hardware.name;
  return src.substr(7,
                    src.find(" + ") == std::string::npos ? std::string::npos : src.find(" + ") - 7);
}

// Bound notes of the fitted keys (BoundNote), by key; a refit of a key replaces its note.
class BoundNotes {
 public:
  // Records the note of `key` at `value` in [lower, upper]; warns on stderr when it is on a
  // bound. Returns the note ("" inside the bounds).
  std::string Check(const std::string& key, double value, double lower, double upper) {
    std::string note = BoundNote(value, lower, upper);
    if (note.empty()) {
      notes_.erase(key);
    } else {
      notes_[key] = note;
      Warn(
          fmt::format("{} = {:.6g} is {} (the measurements pull it past the bound, so "
                      "{:.6g} is where the fit stopped, not what they measure; fit fewer keys, "
                      "add measurements, or look for what the model misses)",
                      key, value, note, value));
    }
    return note;
  }
  // "  (note)" for a text line, or "".
  std::string Suffix(const std::string& key) const {
    auto it = notes_.find(key);
    return it == notes_.end() ? "" : "  (" + it->second + ")";
  }
  const std::map<std::string, std::string>& all() const { return notes_; }

 private:
  std::map<std::string, std::string> notes_;
};

std::string Plural(size_t n, const std::string& word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

// A fit of more keys than measurements: refused (bad input) unless --force, then a warning.
// Returns false when refused.
bool CheckDetermined(const CalibrateArgs& a, const std::vector<std::string>& keys,
                     size_t measurements, const std::string& what, const std::string& which) {
  if (keys.size() <= measurements) return true;
  const std::string msg = fmt::format(
      "{}: {} to fit ({}) but only {} ({}); more keys than measurements leave the fit "
      "underdetermined (the extra keys absorb noise or stop on their bounds)",
      what, Plural(keys.size(), "key"), Join(keys), Plural(measurements, "independent measurement"),
      which);
  if (!a.force) {
    ReportError(
        Status::Error("underdetermined", msg + ". Fit at most " + Plural(measurements, "key") +
                                             " with --fit k1,k2,... or pass --force to fit anyway"),
        false);
    return false;
  }
  Warn(msg + " (--force: fitting anyway)");
  return true;
}

// The --fit keys (default: every bounded serving key). Unknown keys are listed with the
// fittable ones; a key named twice would be fitted twice.
Result<std::vector<std::string>> FitKeys(const std::string& fit) {
  std::vector<std::string> keys;
  if (fit.empty()) {
    for (const FitParameter& p : ServingFitParameters()) keys.push_back(p.key);
    return keys;
  }
  const std::vector<std::string> known = FittableHardwareKeys();
  for (const std::string& k : SplitCommas(fit)) {
    if (std::find(known.begin(), known.end(), k) == known.end()) {
      const std::string near = ClosestMatch(k, known);
      return Status::Error("unknown_key",
                           "--fit: " + k + " is not a fittable hardware key" +
                               (near.empty() ? "" : " (did you mean " + near + "?)") +
                               "; fittable: " + Join(known));
    }
    if (std::find(keys.begin(), keys.end(), k) != keys.end()) {
      return Status::Error("duplicate_key", "--fit: " + k + " named twice");
    }
    keys.push_back(k);
  }
  if (keys.empty()) return Status::Error("missing_input", "--fit: no keys given");
  return keys;
}

// The --runs scenarios, each with a `reference:` summary and a name of its own (measurements
// are matched to runs by name).
Result<std::vector<Scenario>> LoadRuns(const std::vector<std::string>& paths) {
  std::vector<Scenario> scenarios;
  for (const std::string& path : paths) {
    std::string source;
    auto tree = LoadRun(path, &source);
    if (!tree.ok()) return tree.status();
    auto sc = ParseScenario(tree.value(), source);
    if (!sc.ok()) return sc.status();
    if (sc->sim.reference.summary.empty()) {
      return Status::Error("no_reference", source + ": no `reference:` summary to fit against");
    }
    for (size_t i = 0; i < scenarios.size(); ++i) {
      if (scenarios[i].name == sc->name) {
        return Status::Error("duplicate_run", "--runs: " + paths[i] + " and " + path +
                                                  " are both named " + sc->name +
                                                  " (a run may be given once)");
      }
    }
    scenarios.push_back(std::move(sc.value()));
  }
  return scenarios;
}

// The preset the fit starts from and whose values the file holds: --hardware; else the runs'
// own preset; else kDefaultHardware. One fit moves every run's key by one shift from the run's
// own value, so with runs on several GPUs the fitted value is one GPU's only if every preset
// starts it at the same value (the serving keys, which every preset shares), or with
// --from-defaults (every run starts at kvsim's built-in value). Otherwise which GPU the
// written value belongs to is the user's choice, and no choice is made for them.
Result<std::string> StartingHardware(const CalibrateArgs& a, const std::vector<Scenario>& runs,
                                     const std::vector<std::string>& fit_keys) {
  // Distinct presets of the runs, in order, with their run counts (names compare without
  // case, as the loader finds presets).
  std::vector<std::pair<std::string, int>> presets;
  for (const Scenario& sc : runs) {
    const std::string p = RunPreset(sc);
    auto it = std::find_if(presets.begin(), presets.end(),
                           [&](const auto& e) { return Lower(e.first) == Lower(p); });
    if (it == presets.end()) {
      presets.emplace_back(p, 1);
    } else {
      ++it->second;
    }
  }
  std::vector<std::string> parts;
  for (const auto& [p, n] : presets) parts.push_back(p + " (" + Plural(n, "run") + ")");
  const std::string preset_list = Join(parts);

  if (!a.hardware.empty()) {
    for (const auto& [p, n] : presets) {
      if (Lower(p) == Lower(a.hardware)) continue;
      std::cerr << fmt::format(
          "kvsim: note: --hardware {}: runs on {} ({}) keep their own values of the fitted keys "
          "and move by the fitted shift; the file holds {}'s values plus that shift\n",
          a.hardware, p, Plural(n, "run"), a.hardware);
    }
    return a.hardware;
  }
  if (presets.empty()) return std::string(kDefaultHardware);
  if (presets.size() == 1) {
    std::cout << "hardware: " << presets[0].first
              << " (the runs' own preset; --hardware to choose)\n";
    return presets[0].first;
  }
  if (!a.ops.empty() || !a.gpu_validate.empty()) {
    return Status::Error("mixed_hardware",
                         "--runs use several GPUs (" + preset_list +
                             ") and --ops / --gpu-validate measure one: give --hardware PRESET");
  }
  if (a.from_defaults) {
    std::cout << "hardware: runs on " << preset_list
              << "; --from-defaults: every run starts the fitted keys at kvsim's built-in "
                 "values\n";
    return presets[0].first;
  }
  for (const std::string& k : fit_keys) {
    std::vector<std::string> values;
    bool differ = false;
    double first = 0;
    for (size_t i = 0; i < presets.size(); ++i) {
      auto hw = PresetHardware(presets[i].first);
      if (!hw.ok()) return hw.status();
      double v = 0;
      GetHardwareKey(hw.value(), k, &v);
      if (i == 0) first = v;
      differ = differ || v != first;
      values.push_back(fmt::format("{} {:.6g}", presets[i].first, v));
    }
    if (differ) {
      return Status::Error(
          "mixed_hardware",
          "--runs use several GPUs (" + preset_list + ") whose presets start " + k +
              " at different values (" + Join(values) +
              "); one fit moves every run's value by the same shift, so the fitted " + k +
              " would be no one GPU's. Calibrate each GPU's runs on their own, give "
              "--hardware PRESET (the file then holds that preset's value plus the shift), or "
              "--from-defaults (one value for every GPU)");
    }
  }
  std::cout << "hardware: runs on " << preset_list
            << "; the fitted keys start at the same value on each, written as " << presets[0].first
            << "'s\n";
  return presets[0].first;
}

void RunCalibrate(const CalibrateArgs& a) {
  if (a.ops.empty() && a.runs.empty() && a.gpu_validate.empty()) {
    ReportError(Status::Error("missing_input", "calibrate: give --ops, --runs or --gpu-validate"),
                false);
    return;
  }
  // The --fit keys, checked before anything is loaded or simulated; then the runs, whose
  // presets decide where the fit starts when --hardware is not given.
  auto fit_keys_or = FitKeys(a.fit);
  if (!fit_keys_or.ok()) return (void)ReportError(fit_keys_or.status(), false);
  const std::vector<std::string>& fit_keys = fit_keys_or.value();
  auto runs = LoadRuns(a.runs);
  if (!runs.ok()) return (void)ReportError(runs.status(), false);
  std::vector<Scenario>& scenarios = runs.value();
  auto hardware_or = StartingHardware(a, scenarios, fit_keys);
  if (!hardware_or.ok()) return (void)ReportError(hardware_or.status(), false);
  const std::string hardware = hardware_or.value();

  auto start = PresetHardware(hardware);
  if (!start.ok()) return (void)ReportError(start.status(), false);
  HardwareSpec hw = start.value();
  std::vector<std::pair<std::string, double>> fitted;
  std::vector<std::string> provenance;
  BoundNotes notes;
  const double peak = hw.dense_tflops_bf16 * 1e12;
  const double inf = std::numeric_limits<double>::infinity();

  if (!a.ops.empty()) {
    auto ops_path = LocateInput("--ops", a.ops);
    if (!ops_path.ok()) return (void)ReportError(ops_path.status(), false);
    auto text = ReadFile(ops_path.value());
    if (!text.ok()) return (void)ReportError(text.status(), false);
    const HardwareSpec base = hw;
    auto resolve = [&](const std::string& model,
                       int64_t tp) -> Result<std::pair<std::vector<CostModel::Linear>, double>> {
      auto m = LoadModelPreset(PresetNameFor(model));
      if (!m.ok()) {
        return Status::Error("unknown_model", "model " + model + " has no preset " +
                                                  PresetNameFor(model) + ": " +
                                                  m.status().message());
      }
      PlannerConfig pc;
      pc.tp = tp;
      pc.kv_memory_bytes = 1LL << 30;
      auto plan = PlanKvCache(m.value(), nullptr, pc);
      if (!plan.ok()) return plan.status();
      CostModel cm(m.value(), plan.value(), base);
      // The profiles time one decoder layer: one GEMM of each kind.
      std::vector<CostModel::Linear> layer = cm.linears();
      for (auto& l : layer) l.count = 1;
      return std::make_pair(layer, static_cast<double>(ElementBytes(m->dtype)));
    };
    auto samples = ParseOperatorProfiles(text.value(), ops_path.value(), resolve);
    if (!samples.ok()) return (void)ReportError(samples.status(), false);
    // Only this GPU's profiles: --ops-gpu, else the preset name's first word ("h100").
    std::string gpu =
        a.ops_gpu.empty() ? Lower(hardware.substr(0, hardware.find('-'))) : Lower(a.ops_gpu);
    std::vector<OperatorSample> mine;
    std::vector<std::string> gpus;
    for (auto& s : samples.value()) {
      if (Lower(s.gpu) == gpu) mine.push_back(s);
      if (std::find(gpus.begin(), gpus.end(), Lower(s.gpu)) == gpus.end()) {
        gpus.push_back(Lower(s.gpu));
      }
    }
    if (mine.empty()) {
      return (void)ReportError(
          Status::Error("no_samples", ops_path.value() + ": no profiles of gpu " + gpu +
                                          " (the file has: " + Join(gpus) +
                                          "; choose with --ops-gpu or --hardware)"),
          false);
    }
    // Three keys (mbu, mfu, layer_overhead_us); each profile row is one measurement.
    if (!CheckDetermined(a, {"mbu", "mfu", "layer_overhead_us"}, mine.size(),
                         "--ops " + a.ops + " (gpu " + gpu + ")", "one per profile row")) {
      return;
    }
    auto fit = FitOperatorProfiles(hw, mine, peak);
    if (!fit.ok()) {
      return (void)ReportError(Status::Error(fit.status().code(), a.ops + " (gpu " + gpu + "): " +
                                                                      fit.status().message()),
                               false);
    }
    hw.mbu = fit->mbu;
    hw.mfu = fit->mfu;
    hw.layer_overhead_us = fit->layer_overhead_us;
    std::cout << fmt::format(
        "operator profiles {} ({} samples on {}): mbu {:.3f}, mfu {:.3f}, "
        "layer_overhead_us {:.1f}\n",
        a.ops, mine.size(), gpu, hw.mbu, hw.mfu, hw.layer_overhead_us);
    // Efficiencies are shares of a peak (at most 1); the overhead is at least 0.
    for (const auto& [k, v, lo, hi] :
         {std::tuple{"mbu", hw.mbu, 0.0, 1.0}, std::tuple{"mfu", hw.mfu, 0.0, 1.0},
          std::tuple{"layer_overhead_us", hw.layer_overhead_us, 0.0, inf}}) {
      if (const std::string n = notes.Check(k, v, lo, hi); !n.empty()) {
        std::cout << fmt::format("  {} = {:.6g}  ({})\n", k, v, n);
      }
    }
    PrintErrors("  per-layer time, model vs measured:", fit->errors);
    std::vector<std::string> models;  // leave-one-out leaves out one model (label before " N=")
    for (const OperatorSample& s : mine) {
      const std::string m = s.label.substr(0, s.label.find(" N="));
      if (std::find(models.begin(), models.end(), m) == models.end()) models.push_back(m);
    }
    if (models.size() == 1) {
      std::cout << "  (one model: nothing to leave out, so leave-one-out repeats in-sample)\n";
    }
    fitted.insert(fitted.end(),
                  {{"mbu", hw.mbu}, {"mfu", hw.mfu}, {"layer_overhead_us", hw.layer_overhead_us}});
    provenance.push_back("operator profiles " + a.ops + " (" + gpu + ")");
  }

  if (!a.gpu_validate.empty()) {
    auto gv_path = LocateInput("--gpu-validate", a.gpu_validate);
    if (!gv_path.ok()) return (void)ReportError(gv_path.status(), false);
    auto text = ReadFile(gv_path.value());
    if (!text.ok()) return (void)ReportError(text.status(), false);
    DType model_dtype = DType::kBFloat16;
    auto gemm = ParseGemmSamples(text.value(), gv_path.value(), &model_dtype);
    if (!gemm.ok()) return (void)ReportError(gemm.status(), false);
    auto fit = FitGpuValidate(text.value(), gv_path.value(), hw.hbm_bandwidth_gbps * 1e9);
    const bool no_attention = !fit.ok() && (fit.status().code() == "no_attention_timings" ||
                                            fit.status().code() == "too_few_samples");
    if (!fit.ok() && !(no_attention && !gemm->empty())) {
      return (void)ReportError(fit.status(), false);
    }
    if (fit.ok()) {
      hw.attention_mbu = fit->attention_mbu;
      hw.attention_call_us = fit->attention_call_us;
      std::cout << fmt::format("gpu-validate {}: attention_mbu {:.3f}, attention_call_us {:.2f}\n",
                               a.gpu_validate, hw.attention_mbu, hw.attention_call_us);
      for (const auto& [k, v, lo, hi] :
           {std::tuple{"attention_mbu", hw.attention_mbu, 0.0, 1.0},
            std::tuple{"attention_call_us", hw.attention_call_us, 0.0, inf}}) {
        if (const std::string n = notes.Check(k, v, lo, hi); !n.empty()) {
          std::cout << fmt::format("  {} = {:.6g}  ({})\n", k, v, n);
        }
      }
      PrintErrors("  decode attention, model vs measured:", fit->errors);
      Upsert(fitted, "attention_mbu", hw.attention_mbu);
      Upsert(fitted, "attention_call_us", hw.attention_call_us);
    } else {
      std::cout << fmt::format(
          "gpu-validate {}: no decode-attention timings; attention "
          "coefficients not fitted\n",
          a.gpu_validate);
    }
    if (!gemm->empty()) {
      // Fit on the samples in the dtype the cost model prices the model's GEMMs in.
      std::vector<GemmSample> use;
      for (const GemmSample& g : gemm.value()) {
        if (g.shape.dtype == model_dtype) use.push_back(g);
      }
      auto gf = FitGemmSamples(hw, use);
      if (!gf.ok()) {
        return (void)ReportError(
            Status::Error(gf.status().code(), a.gpu_validate + ": gemm.rows (" +
                                                  std::string(DTypeName(model_dtype)) +
                                                  "): " + gf.status().message()),
            false);
      }
      hw.mbu = gf->mbu;  // start's value where the samples do not determine it
      hw.mfu = gf->mfu;
      std::cout << fmt::format(
          "gpu-validate {} GEMMs ({} {} samples): mbu {:.3f}, mfu {:.3f}{}, {:.2f} us per GEMM "
          "x {} GEMMs per layer = {:.1f} us\n",
          a.gpu_validate, use.size(), DTypeName(model_dtype), gf->mbu, gf->mfu,
          gf->has_moe ? fmt::format(", moe_mbu {:.3f}", gf->moe_mbu) : "", gf->fixed_us,
          gf->gemms_per_layer, gf->layer_overhead_us);
      auto check = [&](const char* key, bool has, double v, double hi) {
        if (!has) return;
        if (const std::string n = notes.Check(key, v, 0.0, hi); !n.empty()) {
          std::cout << fmt::format("  {} = {:.6g}  ({})\n", key, v, n);
        }
      };
      check("mbu", gf->has_mbu, gf->mbu, 1.0);
      check("mfu", gf->has_mfu, gf->mfu, 1.0);
      check("moe_mbu", gf->has_moe, gf->moe_mbu, 1.0);
      check("layer_overhead_us", a.ops.empty(), gf->layer_overhead_us, inf);
      PrintErrors("  GEMMs, model vs measured (leave-one-out: one GEMM kind left out):",
                  gf->errors);
      if (gf->has_mbu) Upsert(fitted, "mbu", gf->mbu);
      if (gf->has_mfu) Upsert(fitted, "mfu", gf->mfu);
      if (!gf->has_mbu || !gf->has_mfu) {
        std::cout << fmt::format("  not determined by these GEMMs (none bound by it), kept: {}\n",
                                 !gf->has_mbu ? "mbu" : "mfu");
      }
      if (gf->has_moe) {
        hw.moe_mbu = gf->moe_mbu;
        Upsert(fitted, "moe_mbu", gf->moe_mbu);
      }
      if (a.ops.empty()) {
        // Only the GEMM kernels' fixed cost: the layer's norms, rotary and residuals are not
        // timed, so this is a floor of the per-layer overhead.
        hw.layer_overhead_us = gf->layer_overhead_us;
        Upsert(fitted, "layer_overhead_us", gf->layer_overhead_us);
      } else {
        std::cout << "  layer_overhead_us kept from the operator profiles (whole layers)\n";
      }
    }
    provenance.push_back("gpu-validate " + a.gpu_validate);
  }

  if (!a.runs.empty()) {
    // Where the fit starts: kvsim's built-in values with --from-defaults (a preset's serving
    // keys were fitted on runs that a leave-one-out refit must not start from), else the
    // preset's. A key outside the standard list takes its range from this start too.
    const HardwareSpec start_values = a.from_defaults ? HardwareSpec{} : hw;
    std::vector<FitParameter> params;
    for (const std::string& k : fit_keys) {
      auto it = std::find_if(ServingFitParameters().begin(), ServingFitParameters().end(),
                             [&](const FitParameter& p) { return p.key == k; });
      if (it != ServingFitParameters().end()) {
        params.push_back(*it);
      } else {
        double v = 0;
        GetHardwareKey(start_values, k, &v);
        params.push_back({k, 0, std::max(1.0, 10 * v)});
      }
    }
    const std::vector<std::string> metrics = SplitCommas(a.metrics);
    std::vector<ServingMeasurement> measurements;
    std::vector<std::string> metrics_found;
    for (const Scenario& sc : scenarios) {
      for (const std::string& m : metrics) {
        for (const auto& [name, v] : sc.sim.reference.summary) {
          if (name != m) continue;
          measurements.push_back({sc.name, m, v});
          if (std::find(metrics_found.begin(), metrics_found.end(), m) == metrics_found.end()) {
            metrics_found.push_back(m);
          }
        }
      }
      // Per load stage too, when the run has stages and the reference gives them.
      const auto& ref_stages = sc.sim.reference.stages;
      if (a.stages && ref_stages.size() > 1 && ref_stages.size() == sc.sim.workload.stages.size()) {
        for (size_t k = 0; k < ref_stages.size(); ++k) {
          for (const std::string& m : metrics) {
            for (const auto& [name, v] : ref_stages[k]) {
              if (name == m) measurements.push_back({sc.name, fmt::format("stage{}.{}", k, m), v});
            }
          }
        }
      }
    }
    for (const std::string& m : metrics) {
      if (std::find(metrics_found.begin(), metrics_found.end(), m) == metrics_found.end()) {
        std::cerr << "kvsim: note: --metrics " << m << ": no run's reference has it\n";
      }
    }
    const size_t independent = IndependentMeasurements(measurements);
    if (independent == 0) {
      return (void)ReportError(
          Status::Error("no_measurements",
                        "--runs: no run's reference has any of --metrics " + a.metrics),
          false);
    }
    // --iterations 0 moves nothing: the file is the starting point, no fit to refuse.
    bool staged = false;
    for (const ServingMeasurement& m : measurements) {
      staged = staged || m.metric.rfind("stage", 0) == 0;
    }
    std::vector<std::string> keys;
    for (const FitParameter& p : params) keys.push_back(p.key);
    if (a.iterations > 0 &&
        !CheckDetermined(
            a, keys, independent, "--runs",
            fmt::format("{} x the means of {}{}", Plural(scenarios.size(), "run"),
                        Join(metrics_found),
                        staged ? ", per load stage where a run's stages are fitted" : ""))) {
      return;
    }
    for (const FitParameter& p : params) {
      double v = 0;
      GetHardwareKey(start_values, p.key, &v);
      SetHardwareKey(hw, p.key, v);
    }
    const HardwareSpec fit_start = hw;
    // One run's simulated metrics, in the order of its measurements.
    auto simulate_one = [&](const Scenario& base,
                            const HardwareSpec& trial) -> Result<std::vector<double>> {
      Scenario sc = base;
      // Each run keeps its own hardware (runs on other GPUs keep their presets' values);
      // the fit moves every run's key by the same amount from where it starts.
      for (const FitParameter& p : params) {
        double v = 0, v0 = 0, own = 0;
        GetHardwareKey(trial, p.key, &v);
        GetHardwareKey(fit_start, p.key, &v0);
        GetHardwareKey(sc.sim.hardware, p.key, &own);
        // From the defaults every run starts at the same value (its preset's is set aside).
        const double base_value = a.from_defaults ? v0 : own;
        SetHardwareKey(sc.sim.hardware, p.key, std::max(0.0, base_value + (v - v0)));
      }
      auto e = Engine::Create(sc);
      if (!e.ok()) return e.status();
      e.value()->Run();
      const RunSummary s = e.value()->Summary();
      const std::vector<MetricValues> stages =
          StageMetrics(e.value()->metrics().records(), StageDurations(sc.sim.workload.stages));
      std::vector<double> out;
      for (const ServingMeasurement& m : measurements) {
        if (m.run != sc.name) continue;
        double v = 0;
        if (m.metric.rfind("stage", 0) == 0) {
          const size_t dot = m.metric.find('.');
          const size_t k = std::stoul(m.metric.substr(5, dot - 5));
          for (const auto& [name, value] : stages.at(k)) {
            if (name == m.metric.substr(dot + 1)) v = value;
          }
        } else {
          SimulatedMetric(s, m.metric, &v);
        }
        out.push_back(v);
      }
      return out;
    };
    // Every evaluation simulates all runs: they are independent, so they run on all cores
    // (each run is deterministic, and the results are joined in the runs' order).
    const size_t workers = std::max<size_t>(
        1, std::min<size_t>(scenarios.size(), std::thread::hardware_concurrency()));
    auto simulate = [&](const HardwareSpec& trial) -> Result<std::vector<double>> {
      std::vector<std::optional<Result<std::vector<double>>>> per_run(scenarios.size());
      std::atomic<size_t> next{0};
      auto work = [&] {
        for (size_t i = next++; i < scenarios.size(); i = next++) {
          per_run[i] = simulate_one(scenarios[i], trial);
        }
      };
      std::vector<std::thread> pool;
      for (size_t t = 1; t < workers; ++t) pool.emplace_back(work);
      work();
      for (std::thread& t : pool) t.join();
      std::vector<double> out;
      for (auto& r : per_run) {
        if (!r->ok()) return r->status();
        out.insert(out.end(), r->value().begin(), r->value().end());
      }
      return out;
    };
    auto fit = FitServingRuns(hw, params, measurements, simulate, a.iterations, a.prior);
    if (!fit.ok()) return (void)ReportError(fit.status(), false);
    hw = fit->hw;
    std::cout << fmt::format(
        "serving runs ({}, {}, {} independent, {}, {}):\n", Plural(scenarios.size(), "run"),
        Plural(measurements.size(), "measurement"), independent, Plural(params.size(), "key"),
        Plural(static_cast<size_t>(fit->evaluations), "simulation"));
    if (a.iterations == 0) {
      std::cout << "  --iterations 0: nothing fitted, these are the starting values\n";
    }
    for (size_t i = 0; i < fit->values.size(); ++i) {
      const auto& [k, v] = fit->values[i];
      if (a.iterations > 0) notes.Check(k, v, params[i].lower, params[i].upper);
      std::cout << fmt::format("  {} = {:.6g}{}\n", k, v, notes.Suffix(k));
    }
    PrintErrors("  metrics, simulated vs measured (leave-one-out: linearised at the fit):",
                fit->errors);
    if (scenarios.size() == 1) {
      std::cout << "  (one run: nothing to leave out, so leave-one-out repeats in-sample)\n";
    }
    for (const auto& kv : fit->values) Upsert(fitted, kv.first, kv.second);
    provenance.push_back(Plural(scenarios.size(), "serving run"));
  }

  if (!a.out.empty()) {
    std::string prov = "fitted on: ";
    for (size_t i = 0; i < provenance.size(); ++i) prov += (i ? "; " : "") + provenance[i];
    std::ofstream f(a.out, std::ios::binary);
    if (!f) return (void)ReportError(Status::Error("io_error", a.out + ": cannot write"), false);
    f << HardwareFileYaml("", prov, fitted, notes.all());
    std::cout << "wrote " << a.out << "\n";
  }
}

}  // namespace

void RegisterCalibrate(CLI::App& app) {
  static CalibrateArgs a;
  CLI::App* cmd = app.add_subcommand(
      "calibrate", "fit the step-time model's coefficients to measurements; write a hardware file");
  cmd->footer(
      "Independent measurements: a --runs fit has one per run and --metrics mean (TTFT, TPOT, "
      "E2E by default), or per load stage and metric where a run's stages are fitted (the "
      "whole-run mean is then not counted again); an --ops fit (mbu, mfu, layer_overhead_us) "
      "has one per profile row of the GPU. More keys than measurements is refused (exit 2) "
      "unless --force. A key that ends on a bound is marked \"at its ... bound: not a fit\" in "
      "the output and the written file, with a warning on stderr. Input files are looked for "
      "as given, then in $KVSIM_TRACE_DIR and the shared data folder (" +
      std::string(kSharedDataDir) + ", its fidelity/), as given and by file name.");
  cmd->add_option("--ops", a.ops, "operator profiles (Vidur format: vidur_ops.json)");
  cmd->add_option("--ops-gpu", a.ops_gpu, "which GPU's profiles to fit (default: from --hardware)");
  cmd->add_option("--runs", a.runs, "measured serving runs: scenarios with a reference: block");
  cmd->add_option("--gpu-validate", a.gpu_validate,
                  "kvsim gpu-validate --json output: decode attention and the dense GEMMs");
  cmd->add_option("--hardware", a.hardware,
                  "preset the fit starts from and whose values the file holds (default: the "
                  "--runs' own hardware.preset; runs on several GPUs need it unless the fitted "
                  "keys start equal on each, or --from-defaults; without --runs: H100-SXM)");
  cmd->add_option("--fit", a.fit,
                  fmt::format("hardware keys to fit on the runs, comma separated (default: all "
                              "{} with physical bounds: efficiencies, CPU, intake, output and "
                              "GPU fixed costs)",
                              ServingFitParameters().size()));
  cmd->add_option("--metrics", a.metrics, "reference metrics to fit (comma separated)")
      ->capture_default_str();
  cmd->add_option("--iterations", a.iterations,
                  "Levenberg-Marquardt iterations (0: write the starting values, fit nothing)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--prior", a.prior,
                  "weight of the pull towards the starting values in a --runs fit (0: none)")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  cmd->add_flag("--from-defaults", a.from_defaults,
                "start a --runs fit from kvsim's default values instead of the preset's");
  cmd->add_flag("--force", a.force,
                "fit even when there are more keys than independent measurements (a warning)");
  cmd->add_option("-o,--out", a.out, "hardware YAML to write");
  cmd->add_flag("--stages,!--no-stages", a.stages,
                "also fit each load stage's measured metrics (default on)");
  cmd->callback([] { RunCalibrate(a); });
}

}  // namespace kvsim::cli
