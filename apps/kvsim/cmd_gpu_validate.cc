// kvsim gpu-validate: allocate the scenario plan's KV layouts (and a fixed matrix of awkward
// ones) on the GPU, run the kernels over them, check every byte against the host
// references, time the kernels against the device's peak, a measured copy and the
// kernel-time model, and optionally calibrate the model (--calibrate OUT.yaml). With timing on,
// it also times the model's linear-layer GEMMs with cuBLASLt (sim/calibrate/gemm_shapes.h's
// shapes, kernels/validate/gemm_suite.h) and fits the step-time model's dense coefficients
// (mbu, mfu, moe_mbu, the GEMMs' share of layer_overhead_us) on them.
// Exit codes: 0 all checks passed, 1 a check failed, 2 bad input, 3 no CUDA device.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "apps/kvsim/commands.h"
#include "core/hardware_profile.h"
#include "kernels/device.h"
#include "kernels/validate/calibrate.h"
#include "kernels/validate/correctness.h"
#include "kernels/validate/gemm_suite.h"
#include "kernels/validate/gpu_suite.h"
#include "kernels/validate/layout_cases.h"
#include "sim/calibrate/gemm_shapes.h"
#include "sim/scenario/scenario_loader.h"

namespace kvsim::cli {
namespace {

using kernels::CaseReport;
using kernels::LayoutCase;

struct GpuValidateArgs {
  ScenarioArgs scenario;
  std::string json_out;
  std::string calibrate_out;
  bool quick = false;
  bool no_timing = false;
  bool no_matrix = false;
  bool host = false;
  bool no_gemm = false;
  std::vector<int64_t> gemm_tokens;  // empty: DefaultGemmTokens() ({1, 32, 512} with --quick)
  int repeats = 9;
};

// One case per distinct layer layout of the plan, scaled to a few hundred tokens.
std::vector<LayoutCase> PlanCases(const Scenario& sc, const KvCachePlan& plan,
                                  std::vector<std::string>* notes) {
  std::vector<LayoutCase> out;
  std::map<std::string, size_t> seen;
  std::map<size_t, int> mamba;
  const int64_t q_heads = sc.model.compute.num_attention_heads;
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    for (int li : plan.groups[g].layers) {
      const PlannedLayer& pl = plan.layers[static_cast<size_t>(li)];
      if (pl.spec.kind == LayerKind::kMamba) {
        ++mamba[g];
        continue;
      }
      KvLayout view = plan.LayoutForLayer(li);
      const int64_t m = kernels::CaseManagerBlocks(view.manager_block_tokens(), 320);
      view.num_blocks = m * view.kernel_split;
      const std::string key = kernels::DescribeLayout(view) + std::string(DTypeName(pl.spec.dtype));
      auto it = seen.find(key);
      if (it != seen.end()) {
        out[it->second].name += "," + pl.name;
        continue;
      }
      LayoutCase c;
      c.origin = "plan";
      c.name = fmt::format("group {} {} layer {}", g, LayerKindName(pl.spec.kind), pl.name);
      c.view = view;
      c.alloc_bytes = std::max(m * view.manager_page_bytes(), kernels::LayoutEndByte(view, 0));
      c.dtype = pl.spec.dtype;
      c.head_size = pl.spec.head_size;
      const int64_t kv_total = sc.model.layers[0].num_kv_heads;
      c.q_per_kv = (q_heads > 0 && kv_total > 0 && q_heads % kv_total == 0) ? q_heads / kv_total : 1;
      seen[key] = out.size();
      out.push_back(c);
    }
  }
  for (const auto& [g, n] : mamba)
    notes->push_back(fmt::format("group {}: {} Mamba layer(s) skipped: state pages have no KV "
                                 "kernel (their bytes are foreign bytes of shared slabs)", g, n));
  return out;
}

// The GEMM part of the timing: times the model's GEMM shapes, fits the dense coefficients on
// the samples in the dtype the cost model prices the model in, and returns the hardware keys
// for the profile (empty when nothing was fitted). False when the timing itself failed.
bool TimeGemms(const GpuValidateArgs& a, const Scenario& sc, const KvCachePlan& plan,
               std::ostream& out, nlohmann::json& j,
               std::vector<std::pair<std::string, double>>* keys) {
  std::vector<int64_t> tokens = a.gemm_tokens;
  if (tokens.empty()) tokens = a.quick ? std::vector<int64_t>{1, 32, 512} : DefaultGemmTokens();
  auto shapes = ModelGemmShapes(sc.model, plan, tokens);
  if (!shapes.ok()) {
    out << "\nGEMM timing skipped: " << shapes.status().message() << "\n";
    j["gemm"] = {{"skipped_all", shapes.status().message()}};
    return true;
  }
  std::vector<kernels::GemmCase> cases;
  for (const GemmShape& g : shapes.value()) {
    cases.push_back({g.name, g.tokens, g.m, g.n, g.k, g.groups, g.grouped, g.dtype});
  }
  kernels::GemmTimingOptions go;
  go.repeats = a.repeats;
  auto rep = kernels::RunGemmTimings(cases, go);
  if (!rep.ok()) {
    out << "GEMM timing failed: " << rep.status().message() << "\n";
    j["gemm"] = {{"error", rep.status().message()}};
    return false;
  }
  const HardwareSpec& hw = sc.sim.hardware;
  const DType model_dtype = IsFp8(sc.model.dtype) ? DType::kFp8E4M3 : DType::kBFloat16;
  out << fmt::format(
      "\nGEMMs of {} (tp {}, cuBLASLt, median of {}, L2 flushed; model = the "
      "step-time model on {}, no fixed cost)\n",
      sc.model.name, plan.config.tp, a.repeats, hw.name);
  out << fmt::format("{:<16} {:<9} {:>6} {:>6} {:>7} {:>7} {:>10} {:>8} {:>7} {:>7}\n", "gemm",
                     "dtype", "groups", "M", "N", "K", "us", "TFLOP/s", "GB/s", "/model");
  std::vector<GemmSample> samples;
  nlohmann::json extra = nlohmann::json::array();
  for (const auto& r : rep->rows) {
    const kernels::TimingSample& t = r.sample;
    GemmSample gs;
    gs.shape = {t.variant, t.tokens, t.m, t.n, t.k, t.groups, t.grouped, t.dtype};
    gs.seconds = t.seconds;
    const double model_s = GemmModelSeconds(hw, gs.shape, 0);
    out << fmt::format(
        "{:<16} {:<9} {:>6} {:>6} {:>7} {:>7} {:>10.1f} {:>8.1f} {:>7.0f} {:>7.3f}\n", t.variant,
        DTypeName(t.dtype), t.groups, t.m, t.n, t.k, t.seconds * 1e6, t.flops / t.seconds / 1e12,
        r.gbps, t.seconds / model_s);
    samples.push_back(gs);
    extra.push_back({{"min_s", r.min_s},
                     {"max_s", r.max_s},
                     {"tflops", t.flops / t.seconds / 1e12},
                     {"gbps", r.gbps},
                     {"model_s", model_s}});
  }
  nlohmann::json rows = GemmSamplesToJson(samples);
  for (size_t i = 0; i < rows.size(); ++i) rows[i].update(extra[i]);
  nlohmann::json skipped = nlohmann::json::array();
  for (const auto& sk : rep->skipped) {
    out << fmt::format("  skipped {} {} M={} N={} K={}: {}\n", sk.gemm.name,
                       DTypeName(sk.gemm.dtype), sk.gemm.m, sk.gemm.n, sk.gemm.k, sk.reason);
    skipped.push_back({{"name", sk.gemm.name},
                       {"dtype", std::string(DTypeName(sk.gemm.dtype))},
                       {"m", sk.gemm.m},
                       {"n", sk.gemm.n},
                       {"k", sk.gemm.k},
                       {"groups", sk.gemm.groups},
                       {"reason", sk.reason}});
  }
  j["gemm"] = {{"model", sc.model.name},
               {"tp", plan.config.tp},
               {"model_dtype", std::string(DTypeName(model_dtype))},
               {"rows", rows},
               {"skipped", skipped}};

  std::vector<GemmSample> fit_on;
  for (const auto& g : samples) {
    if (g.shape.dtype == model_dtype) fit_on.push_back(g);
  }
  auto fit = FitGemmSamples(hw, fit_on);
  if (!fit.ok()) {
    out << "GEMM fit skipped: " << fit.status().message() << "\n";
    return true;
  }
  std::vector<double> in, loo;
  for (const auto& e : fit->errors) {
    in.push_back(std::abs(e.in_sample));
    loo.push_back(std::abs(e.leave_one_out));
  }
  std::sort(in.begin(), in.end());
  std::sort(loo.begin(), loo.end());
  out << fmt::format(
      "dense fit on {} {} GEMMs: mbu {:.3f}, mfu {:.3f}{}, {:.2f} us per GEMM "
      "({} GEMMs per layer: layer_overhead_us >= {:.1f}); |model/measured - 1| "
      "median {:.1f}% max {:.1f}%, leave-one-kind-out median {:.1f}% max {:.1f}%\n",
      fit_on.size(), DTypeName(model_dtype), fit->mbu, fit->mfu,
      fit->has_moe ? fmt::format(", moe_mbu {:.3f}", fit->moe_mbu) : "", fit->fixed_us,
      fit->gemms_per_layer, fit->layer_overhead_us, 100 * in[in.size() / 2], 100 * in.back(),
      100 * loo[loo.size() / 2], 100 * loo.back());
  j["gemm"]["fit"] = {{"dtype", std::string(DTypeName(model_dtype))},
                      {"mbu", fit->has_mbu ? nlohmann::json(fit->mbu) : nlohmann::json()},
                      {"mfu", fit->has_mfu ? nlohmann::json(fit->mfu) : nlohmann::json()},
                      {"moe_mbu", fit->has_moe ? nlohmann::json(fit->moe_mbu) : nlohmann::json()},
                      {"fixed_us", fit->fixed_us},
                      {"gemms_per_layer", fit->gemms_per_layer},
                      {"median_abs_error", in[in.size() / 2]},
                      {"median_abs_error_leave_one_out", loo[loo.size() / 2]}};
  if (fit->has_mbu) keys->push_back({"mbu", fit->mbu});
  if (fit->has_mfu) keys->push_back({"mfu", fit->mfu});
  if (fit->has_moe) keys->push_back({"moe_mbu", fit->moe_mbu});
  keys->push_back({"layer_overhead_us", fit->layer_overhead_us});
  return true;
}

// The dense keys under the profile's `hardware:` map, in the step-time model's units (a
// hardware file merges them as they are; core/cost_model.h).
std::string DenseYaml(const std::vector<std::pair<std::string, double>>& keys) {
  if (keys.empty()) return "";
  std::string y =
      "  # Step-time model, dense part: fitted on the cuBLASLt GEMM timings. layer_overhead_us\n"
      "  # holds only the GEMM kernels' fixed cost (norms, rotary, residuals are not timed).\n";
  for (const auto& [k, v] : keys) y += fmt::format("  {}: {:.6g}\n", k, v);
  return y;
}

std::string Mark(bool ok) { return ok ? "ok" : "FAIL"; }
std::string CheckText(const kernels::CheckResult& c) {
  if (!c.ran) return "n/a";
  return Mark(c.passed);
}

nlohmann::json CaseJson(const CaseReport& r) {
  auto check = [](const kernels::CheckResult& c) {
    return nlohmann::json{{"ran", c.ran}, {"passed", c.passed}, {"note", c.note}};
  };
  return {{"name", r.name},
          {"origin", r.origin},
          {"layout", r.layout},
          {"alloc_bytes", r.alloc_bytes},
          {"tokens", r.tokens},
          {"vec_bytes", r.vec_bytes},
          {"append", check(r.append)},
          {"append_mismatched_bytes", r.append_mismatched_bytes},
          {"poisoned_bytes_changed", r.poisoned_bytes_changed},
          {"gather", check(r.gather)},
          {"convert", check(r.convert)},
          {"attention", check(r.attention)},
          {"attention_rel_err", r.attention_rel_err},
          {"passed", r.passed()}};
}

void RunGpuValidate(const GpuValidateArgs& a) {
  const bool json_stdout = a.json_out == "-";
  LoadOptions opts{a.scenario.scenario, a.scenario.sets};
  auto sc = LoadScenario(opts);
  if (!sc.ok()) return (void)ReportError(sc.status(), json_stdout);
  auto plan = sc->Plan();
  if (!plan.ok()) return (void)ReportError(plan.status(), json_stdout);

  kernels::DeviceInfo dev = kernels::QueryDevice();
  if (a.host) {  // the harness on the host references: no device, no timing
    dev.available = true;
    dev.name = "host references (--host)";
  }
  if (!dev.available) {
    const std::string message =
        dev.why + "; --host runs the same checks on the host references";
    std::cerr << "kvsim gpu-validate: " << message << "\n";
    if (!dev.detail.empty()) std::cerr << "  (" << dev.detail << ")\n";
    if (json_stdout) {
      std::cout << nlohmann::json{{"error", "no_cuda_device"}, {"message", message},
                                  {"detail", dev.detail}}
                       .dump(2)
                << "\n";
    }
    ExitCode() = 3;
    return;
  }
  std::ostream& out = json_stdout ? std::cerr : std::cout;
  out << fmt::format("device: {} (sm_{}{}, {} SMs, L2 {} MiB, {:.1f} GiB, HBM peak {:.0f} GB/s)\n",
                     dev.name, dev.cc_major, dev.cc_minor, dev.sm_count, dev.l2_bytes >> 20,
                     static_cast<double>(dev.global_memory_bytes) / (1 << 30),
                     dev.hbm_peak_bytes_per_s / 1e9);

  std::vector<std::string> notes;
  std::vector<LayoutCase> cases = PlanCases(sc.value(), plan.value(), &notes);
  const size_t plan_cases = cases.size();
  if (!a.no_matrix) {
    for (auto& c : kernels::AwkwardLayoutCases(a.quick ? 64 : 320)) cases.push_back(c);
  }
  std::unique_ptr<kernels::Executor> ex =
      a.host ? std::make_unique<kernels::HostExecutor>() : kernels::MakeCudaExecutor();
  nlohmann::json j;
  j["device"] = {{"name", dev.name},
                 {"sm_count", dev.sm_count},
                 {"l2_bytes", dev.l2_bytes},
                 {"hbm_peak_bytes_per_s", dev.hbm_peak_bytes_per_s}};
  j["scenario"] = sc->name;
  j["notes"] = notes;
  int failed = 0;
  out << fmt::format("\ncorrectness: {} plan layouts + {} matrix layouts\n", plan_cases,
                     cases.size() - plan_cases);
  out << fmt::format("{:<46} {:>6} {:>4} {:>7} {:>7} {:>7} {:>7} {:>9}\n", "case", "origin",
                     "vec", "append", "gather", "convert", "attn", "attn err");
  for (const auto& c : cases) {
    const CaseReport r = kernels::RunLayoutCase(c, *ex, {});
    if (!r.passed()) ++failed;
    out << fmt::format("{:<46} {:>6} {:>4} {:>7} {:>7} {:>7} {:>7} {:>9.2e}\n",
                       c.name.substr(0, 46), c.origin, r.vec_bytes, CheckText(r.append),
                       CheckText(r.gather), CheckText(r.convert), CheckText(r.attention),
                       r.attention_rel_err);
    for (const auto* ch : {&r.append, &r.gather, &r.convert, &r.attention}) {
      if (!ch->note.empty()) out << "    " << ch->note << "\n";
    }
    j["cases"].push_back(CaseJson(r));
  }
  for (const auto& n : notes) out << "note: " << n << "\n";
  out << fmt::format("correctness: {} of {} cases passed\n", cases.size() - failed, cases.size());

  if (!a.no_timing && !a.host) {
    kernels::TimingOptions to;
    to.quick = a.quick;
    to.repeats = a.repeats;
    to.model.name = dev.name + " (datasheet-style defaults)";
    to.model.hbm_peak_bytes_per_s = dev.hbm_peak_bytes_per_s;
    to.model.copy_bytes_per_s = 0.9 * dev.hbm_peak_bytes_per_s;
    to.model.move_bytes_per_s = 0.9 * to.model.copy_bytes_per_s;
    to.model.attn_bytes_per_s = 0.75 * dev.hbm_peak_bytes_per_s;
    auto tr = kernels::RunTimings(to);
    if (!tr.ok()) {
      out << "timing failed: " << tr.status().message() << "\n";
      j["timing_error"] = tr.status().message();
      ++failed;
    } else {
      const kernels::TimingReport& t = tr.value();
      out << fmt::format("\ntiming (median of {}, L2 flushed): cudaMemcpy D2D {:.0f} GB/s "
                         "({:.1f}% of peak), 16-B copy kernel {:.0f} GB/s\n",
                         to.repeats, t.memcpy_bytes_per_s / 1e9,
                         100 * t.memcpy_bytes_per_s / dev.hbm_peak_bytes_per_s,
                         t.copy_kernel_bytes_per_s / 1e9);
      out << fmt::format("{:<16} {:<40} {:>10} {:>10} {:>7} {:>6} {:>6} {:>6} {:>6} {:>4} {:>4}\n",
                         "kernel", "variant", "MiB", "us", "GB/s", "%peak", "%copy", "/plain",
                         "/model", "vec", "set");
      std::vector<kernels::TimingSample> samples;
      j["timing"]["memcpy_bytes_per_s"] = t.memcpy_bytes_per_s;
      j["timing"]["copy_kernel_bytes_per_s"] = t.copy_kernel_bytes_per_s;
      for (const auto& r : t.rows) {
        samples.push_back(r.sample);
        out << fmt::format(
            "{:<16} {:<40} {:>10.1f} {:>10.1f} {:>7.0f} {:>6.1f} {:>6.1f} {:>6.3f} {:>6.3f} {:>4} {:>4}\n",
            r.sample.kernel, r.sample.variant.substr(0, 40),
            static_cast<double>(r.sample.bytes) / (1 << 20), r.sample.seconds * 1e6, r.gbps,
            r.pct_peak, r.pct_copy, r.vs_plain, r.sample.seconds / r.model_s, r.vec_bytes,
            r.sample.held_out ? "held" : "fit");
        j["timing"]["rows"].push_back({{"kernel", r.sample.kernel},
                                       {"variant", r.sample.variant},
                                       {"bytes", r.sample.bytes},
                                       {"median_s", r.sample.seconds},
                                       {"min_s", r.min_s},
                                       {"max_s", r.max_s},
                                       {"gbps", r.gbps},
                                       {"pct_peak", r.pct_peak},
                                       {"pct_copy", r.pct_copy},
                                       {"vs_plain", r.vs_plain},
                                       {"model_s", r.model_s},
                                       {"held_out", r.sample.held_out},
                                       {"vec_bytes", r.vec_bytes}});
      }
      const HardwareProfile after = kernels::Calibrate(to.model, samples);
      HardwareProfile calibrated = after;
      calibrated.name = dev.name;
      calibrated.copy_bytes_per_s = t.memcpy_bytes_per_s;
      const auto eb = kernels::HeldOutError(to.model, samples);
      const auto ea = kernels::HeldOutError(calibrated, samples);
      out << fmt::format("\nmodel: move {:.2f} us + bytes / {:.0f} GB/s; attention {:.2f} us + "
                         "bytes / {:.0f} GB/s (fitted on 'fit' rows)\n",
                         calibrated.move_fixed_s * 1e6, calibrated.move_bytes_per_s / 1e9,
                         calibrated.attn_fixed_s * 1e6, calibrated.attn_bytes_per_s / 1e9);
      out << fmt::format("held-out |measured/modelled - 1| over {} kernels: before mean {:.1f}% "
                         "max {:.1f}%; after mean {:.1f}% max {:.1f}%\n",
                         ea.n, 100 * eb.mean_abs, 100 * eb.max_abs, 100 * ea.mean_abs,
                         100 * ea.max_abs);
      for (const auto& r : t.rows) {
        if (!r.sample.held_out) continue;
        out << fmt::format("  held-out {:<16} {:<40} measured/modelled {:.3f}\n", r.sample.kernel,
                           r.sample.variant.substr(0, 40),
                           r.sample.seconds / kernels::ModelSeconds(calibrated, r.sample));
      }
      std::vector<std::pair<std::string, double>> dense;
      if (!a.no_gemm && !TimeGemms(a, sc.value(), plan.value(), out, j, &dense)) ++failed;
      const std::string profile = kernels::ProfileToYaml(calibrated) + DenseYaml(dense);
      j["calibration"] = {{"before_mean_abs", eb.mean_abs},
                          {"before_max_abs", eb.max_abs},
                          {"after_mean_abs", ea.mean_abs},
                          {"after_max_abs", ea.max_abs},
                          {"held_out", ea.n},
                          {"profile", profile}};
      if (!a.calibrate_out.empty()) {
        std::ofstream f(a.calibrate_out);
        f << profile;
        if (!f) {
          std::cerr << "kvsim gpu-validate: cannot write " << a.calibrate_out << "\n";
          ExitCode() = 2;
          return;
        }
        out << "wrote " << a.calibrate_out << "\n";
      }
    }
  }
  j["failed_cases"] = failed;
  if (json_stdout) {
    std::cout << j.dump(2) << "\n";
  } else if (!a.json_out.empty()) {
    std::ofstream f(a.json_out);
    f << j.dump(2) << "\n";
    if (!f) {
      std::cerr << "kvsim gpu-validate: cannot write " << a.json_out << "\n";
      ExitCode() = 2;
      return;
    }
  }
  ExitCode() = failed == 0 ? 0 : 1;
}

}  // namespace

void RegisterGpuValidate(CLI::App& app) {
  static GpuValidateArgs args;
  CLI::App* cmd = app.add_subcommand(
      "gpu-validate",
      "run real CUDA kernels over the scenario's KV layouts: bit-exact checks, timings, "
      "calibration (exit 3 without a CUDA device)");
  AddScenarioArgs(cmd, &args.scenario);
  cmd->add_option("--json", args.json_out, "write the full report as JSON to this file ('-' = stdout)");
  cmd->add_option("--calibrate", args.calibrate_out,
                  "fit the kernel-time model and write the hardware profile YAML here");
  cmd->add_flag("--quick", args.quick, "smaller sizes and matrix (smoke / sanitizer runs)");
  cmd->add_flag("--no-timing", args.no_timing, "correctness only");
  cmd->add_flag("--no-matrix", args.no_matrix, "only the scenario's own layouts");
  cmd->add_flag("--host", args.host,
                "run the correctness checks on the host references instead of the GPU "
                "(tests the harness and the plan's layouts without a device; no timing)");
  cmd->add_flag("--no-gemm", args.no_gemm, "skip the cuBLASLt GEMM timings of the model's shapes");
  cmd->add_option("--gemm-tokens", args.gemm_tokens,
                  "token counts M of the GEMM timings (default 1 8 32 128 512 2048 8192; "
                  "--quick: 1 32 512)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--repeats", args.repeats, "timed repeats per kernel (median)")
      ->check(CLI::Range(3, 1000));
  cmd->callback([] { RunGpuValidate(args); });
}

}  // namespace kvsim::cli
