#include "sim/calibrate/calibrate.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kvsim {
namespace {

// The hardware keys a fit may set, bound to their fields.
struct KeyField {
  const char* key;
  double HardwareSpec::*field;
};
constexpr KeyField kKeyFields[] = {
    {"mfu", &HardwareSpec::mfu},
    {"mbu", &HardwareSpec::mbu},
    {"moe_mbu", &HardwareSpec::moe_mbu},
    {"attention_mfu", &HardwareSpec::attention_mfu},
    {"attention_mbu", &HardwareSpec::attention_mbu},
    {"attention_prefill_half_tokens", &HardwareSpec::attention_prefill_half_tokens},
    {"attention_kv_head_penalty", &HardwareSpec::attention_kv_head_penalty},
    {"attention_call_us", &HardwareSpec::attention_call_us},
    {"step_overhead_us", &HardwareSpec::step_overhead_us},
    {"seq_overhead_us", &HardwareSpec::seq_overhead_us},
    {"step_token_ns", &HardwareSpec::step_token_ns},
    {"layer_overhead_us", &HardwareSpec::layer_overhead_us},
    {"allreduce_latency_us", &HardwareSpec::allreduce_latency_us},
    {"nccl_latency_us", &HardwareSpec::nccl_latency_us},
    {"step_gpu_us", &HardwareSpec::step_gpu_us},
    {"sampler_sort_us", &HardwareSpec::sampler_sort_us},
    {"intake_us", &HardwareSpec::intake_us},
    {"intake_token_ns", &HardwareSpec::intake_token_ns},
    {"output_token_us", &HardwareSpec::output_token_us},
};

double Cost(const Eigen::MatrixXd& a, const Eigen::VectorXd& b, const Eigen::VectorXd& x) {
  return (a * x - b).squaredNorm();
}

}  // namespace

Eigen::VectorXd BoundedLeastSquares(const Eigen::MatrixXd& a, const Eigen::VectorXd& b,
                                    const Eigen::VectorXd& lo, const Eigen::VectorXd& hi) {
  const Eigen::Index n = a.cols();
  // Scale the columns to unit norm so that coordinate descent converges evenly.
  Eigen::VectorXd scale(n);
  for (Eigen::Index j = 0; j < n; ++j) {
    const double c = a.col(j).norm();
    scale(j) = c > 0 ? 1.0 / c : 1.0;
  }
  const Eigen::MatrixXd as = a * scale.asDiagonal();
  const Eigen::VectorXd los = lo.cwiseQuotient(scale), his = hi.cwiseQuotient(scale);
  const Eigen::MatrixXd q = as.transpose() * as;
  const Eigen::VectorXd c = as.transpose() * b;
  auto clamp = [&](Eigen::Index j, double v) { return std::clamp(v, los(j), his(j)); };
  Eigen::VectorXd x(n);
  for (Eigen::Index j = 0; j < n; ++j) x(j) = clamp(j, 0.0);
  // Projected coordinate descent on ½ xᵀQx − cᵀx: convex, so it converges to the optimum.
  for (int sweep = 0; sweep < 20000; ++sweep) {
    double change = 0;
    for (Eigen::Index j = 0; j < n; ++j) {
      if (q(j, j) <= 0) continue;
      const double g = q.row(j).dot(x) - c(j);
      const double v = clamp(j, x(j) - g / q(j, j));
      change = std::max(change, std::abs(v - x(j)));
      x(j) = v;
    }
    if (change < 1e-15) break;
  }
  // Polish: solve exactly on the variables strictly inside their bounds, the others held.
  std::vector<Eigen::Index> free;
  for (Eigen::Index j = 0; j < n; ++j) {
    const double tol = 1e-12 * std::max(1.0, std::abs(x(j)));
    if (x(j) > los(j) + tol && x(j) < his(j) - tol) free.push_back(j);
  }
  if (!free.empty()) {
    Eigen::MatrixXd af(as.rows(), static_cast<Eigen::Index>(free.size()));
    Eigen::VectorXd rhs = b;
    for (Eigen::Index j = 0; j < n; ++j) {
      if (std::find(free.begin(), free.end(), j) == free.end()) rhs -= as.col(j) * x(j);
    }
    for (size_t i = 0; i < free.size(); ++i) af.col(static_cast<Eigen::Index>(i)) = as.col(free[i]);
    const Eigen::VectorXd xf = af.colPivHouseholderQr().solve(rhs);
    Eigen::VectorXd polished = x;
    bool inside = true;
    for (size_t i = 0; i < free.size(); ++i) {
      const Eigen::Index j = free[i];
      polished(j) = xf(static_cast<Eigen::Index>(i));
      if (polished(j) < los(j) || polished(j) > his(j)) inside = false;
    }
    if (inside && Cost(as, b, polished) <= Cost(as, b, x)) x = polished;
  }
  return x.cwiseProduct(scale);
}

Eigen::VectorXd FitRegimes(const std::vector<size_t>& rows, const std::vector<double>& measured,
                           const RegimeFeatures& features, Eigen::VectorXd x,
                           const Eigen::VectorXd& lo, const Eigen::VectorXd& hi) {
  const auto n = static_cast<Eigen::Index>(rows.size());
  for (int it = 0; it < 50; ++it) {
    Eigen::MatrixXd a(n, x.size());
    const Eigen::VectorXd b = Eigen::VectorXd::Ones(n);
    for (Eigen::Index r = 0; r < n; ++r) {
      const size_t i = rows[static_cast<size_t>(r)];
      a.row(r) = features(i, x) / measured[i];
    }
    const Eigen::VectorXd next = BoundedLeastSquares(a, b, lo, hi);
    const bool same = (next - x).cwiseAbs().maxCoeff() <= 1e-12 * x.cwiseAbs().maxCoeff();
    x = next;
    if (same) break;
  }
  return x;
}

const std::vector<FitParameter>& ServingFitParameters() {
  static const std::vector<FitParameter> params = {
      {"mbu", 0.4, 0.9},  // at most copy speed (gpu-validate measures 0.90 of peak on H100)
      {"mfu", 0.3, 0.9},
      {"moe_mbu", 0.1, 0.95},
      // Shares of a peak: a scenario refuses more than 1 (a fit once wrote attention_mbu 1.01).
      {"attention_mbu", 0.1, 1.0},
      {"attention_mfu", 0.05, 1.0},
      {"attention_kv_head_penalty", 0, 4},
      {"step_overhead_us", 0, 10000},
      {"seq_overhead_us", 0, 500},
      {"intake_us", 0, 50000},
      {"intake_token_ns", 0, 20000},
      {"output_token_us", 0, 500},
      // GPU fixed costs: a step's kernels outside the layers (input preparation, logits,
      // sampling) take tens of microseconds to a few milliseconds; one layer's small kernels
      // (norms, rotary, residuals, GEMM tails) a few to tens of microseconds; one pass of the
      // custom all-reduce a few microseconds, an NCCL all-reduce tens.
      {"step_gpu_us", 0, 5000},
      // The top-k/top-p sampler's sort and masking: a dozen eager kernels over the batch's
      // logits, tens of microseconds to a few milliseconds.
      {"sampler_sort_us", 0, 5000},
      {"layer_overhead_us", 0, 40},
      {"allreduce_latency_us", 1, 40},
      {"nccl_latency_us", 5, 200},
  };
  return params;
}

bool GetHardwareKey(const HardwareSpec& hw, const std::string& key, double* value) {
  for (const KeyField& kf : kKeyFields) {
    if (key == kf.key) {
      *value = hw.*(kf.field);
      return true;
    }
  }
  return false;
}

bool SetHardwareKey(HardwareSpec& hw, const std::string& key, double value) {
  for (const KeyField& kf : kKeyFields) {
    if (key == kf.key) {
      hw.*(kf.field) = value;
      return true;
    }
  }
  return false;
}

std::vector<std::string> FittableHardwareKeys() {
  std::vector<std::string> keys;
  for (const KeyField& kf : kKeyFields) keys.emplace_back(kf.key);
  return keys;
}

std::string BoundNote(double value, double lower, double upper) {
  const bool finite = std::isfinite(lower) && std::isfinite(upper);
  auto tolerance = [&](double bound) {
    if (finite) return 1e-3 * (upper - lower);
    return bound != 0 ? 1e-3 * std::abs(bound) : 1e-9;
  };
  if (std::isfinite(upper) && value >= upper - tolerance(upper)) {
    return fmt::format("at its upper bound {:.6g}: not a fit", upper);
  }
  if (std::isfinite(lower) && value <= lower + tolerance(lower)) {
    return fmt::format("at its lower bound {:.6g}: not a fit", lower);
  }
  return "";
}

size_t IndependentMeasurements(const std::vector<ServingMeasurement>& measurements) {
  // Per (run, metric): the stages that carry it, and whether the whole run does.
  std::map<std::pair<std::string, std::string>, std::pair<std::set<std::string>, bool>> seen;
  for (const ServingMeasurement& m : measurements) {
    std::string metric = m.metric, stage;
    if (metric.rfind("stage", 0) == 0) {
      if (const size_t dot = metric.find('.'); dot != std::string::npos) {
        stage = metric.substr(0, dot);
        metric = metric.substr(dot + 1);
      }
    }
    auto& entry = seen[{m.run, metric}];
    if (stage.empty()) {
      entry.second = true;
    } else {
      entry.first.insert(stage);
    }
  }
  size_t count = 0;
  for (const auto& [key, entry] : seen) {
    count += !entry.first.empty() ? entry.first.size() : (entry.second ? 1 : 0);
  }
  return count;
}

std::string FindCalibrationInput(const std::string& path, std::vector<std::string>* tried) {
  namespace fs = std::filesystem;
  std::vector<std::string> candidates;
  if (fs::path(path).is_absolute()) {
    candidates.push_back(path);
  } else {
    candidates.push_back(path);
    std::vector<fs::path> dirs;
    if (const char* env = std::getenv("KVSIM_TRACE_DIR"); env && *env) dirs.emplace_back(env);
    dirs.emplace_back(kSharedDataDir);
    dirs.emplace_back(fs::path(kSharedDataDir) / "fidelity");
    const fs::path name = fs::path(path).filename();
    for (const fs::path& d : dirs) {
      for (const fs::path& c : {d / path, d / name}) {
        const std::string s = c.lexically_normal().string();
        if (std::find(candidates.begin(), candidates.end(), s) == candidates.end()) {
          candidates.push_back(s);
        }
      }
    }
  }
  for (const std::string& c : candidates) {
    if (tried) tried->push_back(c);
    std::error_code ec;
    if (fs::is_regular_file(c, ec)) return c;
  }
  return "";
}

// ---- (a) operator profiles ------------------------------------------------------------

Result<std::vector<OperatorSample>> ParseOperatorProfiles(
    const std::string& json_text, const std::string& path,
    const std::function<Result<std::pair<std::vector<CostModel::Linear>, double>>(
        const std::string& model, int64_t tp)>& resolve) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const std::exception& e) {
    return Status::Error("bad_json", path + ": not JSON: " + e.what());
  }
  if (!j.is_object() || !j.contains("entries") || !j["entries"].is_array()) {
    return Status::Error("bad_profile", path + ": expected an object with an `entries` list");
  }
  std::vector<OperatorSample> out;
  for (size_t i = 0; i < j["entries"].size(); ++i) {
    const auto& e = j["entries"][i];
    const std::string where = fmt::format("{}: entries[{}]", path, i);
    if (!e.is_object() || !e.contains("model") || !e.contains("tp") ||
        !e.contains("num_tokens") || !e.contains("per_layer_ms") || !e.contains("gpu") ||
        !e["model"].is_string() || !e["tp"].is_number_integer() ||
        !e["num_tokens"].is_number() || !e["per_layer_ms"].is_number() ||
        !e["gpu"].is_string()) {
      return Status::Error("bad_profile",
                           where + ": needs gpu (string), model (string), tp (integer), "
                                   "num_tokens and per_layer_ms (numbers)");
    }
    const double ms = e["per_layer_ms"].get<double>();
    const double tokens = e["num_tokens"].get<double>();
    if (!(ms > 0) || !(tokens >= 1)) {
      return Status::Error("bad_profile", where + ": per_layer_ms must be > 0, num_tokens ≥ 1");
    }
    const std::string model = e["model"].get<std::string>();
    const int64_t tp = e["tp"].get<int64_t>();
    auto shapes = resolve(model, tp);
    if (!shapes.ok()) {
      return Status::Error(shapes.status().code(), where + ": " + shapes.status().message());
    }
    OperatorSample s;
    s.gpu = e["gpu"].get<std::string>();
    s.label = fmt::format("{} {} tp{} N={}", s.gpu, model, tp, tokens);
    for (const auto& l : shapes->first) {
      if (l.name != "lm_head" && l.name != "router") s.linears.push_back(l);
    }
    s.weight_bytes = shapes->second;
    s.tokens = tokens;
    s.measured_s = ms * 1e-3;
    out.push_back(std::move(s));
  }
  return out;
}

namespace {

// One GEMM's time at full efficiency, split: memory (at 100 % of HBM) and compute (at
// mfu = 1). GemmSeconds takes the max of the two; pushing the other side's efficiency out of
// the way reads each part alone.
std::pair<double, double> GemmParts(const HardwareSpec& hw, double m, double n, double k,
                                    double wb, double peak) {
  HardwareSpec h = hw;
  h.mfu = 1e12;  // compute negligible
  const double memory = GemmSeconds(h, m, n, k, wb, peak, 1.0);
  h.mfu = 1.0;
  const double compute = GemmSeconds(h, m, n, k, wb, peak, 1e12);
  return {memory, compute};
}

// Per sample, the features (Σ memory part of memory-bound GEMMs, Σ compute part of
// compute-bound GEMMs, 1 per layer) at efficiencies x = (1/mbu, 1/mfu, overhead_s).
Eigen::RowVector3d OperatorFeatures(const HardwareSpec& hw, const OperatorSample& s,
                                    double peak, const Eigen::Vector3d& x) {
  Eigen::RowVector3d f(0, 0, 1);
  for (const auto& l : s.linears) {
    const auto [mem, comp] = GemmParts(hw, s.tokens, l.n, l.k, s.weight_bytes, peak);
    if (mem * x(0) >= comp * x(1)) {
      f(0) += l.count * mem;
    } else {
      f(1) += l.count * comp;
    }
  }
  return f;
}

// Fits x on `rows` of `samples` (relative least squares), iterating the regime assignment.
Eigen::Vector3d FitOperatorRows(const HardwareSpec& hw, const std::vector<OperatorSample>& samples,
                                const std::vector<size_t>& rows, double peak, Eigen::Vector3d x) {
  const double inf = std::numeric_limits<double>::infinity();
  Eigen::Vector3d lo(1.0, 1.0, 0.0), hi(inf, inf, inf);  // efficiencies ≤ 1, overhead ≥ 0
  std::vector<double> measured;
  for (const auto& s : samples) measured.push_back(s.measured_s);
  const RegimeFeatures features = [&](size_t i, const Eigen::VectorXd& at) {
    return Eigen::RowVectorXd(OperatorFeatures(hw, samples[i], peak, Eigen::Vector3d(at)));
  };
  return FitRegimes(rows, measured, features, x, lo, hi);
}

HardwareSpec WithOperatorFit(HardwareSpec hw, const Eigen::Vector3d& x) {
  hw.mbu = 1.0 / x(0);
  hw.mfu = 1.0 / x(1);
  hw.layer_overhead_us = x(2) * 1e6;
  return hw;
}

std::string ModelOf(const OperatorSample& s) {
  const auto n = s.label.find(" N=");
  return s.label.substr(0, n);
}

}  // namespace

double OperatorSeconds(const HardwareSpec& hw, const OperatorSample& s, double peak_flops) {
  double t = hw.layer_overhead_us * 1e-6;
  for (const auto& l : s.linears) {
    t += l.count * GemmSeconds(hw, s.tokens, l.n, l.k, s.weight_bytes, peak_flops, hw.mbu);
  }
  return t;
}

Result<OperatorFit> FitOperatorProfiles(const HardwareSpec& start,
                                        const std::vector<OperatorSample>& samples,
                                        double peak_flops) {
  // Fewer samples than the three coefficients is the caller's call (kvsim calibrate refuses
  // it without --force); none is nothing to fit.
  if (samples.empty()) {
    return Status::Error("too_few_samples", "an operator fit needs at least one sample");
  }
  const Eigen::Vector3d x0(1.0 / start.mbu, 1.0 / start.mfu, start.layer_overhead_us * 1e-6);
  std::vector<size_t> all(samples.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  const Eigen::Vector3d x = FitOperatorRows(start, samples, all, peak_flops, x0);
  OperatorFit fit;
  const HardwareSpec fitted = WithOperatorFit(start, x);
  fit.mbu = fitted.mbu;
  fit.mfu = fitted.mfu;
  fit.layer_overhead_us = fitted.layer_overhead_us;
  std::set<std::string> models;
  for (const auto& s : samples) models.insert(ModelOf(s));
  for (size_t i = 0; i < samples.size(); ++i) {
    SampleError e;
    e.label = samples[i].label;
    e.in_sample = OperatorSeconds(fitted, samples[i], peak_flops) / samples[i].measured_s - 1;
    e.leave_one_out = e.in_sample;
    if (models.size() > 1) {
      // Leave the sample's whole model out: its other token counts would give it away.
      std::vector<size_t> rest;
      for (size_t r = 0; r < samples.size(); ++r) {
        if (ModelOf(samples[r]) != ModelOf(samples[i])) rest.push_back(r);
      }
      const HardwareSpec loo =
          WithOperatorFit(start, FitOperatorRows(start, samples, rest, peak_flops, x));
      e.leave_one_out = OperatorSeconds(loo, samples[i], peak_flops) / samples[i].measured_s - 1;
    }
    fit.errors.push_back(e);
  }
  return fit;
}

// ---- (b) serving runs ------------------------------------------------------------------

Result<ServingFit> FitServingRuns(const HardwareSpec& start,
                                  const std::vector<FitParameter>& params,
                                  const std::vector<ServingMeasurement>& measurements,
                                  const ServingSimulator& simulate, int max_iterations,
                                  double prior_weight) {
  const Eigen::Index p = static_cast<Eigen::Index>(params.size());
  const Eigen::Index m = static_cast<Eigen::Index>(measurements.size());
  if (p == 0 || m == 0) return Status::Error("nothing_to_fit", "no parameters or no measurements");
  // Normalised coordinates: u = value / range, so a step means the same in every direction.
  Eigen::VectorXd range(p), lo(p), hi(p), u(p);
  for (Eigen::Index i = 0; i < p; ++i) {
    const FitParameter& fp = params[static_cast<size_t>(i)];
    double v = 0;
    if (!GetHardwareKey(start, fp.key, &v)) {
      return Status::Error("unknown_key", "calibrate: cannot fit unknown hardware key " + fp.key);
    }
    range(i) = std::max(fp.upper - fp.lower, 1e-12);
    lo(i) = fp.lower / range(i);
    hi(i) = fp.upper / range(i);
    u(i) = std::clamp(v, fp.lower, fp.upper) / range(i);
  }
  const Eigen::VectorXd u_start = u;  // the prior: of the fit (prior_weight) and leave-one-out
  const double prior = std::max(prior_weight, 0.0);  // one value for the system and the cost
  const double w = std::sqrt(prior);
  ServingFit fit;
  // A coefficient in its units, inside its bounds: u·range can land a rounding error outside
  // a bound (−4e-15 for a lower bound of 0), and kvsim rejects a negative coefficient.
  auto value = [&](const Eigen::VectorXd& at, Eigen::Index i) {
    const FitParameter& fp = params[static_cast<size_t>(i)];
    return std::clamp(at(i) * range(i), fp.lower, fp.upper);
  };
  auto hw_at = [&](const Eigen::VectorXd& at) {
    HardwareSpec hw = start;
    for (Eigen::Index i = 0; i < p; ++i)
      SetHardwareKey(hw, params[static_cast<size_t>(i)].key, value(at, i));
    return hw;
  };
  auto residuals = [&](const Eigen::VectorXd& at) -> Result<Eigen::VectorXd> {
    ++fit.evaluations;
    auto sim = simulate(hw_at(at));
    if (!sim.ok()) return sim.status();
    if (static_cast<Eigen::Index>(sim->size()) != m) {
      return Status::Error("internal", "simulator returned the wrong number of metrics");
    }
    Eigen::VectorXd r(m);
    for (Eigen::Index j = 0; j < m; ++j) {
      const double meas = measurements[static_cast<size_t>(j)].measured;
      r(j) = meas != 0 ? ((*sim)[static_cast<size_t>(j)] - meas) / meas : 0.0;
    }
    return r;
  };
  auto r = residuals(u);
  if (!r.ok()) return r.status();
  Eigen::VectorXd res = r.value();
  // What the fit minimises: the runs' squared relative errors plus the pull to the start.
  auto objective = [&](const Eigen::VectorXd& errors, const Eigen::VectorXd& at) {
    return errors.squaredNorm() + prior * (at - u_start).squaredNorm();
  };
  double cost = objective(res, u);
  Eigen::MatrixXd jac(m, p);
  double lambda = 1e-2;
  constexpr double kStep = 0.02;  // 2 % of each range: larger than the simulator's jitter
  // Forward differences at u (backward at an upper bound).
  auto jacobian = [&]() -> Status {
    for (Eigen::Index i = 0; i < p; ++i) {
      Eigen::VectorXd up = u;
      const double h = u(i) + kStep <= hi(i) ? kStep : -kStep;
      up(i) += h;
      auto ri = residuals(up);
      if (!ri.ok()) return ri.status();
      jac.col(i) = (ri.value() - res) / h;
    }
    return Status::Ok();
  };
  bool jac_current = false;
  for (int it = 0; it < max_iterations; ++it) {
    if (Status s = jacobian(); !s.ok()) return s;
    jac_current = true;
    bool improved = false;
    // Up to ten damping increases (λ up to 4^9 ≈ 2.6e5 times its value): with four, a fit whose
    // full step overshot (the simulator is not smooth) gave up at its start, and a leave-one-out
    // refit returned the shipped coefficients unchanged.
    for (int tries = 0; tries < 10 && !improved; ++tries) {
      Eigen::MatrixXd a(m + 2 * p, p);
      a << jac, w * Eigen::MatrixXd::Identity(p, p),
          std::sqrt(lambda) * Eigen::MatrixXd::Identity(p, p);
      Eigen::VectorXd b(m + 2 * p);
      b << -res, -w * (u - u_start), Eigen::VectorXd::Zero(p);
      const Eigen::VectorXd delta = BoundedLeastSquares(a, b, lo - u, hi - u);
      const Eigen::VectorXd trial = u + delta;
      auto rt = residuals(trial);
      if (!rt.ok()) return rt.status();
      const double c = objective(rt.value(), trial);
      if (c < cost) {
        u = trial;
        res = rt.value();
        cost = c;
        lambda = std::max(lambda / 3, 1e-6);
        improved = true;
        jac_current = false;
      } else {
        lambda *= 4;
      }
    }
    if (!improved) break;
  }
  if (!jac_current) {
    if (Status s = jacobian(); !s.ok()) return s;
  }
  fit.hw = hw_at(u);
  for (Eigen::Index i = 0; i < p; ++i) {
    fit.values.emplace_back(params[static_cast<size_t>(i)].key, value(u, i));
  }
  // Leave one run out, linearised at the fit: the Gauss–Newton step without the run's rows,
  // with the fit's pull towards the starting values (at least a weak one), so that a coefficient
  // only the left-out run informs (the MHA penalty, say) falls back to its prior instead of
  // drifting freely.
  const double loo_prior = std::max(1e-2, prior);
  std::vector<std::string> runs;
  for (const auto& ms : measurements) {
    if (std::find(runs.begin(), runs.end(), ms.run) == runs.end()) runs.push_back(ms.run);
  }
  std::map<std::string, Eigen::VectorXd> predicted;
  for (const std::string& run : runs) {
    std::vector<Eigen::Index> keep;
    for (Eigen::Index j = 0; j < m; ++j) {
      if (measurements[static_cast<size_t>(j)].run != run) keep.push_back(j);
    }
    Eigen::VectorXd pred = res;
    if (runs.size() > 1) {
      const Eigen::Index rows = static_cast<Eigen::Index>(keep.size());
      Eigen::MatrixXd a(rows + p, p);
      Eigen::VectorXd b(rows + p);
      for (size_t k = 0; k < keep.size(); ++k) {
        a.row(static_cast<Eigen::Index>(k)) = jac.row(keep[k]);
        b(static_cast<Eigen::Index>(k)) = -res(keep[k]);
      }
      a.bottomRows(p) = std::sqrt(loo_prior) * Eigen::MatrixXd::Identity(p, p);
      b.tail(p) = std::sqrt(loo_prior) * (u_start - u);
      const Eigen::VectorXd delta = BoundedLeastSquares(a, b, lo - u, hi - u);
      pred = res + jac * delta;
    }
    predicted[run] = pred;
  }
  for (Eigen::Index j = 0; j < m; ++j) {
    const ServingMeasurement& ms = measurements[static_cast<size_t>(j)];
    fit.errors.push_back({ms.run + " " + ms.metric, res(j), predicted[ms.run](j)});
  }
  return fit;
}

// ---- (c) gpu-validate --json -------------------------------------------------------------

Result<AttentionFit> FitGpuValidate(const std::string& json_text, const std::string& path,
                                    double hbm_peak_bytes_per_s) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const std::exception& e) {
    return Status::Error("bad_json", path + ": not JSON: " + e.what());
  }
  if (!j.is_object() || !j.contains("timing") || !j["timing"].contains("rows") ||
      !j["timing"]["rows"].is_array()) {
    return Status::Error("no_attention_timings",
                         path + ": no timing.rows (run gpu-validate with timings, not --quick)");
  }
  std::vector<std::pair<double, double>> rows;  // (bytes, seconds)
  std::vector<std::string> labels;
  const auto& list = j["timing"]["rows"];
  for (size_t i = 0; i < list.size(); ++i) {
    const auto& r = list[i];
    if (!r.is_object() || !r.contains("kernel") || !r["kernel"].is_string()) {
      return Status::Error("bad_gpu_validate", fmt::format("{}: timing.rows[{}]: no kernel", path, i));
    }
    if (r["kernel"].get<std::string>().rfind("decode_attention", 0) != 0) continue;
    if (!r.contains("bytes") || !r.contains("median_s") || !r["bytes"].is_number() ||
        !r["median_s"].is_number() || !(r["median_s"].get<double>() > 0)) {
      return Status::Error("bad_gpu_validate",
                           fmt::format("{}: timing.rows[{}]: needs bytes and median_s > 0", path, i));
    }
    rows.emplace_back(r["bytes"].get<double>(), r["median_s"].get<double>());
    labels.push_back(r.value("variant", std::string("decode_attention")));
  }
  if (rows.size() < 2) {
    return Status::Error("too_few_samples", path + ": fewer than 2 decode_attention timings");
  }
  auto fit_rows = [&](const std::vector<size_t>& use) {
    Eigen::MatrixXd a(static_cast<Eigen::Index>(use.size()), 2);
    Eigen::VectorXd b = Eigen::VectorXd::Ones(static_cast<Eigen::Index>(use.size()));
    for (size_t k = 0; k < use.size(); ++k) {
      const auto [bytes, s] = rows[use[k]];
      a(static_cast<Eigen::Index>(k), 0) = 1.0 / s;  // fixed seconds
      a(static_cast<Eigen::Index>(k), 1) = bytes / hbm_peak_bytes_per_s / s;  // 1/mbu
    }
    const double inf = std::numeric_limits<double>::infinity();
    return Eigen::Vector2d(BoundedLeastSquares(a, b, Eigen::Vector2d(0, 1), Eigen::Vector2d(inf, inf)));
  };
  auto model = [&](const Eigen::Vector2d& x, size_t i) {
    return x(0) + rows[i].first / hbm_peak_bytes_per_s * x(1);
  };
  std::vector<size_t> all(rows.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  const Eigen::Vector2d x = fit_rows(all);
  AttentionFit fit;
  fit.attention_call_us = x(0) * 1e6;
  fit.attention_mbu = 1.0 / x(1);
  for (size_t i = 0; i < rows.size(); ++i) {
    std::vector<size_t> rest;
    for (size_t k = 0; k < rows.size(); ++k) {
      if (k != i) rest.push_back(k);
    }
    const Eigen::Vector2d xl = rows.size() > 2 ? fit_rows(rest) : x;
    fit.errors.push_back({labels[i], model(x, i) / rows[i].second - 1,
                          model(xl, i) / rows[i].second - 1});
  }
  return fit;
}

std::string HardwareFileYaml(const std::string& name, const std::string& provenance,
                             const std::vector<std::pair<std::string, double>>& values,
                             const std::map<std::string, std::string>& notes) {
  std::string out = "# kvsim hardware coefficients written by `kvsim calibrate`: merge over a preset\n"
                    "# with `hardware: {preset: ..., file: THIS}` (keys: scenarios/hardware/README.md).\n";
  for (const auto& line : {provenance}) {
    if (!line.empty()) out += "# " + line + "\n";
  }
  if (!name.empty()) out += "name: " + name + "\n";
  for (const auto& [k, v] : values) {
    if (auto it = notes.find(k); it != notes.end() && !it->second.empty()) {
      out += "# " + k + ": " + it->second + "\n";
    }
    out += fmt::format("{}: {:.6g}\n", k, v);
  }
  return out;
}

}  // namespace kvsim
