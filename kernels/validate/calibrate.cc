#include "kernels/validate/calibrate.h"

#include <Eigen/Dense>
#include <cmath>
#include <cstdio>

namespace kvsim::kernels {

LineFit FitLine(const std::vector<TimingSample>& samples, KernelClass cls) {
  std::vector<const TimingSample*> use;
  for (const auto& s : samples)
    if (s.cls == cls && !s.held_out && s.seconds > 0) use.push_back(&s);
  LineFit fit;
  fit.samples = static_cast<int>(use.size());
  if (use.size() < 2) return fit;
  // Minimise Σ ((a + b·x − t) / t)²: rows [1/t, x/t] · [a, b] ≈ 1.
  Eigen::MatrixXd a(use.size(), 2);
  Eigen::VectorXd rhs = Eigen::VectorXd::Ones(static_cast<Eigen::Index>(use.size()));
  for (size_t i = 0; i < use.size(); ++i) {
    a(static_cast<Eigen::Index>(i), 0) = 1.0 / use[i]->seconds;
    a(static_cast<Eigen::Index>(i), 1) = static_cast<double>(use[i]->bytes) / use[i]->seconds;
  }
  const Eigen::Vector2d x = a.colPivHouseholderQr().solve(rhs);
  if (!(x(1) > 0)) return fit;
  fit.ok = true;
  fit.fixed_s = std::max(0.0, x(0));
  fit.bytes_per_s = 1.0 / x(1);
  return fit;
}

double ModelSeconds(const HardwareProfile& hw, const TimingSample& s) {
  return s.cls == KernelClass::kDecodeAttention ? hw.DecodeAttentionSeconds(s.bytes)
                                                : hw.DataMovementSeconds(s.bytes);
}

ModelError HeldOutError(const HardwareProfile& hw, const std::vector<TimingSample>& samples) {
  ModelError e;
  double sum = 0;
  for (const auto& s : samples) {
    if (!s.held_out || s.seconds <= 0) continue;
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
  }
  hw.source = "calibrated by kvsim gpu-validate";
  return hw;
}

std::string ProfileToYaml(const HardwareProfile& hw) {
  char buf[2048];
  std::snprintf(buf, sizeof buf,
                "# kvsim hardware profile (keys documented in core/hardware_profile.h).\n"
                "# Kernel time model: t = fixed + bytes / bytes_per_s per kernel class.\n"
                "hardware:\n"
                "  name: \"%s\"\n"
                "  source: \"%s\"\n"
                "  hbm_peak_bytes_per_s: %.6e\n"
                "  copy_bytes_per_s: %.6e\n"
                "  move_fixed_s: %.6e\n"
                "  move_bytes_per_s: %.6e\n"
                "  attn_fixed_s: %.6e\n"
                "  attn_bytes_per_s: %.6e\n",
                hw.name.c_str(), hw.source.c_str(), hw.hbm_peak_bytes_per_s,
                hw.copy_bytes_per_s, hw.move_fixed_s, hw.move_bytes_per_s, hw.attn_fixed_s,
                hw.attn_bytes_per_s);
  return buf;
}

}  // namespace kvsim::kernels
