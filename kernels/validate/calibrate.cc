#include "kernels/validate/calibrate.h"

#include <Eigen/Dense>
#include <cmath>
#include <cstdio>

namespace kvsim::kernels {

namespace {

// Minimise Σ ((a + b·x + c·i − t) / t)² over the samples:
// rows [1/t, x/t, i/t] · [a, b, c] ≈ 1.
// Returns false when the solution is not physical (a non-positive byte coefficient).
bool Solve(const std::vector<const TimingSample*>& use, bool with_item, LineFit* fit) {
  const auto n = static_cast<Eigen::Index>(use.size());
  const Eigen::Index cols = with_item ? 3 : 2;
  Eigen::MatrixXd a(n, cols);
  Eigen::VectorXd rhs = Eigen::VectorXd::Ones(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const TimingSample& s = *use[static_cast<size_t>(i)];
    a(i, 0) = 1.0 / s.seconds;
    a(i, 1) = static_cast<double>(s.bytes) / s.seconds;
    if (with_item) a(i, 2) = static_cast<double>(s.item_bytes) / s.seconds;
  }
  const Eigen::VectorXd x = a.colPivHouseholderQr().solve(rhs);
  if (!(x(1) > 0)) return false;
  if (with_item && !(x(2) > 0)) return false;
  fit->ok = true;
  fit->fixed_s = std::max(0.0, x(0));
  fit->bytes_per_s = 1.0 / x(1);
  fit->item_bytes_per_s = with_item ? 1.0 / x(2) : 0.0;
  return true;
}

}  // namespace

LineFit FitLine(const std::vector<TimingSample>& samples, KernelClass cls) {
  std::vector<const TimingSample*> use;
  for (const auto& s : samples)
    if (s.cls == cls && !s.held_out && s.seconds > 0) use.push_back(&s);
  LineFit fit;
  fit.samples = static_cast<int>(use.size());
  if (use.size() < 2) return fit;
  // The critical-path term needs a third sample and work items that are not all the same
  // size (else its column is the fixed column again).
  int64_t lo = -1, hi = -1;
  for (const auto* s : use) {
    if (s->item_bytes <= 0) continue;
    lo = lo < 0 ? s->item_bytes : std::min(lo, s->item_bytes);
    hi = std::max(hi, s->item_bytes);
  }
  const bool item = cls == KernelClass::kDecodeAttention && use.size() >= 3 && lo > 0 && hi > lo;
  if (item && Solve(use, true, &fit)) return fit;
  Solve(use, false, &fit);
  return fit;
}

double ModelSeconds(const HardwareProfile& hw, const TimingSample& s) {
  if (s.cls == KernelClass::kGemm) return 0;
  return s.cls == KernelClass::kDecodeAttention
             ? hw.DecodeAttentionSeconds(s.bytes, s.item_bytes)
             : hw.DataMovementSeconds(s.bytes);
}

ModelError HeldOutError(const HardwareProfile& hw, const std::vector<TimingSample>& samples) {
  ModelError e;
  double sum = 0;
  for (const auto& s : samples) {
    if (!s.held_out || s.seconds <= 0 || s.cls == KernelClass::kGemm) continue;
    const double r = std::fabs(s.seconds / ModelSeconds(hw, s) - 1.0);
    sum += r;
    e.max_abs = std::max(e.max_abs, r);
    ++e.n;
  }
  e.mean_abs = e.n > 0 ? sum / e.n : 0;
  return e;
}

HardwareProfile Calibrate(const HardwareProfile& before,
                          const std::vector<TimingSample>& samples) {
  HardwareProfile hw = before;
  const LineFit mv = FitLine(samples, KernelClass::kDataMovement);
  if (mv.ok) {
    hw.move_fixed_s = mv.fixed_s;
    hw.move_bytes_per_s = mv.bytes_per_s;
  }
  const LineFit at = FitLine(samples, KernelClass::kDecodeAttention);
  if (at.ok) {
    hw.attn_fixed_s = at.fixed_s;
    hw.attn_bytes_per_s = at.bytes_per_s;
    hw.attn_item_bytes_per_s = at.item_bytes_per_s;
  }
  hw.source = "calibrated by kvsim gpu-validate";
  return hw;
}

std::string ProfileToYaml(const HardwareProfile& hw) {
  char buf[2048];
  std::snprintf(buf, sizeof buf,
                "# kvsim hardware profile (keys documented in core/hardware_profile.h).\n"
                "# Kernel time model: t = fixed + bytes / bytes_per_s per kernel class;\n"
                "# attention adds item_bytes / attn_item_bytes_per_s (0 = no term).\n"
                "hardware:\n"
                "  name: \"%s\"\n"
                "  source: \"%s\"\n"
                "  hbm_peak_bytes_per_s: %.6e\n"
                "  copy_bytes_per_s: %.6e\n"
                "  move_fixed_s: %.6e\n"
                "  move_bytes_per_s: %.6e\n"
                "  attn_fixed_s: %.6e\n"
                "  attn_bytes_per_s: %.6e\n"
                "  attn_item_bytes_per_s: %.6e\n",
                hw.name.c_str(), hw.source.c_str(), hw.hbm_peak_bytes_per_s,
                hw.copy_bytes_per_s, hw.move_fixed_s, hw.move_bytes_per_s, hw.attn_fixed_s,
                hw.attn_bytes_per_s, hw.attn_item_bytes_per_s);
  return buf;
}

}  // namespace kvsim::kernels
