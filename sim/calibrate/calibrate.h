// kvsim calibrate: fits the step-time model's coefficients (core/cost_model.h, the keys of
// scenarios/hardware/*.yaml) to measurements, by bounded least squares (Eigen):
//   (a) operator profiles (Vidur's format, ../shared/data/fidelity/vidur_ops.json): the time of
//       one decoder layer's non-attention ops at N tokens; modelled as the layer's four GEMMs
//       (CostModel::linears: QKV, O, gate/up, down) plus layer_overhead_us, which fits mbu, mfu
//       and layer_overhead_us;
//   (b) measured serving runs (scenarios with a `reference:` block): the simulated metrics'
//       relative errors, minimised over the chosen coefficients by a bounded Levenberg–
//       Marquardt on finite-difference Jacobians (each evaluation simulates every run);
//   (c) `kvsim gpu-validate --json` output: its decode-attention timings, t = fixed + bytes /
//       (peak · attention_mbu), which fit attention_mbu and attention_call_us.
// Errors are reported in-sample and leave-one-out. For serving runs the leave-one-out fit is
// the Gauss–Newton step of the linearised problem at the full fit (runs are too slow to refit
// once per left-out run), pulled towards the starting coefficients as the fit is (and at least
// weakly: a coefficient that only the left-out run informs falls back to its prior); for
// operator profiles it is an exact refit. A serving fit may take a prior of its own
// (prior_weight): a pull towards the starting coefficients in the fit itself.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <Eigen/Dense>

#include "core/cost_model.h"
#include "core/status.h"

namespace kvsim {

// min ‖A x − b‖² subject to lo ≤ x ≤ hi (componentwise; ±inf allowed), by an active-set
// method (Lawson–Hanson generalised to two-sided bounds). NNLS is lo = 0, hi = +inf.
Eigen::VectorXd BoundedLeastSquares(const Eigen::MatrixXd& a, const Eigen::VectorXd& b,
                                    const Eigen::VectorXd& lo, const Eigen::VectorXd& hi);

// The fit behind operator profiles and GEMM timings: minimises Σ_i (features(i, x) · x / t_i
// − 1)² over lo ≤ x ≤ hi, where x holds inverse efficiencies and fixed costs and the features
// depend on x (each GEMM is priced in the regime, memory or compute, that bounds it at x):
// solved by BoundedLeastSquares, the regimes reassigned at the new x, until x stops moving.
using RegimeFeatures = std::function<Eigen::RowVectorXd(size_t row, const Eigen::VectorXd& x)>;
Eigen::VectorXd FitRegimes(const std::vector<size_t>& rows, const std::vector<double>& measured,
                           const RegimeFeatures& features, Eigen::VectorXd x,
                           const Eigen::VectorXd& lo, const Eigen::VectorXd& hi);

// One coefficient a fit may move, within bounds.
struct FitParameter {
  std::string key;  // a hardware key (HardwareSpec field name)
  double lower = 0;
  double upper = 0;
};
// The known hardware keys a serving-run fit may move, with physical bounds.
const std::vector<FitParameter>& ServingFitParameters();
// Reads / writes a HardwareSpec field by its YAML key; false for an unknown key.
bool GetHardwareKey(const HardwareSpec& hw, const std::string& key, double* value);
bool SetHardwareKey(HardwareSpec& hw, const std::string& key, double value);
// Every key GetHardwareKey knows, in a fixed order: what `kvsim calibrate --fit` accepts
// (a key outside ServingFitParameters() gets the range [0, max(1, 10 × its start)]).
std::vector<std::string> FittableHardwareKeys();

// A fitted value that ends on a bound was stopped there, not determined by the measurements:
// they pull it further. Returns "" for a value inside its bounds, else a note such as
// "at its upper bound 0.9: not a fit". "On" means within 0.1 % of the range [lower, upper]
// (of |bound| where the other bound is infinite; 1e-9 for an infinite range's bound 0).
std::string BoundNote(double value, double lower, double upper);

// Where kvsim calibrate finds an input file (--ops, --gpu-validate, and --runs that are
// neither on disk nor built in): an absolute path as it is; a relative one in the working
// directory, then in $KVSIM_TRACE_DIR and the shared data folder (kSharedDataDir and its
// fidelity/ folder), first as given and then by its file name (so the README's
// ../shared/data/fidelity/vidur_ops.json is found from any clone on this machine).
// Returns "" when none exists; `tried` (when given) receives every path looked at.
inline constexpr const char* kSharedDataDir = "/work/shared/data";
std::string FindCalibrationInput(const std::string& path, std::vector<std::string>* tried);

// (a) Operator profiles.
struct OperatorSample {
  std::string label;  // "h100 meta-llama/Llama-2-7b-hf tp1 N=512"
  std::string gpu;    // as in the file ("h100", "a100")
  std::vector<CostModel::Linear> linears;  // the layer's GEMMs (per rank; lm_head excluded)
  double weight_bytes = 2;
  double tokens = 1;
  double measured_s = 0;  // one layer
};
// Parses the vidur_ops.json format; `resolve(model name, tp)` gives the layer GEMMs of a
// model (the CLI maps names onto model presets). Errors name the file and entry.
Result<std::vector<OperatorSample>> ParseOperatorProfiles(
    const std::string& json_text, const std::string& path,
    const std::function<Result<std::pair<std::vector<CostModel::Linear>, double>>(
        const std::string& model, int64_t tp)>& resolve);
// The modelled time of one sample's layer on `hw`.
double OperatorSeconds(const HardwareSpec& hw, const OperatorSample& s, double peak_flops);

struct SampleError {
  std::string label;
  double in_sample = 0;      // (model − measured) / measured at the full fit
  double leave_one_out = 0;  // the same with the sample's own group left out of the fit
};
struct OperatorFit {
  double mbu = 0, mfu = 0, layer_overhead_us = 0;
  std::vector<SampleError> errors;
};
// Fits mbu, mfu, layer_overhead_us on the samples of one GPU (relative least squares; each
// GEMM in the regime that bounds it, iterated to a fixed point). Leave-one-out leaves out
// one model at a time.
Result<OperatorFit> FitOperatorProfiles(const HardwareSpec& start,
                                        const std::vector<OperatorSample>& samples,
                                        double peak_flops);

// (b) Serving runs.
struct ServingMeasurement {
  std::string run;     // scenario name
  std::string metric;  // a ReferenceMetricNames() name
  double measured = 0;
};
// The independent measurements a serving fit has: one per run and fitted metric, or, where
// the run's load stages are fitted ("stageK.metric"), one per stage and metric; the whole
// run's mean is then a combination of its stages' means and does not count again. A fit of
// more keys than this is underdetermined (kvsim calibrate refuses it without --force).
size_t IndependentMeasurements(const std::vector<ServingMeasurement>& measurements);

// Simulates the runs with `hw` and returns one simulated value per measurement, in order.
using ServingSimulator =
    std::function<Result<std::vector<double>>(const HardwareSpec& hw)>;
struct ServingFit {
  HardwareSpec hw;
  std::vector<std::pair<std::string, double>> values;  // the fitted keys
  std::vector<SampleError> errors;                     // one per measurement
  int evaluations = 0;
};
// Minimises Σ (relative error)² + prior_weight · Σ ((x − x_start) / range)² over the
// parameters' bounds: a prior_weight > 0 keeps a coefficient that the runs barely inform near
// its starting value instead of letting it absorb another run's error.
Result<ServingFit> FitServingRuns(const HardwareSpec& start,
                                  const std::vector<FitParameter>& params,
                                  const std::vector<ServingMeasurement>& measurements,
                                  const ServingSimulator& simulate, int max_iterations,
                                  double prior_weight = 0);

// (c) gpu-validate --json: decode-attention rows (kernel "decode_attention*"), fitted as
// t = attention_call_us + bytes / (peak · attention_mbu).
struct AttentionFit {
  double attention_mbu = 0, attention_call_us = 0;
  std::vector<SampleError> errors;
};
Result<AttentionFit> FitGpuValidate(const std::string& json_text, const std::string& path,
                                    double hbm_peak_bytes_per_s);

// The fitted keys as a hardware file (merged over a preset with `hardware.file`). A key with
// a note (BoundNote) gets it as a comment line of its own just above it ("# mfu: at its upper
// bound 0.9: not a fit"), so that readers of `key: value` lines see the bare value.
std::string HardwareFileYaml(const std::string& name, const std::string& provenance,
                             const std::vector<std::pair<std::string, double>>& values,
                             const std::map<std::string, std::string>& notes = {});

}  // namespace kvsim
