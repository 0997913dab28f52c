// kvsim calibrate [--ops PROFILES.json] [--runs SCENARIO...] [--gpu-validate V.json]
//                 [--hardware PRESET] [--fit KEY,...] [--metrics NAME,...] [-o OUT.yaml]
// Fits the step-time model's coefficients (sim/calibrate/calibrate.h) to measurements:
// operator profiles (Vidur's format) fit mbu, mfu, layer_overhead_us; gpu-validate JSON fits
// attention_mbu, attention_call_us from its decode-attention timings and mbu, mfu, moe_mbu and
// the GEMMs' share of layer_overhead_us from its cuBLASLt GEMM timings (sim/calibrate/
// gemm_shapes.h; with --ops too, the whole-layer profiles keep layer_overhead_us); measured
// serving runs (scenarios with `reference:`) fit the --fit keys (default: the CPU, intake,
// output and efficiency terms) by simulating them; each run keeps its own preset's
// coefficients and the fit moves them all by one shift.
// Prints in-sample and leave-one-out errors and writes the fitted keys as a hardware file
// (merge it with `hardware: {preset: ..., file: OUT.yaml}`).
// Exit codes: 0 fitted; 2 bad input (files, keys, a scenario without `reference:`).
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>

#include "apps/kvsim/commands.h"
#include "sim/calibrate/calibrate.h"
#include "sim/calibrate/gemm_shapes.h"
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
  std::string hardware = "H100-SXM";
  std::string fit;
  std::string metrics = "ttft_mean_ms,tpot_mean_ms,e2e_mean_ms";
  int iterations = 6;
  double prior = 0;
  bool from_defaults = false;
  bool stages = true;
  std::string out;
};

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
  std::cout << fmt::format("  median |error|: in-sample {:.1f}%, leave-one-out {:.1f}%; "
                           "worst {:.1f}% / {:.1f}%\n",
                           100 * Median(in), 100 * Median(loo),
                           100 * *std::max_element(in.begin(), in.end()),
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

void RunCalibrate(const CalibrateArgs& a) {
  if (a.ops.empty() && a.runs.empty() && a.gpu_validate.empty()) {
    ReportError(Status::Error("missing_input", "calibrate: give --ops, --runs or --gpu-validate"),
                false);
    return;
  }
  auto start = PresetHardware(a.hardware);
  if (!start.ok()) return (void)ReportError(start.status(), false);
  HardwareSpec hw = start.value();
  std::vector<std::pair<std::string, double>> fitted;
  std::vector<std::string> provenance;
  const double peak = hw.dense_tflops_bf16 * 1e12;

  if (!a.ops.empty()) {
    auto text = ReadFile(a.ops);
    if (!text.ok()) return (void)ReportError(text.status(), false);
    const HardwareSpec base = hw;
    auto resolve = [&](const std::string& model, int64_t tp)
        -> Result<std::pair<std::vector<CostModel::Linear>, double>> {
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
    auto samples = ParseOperatorProfiles(text.value(), a.ops, resolve);
    if (!samples.ok()) return (void)ReportError(samples.status(), false);
    // Only this GPU's profiles: --ops-gpu, else the preset name's first word ("h100").
    std::string gpu = a.ops_gpu.empty() ? Lower(a.hardware.substr(0, a.hardware.find('-')))
                                        : Lower(a.ops_gpu);
    std::vector<OperatorSample> mine;
    for (auto& s : samples.value()) {
      if (Lower(s.gpu) == gpu) mine.push_back(s);
    }
    auto fit = FitOperatorProfiles(hw, mine, peak);
    if (!fit.ok()) {
      return (void)ReportError(Status::Error(fit.status().code(),
                                             a.ops + " (gpu " + gpu + "): " + fit.status().message()),
                               false);
    }
    hw.mbu = fit->mbu;
    hw.mfu = fit->mfu;
    hw.layer_overhead_us = fit->layer_overhead_us;
    std::cout << fmt::format("operator profiles {} ({} samples on {}): mbu {:.3f}, mfu {:.3f}, "
                             "layer_overhead_us {:.1f}\n",
                             a.ops, mine.size(), gpu, hw.mbu, hw.mfu, hw.layer_overhead_us);
    PrintErrors("  per-layer time, model vs measured:", fit->errors);
    fitted.insert(fitted.end(), {{"mbu", hw.mbu}, {"mfu", hw.mfu},
                                 {"layer_overhead_us", hw.layer_overhead_us}});
    provenance.push_back("operator profiles " + a.ops + " (" + gpu + ")");
  }

  if (!a.gpu_validate.empty()) {
    auto text = ReadFile(a.gpu_validate);
    if (!text.ok()) return (void)ReportError(text.status(), false);
    DType model_dtype = DType::kBFloat16;
    auto gemm = ParseGemmSamples(text.value(), a.gpu_validate, &model_dtype);
    if (!gemm.ok()) return (void)ReportError(gemm.status(), false);
    auto fit = FitGpuValidate(text.value(), a.gpu_validate, hw.hbm_bandwidth_gbps * 1e9);
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
    if (a.fit.empty()) {
      params = ServingFitParameters();
    } else {
      for (const std::string& k : SplitCommas(a.fit)) {
        auto it = std::find_if(ServingFitParameters().begin(), ServingFitParameters().end(),
                               [&](const FitParameter& p) { return p.key == k; });
        double v = 0;
        if (it != ServingFitParameters().end()) {
          params.push_back(*it);
        } else if (GetHardwareKey(start_values, k, &v)) {
          params.push_back({k, 0, std::max(1.0, 10 * v)});
        } else {
          return (void)ReportError(
              Status::Error("unknown_key", "--fit: " + k + " is not a fittable hardware key"), false);
        }
      }
    }
    const std::vector<std::string> metrics = SplitCommas(a.metrics);
    std::vector<Scenario> scenarios;
    std::vector<ServingMeasurement> measurements;
    for (const std::string& path : a.runs) {
      auto tree = LoadScenarioTree({path, {}});
      if (!tree.ok()) return (void)ReportError(tree.status(), false);
      auto sc = ParseScenario(tree.value(), path);
      if (!sc.ok()) return (void)ReportError(sc.status(), false);
      if (sc->sim.reference.summary.empty()) {
        return (void)ReportError(
            Status::Error("no_reference", path + ": no `reference:` summary to fit against"), false);
      }
      for (const std::string& m : metrics) {
        for (const auto& [name, v] : sc->sim.reference.summary) {
          if (name == m) measurements.push_back({sc->name, m, v});
        }
      }
      // Per load stage too, when the run has stages and the reference gives them.
      const auto& ref_stages = sc->sim.reference.stages;
      if (a.stages && ref_stages.size() > 1 &&
          ref_stages.size() == sc->sim.workload.stages.size()) {
        for (size_t k = 0; k < ref_stages.size(); ++k) {
          for (const std::string& m : metrics) {
            for (const auto& [name, v] : ref_stages[k]) {
              if (name == m) measurements.push_back({sc->name, fmt::format("stage{}.{}", k, m), v});
            }
          }
        }
      }
      scenarios.push_back(std::move(sc.value()));
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
    std::cout << fmt::format("serving runs ({} runs, {} measurements, {} simulations):\n",
                             scenarios.size(), measurements.size(), fit->evaluations);
    for (const auto& [k, v] : fit->values) std::cout << fmt::format("  {} = {:.6g}\n", k, v);
    PrintErrors("  metrics, simulated vs measured (leave-one-out: linearised at the fit):",
                fit->errors);
    for (const auto& kv : fit->values) {
      auto it = std::find_if(fitted.begin(), fitted.end(),
                             [&](const auto& f) { return f.first == kv.first; });
      if (it != fitted.end()) {
        it->second = kv.second;
      } else {
        fitted.push_back(kv);
      }
    }
    provenance.push_back(fmt::format("{} serving runs", scenarios.size()));
  }

  if (!a.out.empty()) {
    std::string prov = "fitted on: ";
    for (size_t i = 0; i < provenance.size(); ++i) prov += (i ? "; " : "") + provenance[i];
    std::ofstream f(a.out, std::ios::binary);
    if (!f) return (void)ReportError(Status::Error("io_error", a.out + ": cannot write"), false);
    f << HardwareFileYaml("", prov, fitted);
    std::cout << "wrote " << a.out << "\n";
  }
}

}  // namespace

void RegisterCalibrate(CLI::App& app) {
  static CalibrateArgs a;
  CLI::App* cmd = app.add_subcommand(
      "calibrate", "fit the step-time model's coefficients to measurements; write a hardware file");
  cmd->add_option("--ops", a.ops, "operator profiles (Vidur format: vidur_ops.json)");
  cmd->add_option("--ops-gpu", a.ops_gpu, "which GPU's profiles to fit (default: from --hardware)");
  cmd->add_option("--runs", a.runs, "measured serving runs: scenarios with a reference: block");
  cmd->add_option("--gpu-validate", a.gpu_validate,
                  "kvsim gpu-validate --json output: decode attention and the dense GEMMs");
  cmd->add_option("--hardware", a.hardware, "preset the fit starts from")->capture_default_str();
  cmd->add_option("--fit", a.fit, "hardware keys to fit on the runs (comma separated)");
  cmd->add_option("--metrics", a.metrics, "reference metrics to fit (comma separated)")->capture_default_str();
  cmd->add_option("--iterations", a.iterations, "Levenberg-Marquardt iterations")->capture_default_str();
  cmd->add_option("--prior", a.prior,
                  "weight of the pull towards the starting values in a --runs fit (0: none)")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  cmd->add_flag("--from-defaults", a.from_defaults,
                "start a --runs fit from kvsim's default values instead of the preset's");
  cmd->add_option("-o,--out", a.out, "hardware YAML to write");
  cmd->add_flag("--stages,!--no-stages", a.stages,
                "also fit each load stage's measured metrics (default on)");
  cmd->callback([] { RunCalibrate(a); });
}

}  // namespace kvsim::cli
