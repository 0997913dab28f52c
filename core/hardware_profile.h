// HardwareProfile: the per-GPU coefficients of kvsim's kernel-time model, and the two model
// formulas the GPU validation mode checks and calibrates. `kvsim gpu-validate --calibrate`
// writes them as a YAML file (scenarios/hardware/*.yaml style); the simulator's step-time
// model reads the same keys (its owner maps them onto its own cost model).
//
// YAML (all SI units: bytes per second, seconds), under a top-level `hardware:` map:
//   name                    device name, free text
//   hbm_peak_bytes_per_s    datasheet HBM bandwidth (from cudaDeviceProp: 2 × memory clock × bus)
//   copy_bytes_per_s        measured large device-to-device copy, bytes read + written per second
//   move_fixed_s            fixed cost of one data-movement kernel (launch + tail)
//   move_bytes_per_s        effective bandwidth of append / gather / conversion kernels
//                           (bytes read + bytes written)
//   attn_fixed_s            fixed cost of one decode-attention call (both kernels)
//   attn_bytes_per_s        effective bandwidth of decode attention over the KV bytes it reads
//   attn_item_bytes_per_s   optional (0 or absent = no term): the rate at which one CTA
//                           streams its own partition, for the critical-path term below
//   source                  "datasheet" or "calibrated <date-free tag>"
// Data movement is a two-term line, t = move_fixed + bytes / move_bandwidth (the P/D model
// reads exactly these two keys). Decode attention adds a critical-path term:
//   t = attn_fixed + kv_bytes / attn_bandwidth + item_bytes / attn_item_bandwidth
// where item_bytes is the KV one CTA reads (one split-K partition of one KV head). The
// whole-device line alone is optimistic for mid-size batches: the last partitions to start
// stream alone at one CTA's rate, and that tail is a larger share of a short call (measured
// on an H100: 1.19× the line at 16 × 2k tokens, 1.0× at 32 × 16k). With the term at 0 the
// model is the old line, so older profiles read the same. Header-only, std only.
#pragma once

#include <cstdint>
#include <string>

namespace kvsim {

struct HardwareProfile {
  std::string name = "H100-SXM (datasheet defaults)";
  double hbm_peak_bytes_per_s = 3.35e12;
  double copy_bytes_per_s = 3.0e12;  // ≈ 90% of peak (gpu-notes §1.4)
  double move_fixed_s = 4e-6;
  double move_bytes_per_s = 2.7e12;  // 90% of copy until measured
  double attn_fixed_s = 10e-6;
  double attn_bytes_per_s = 2.5e12;  // ≈ 75% of peak for a CUDA-core split-K kernel
  double attn_item_bytes_per_s = 0;  // 0 = no critical-path term
  std::string source = "datasheet";

  // Modelled time of one data-movement kernel moving `bytes` (read + written).
  double DataMovementSeconds(int64_t bytes) const {
    return move_fixed_s + static_cast<double>(bytes) / move_bytes_per_s;
  }
  // Modelled time of one decode-attention call reading `kv_bytes` of K and V, of which one
  // CTA reads `item_bytes` (kernels::DecodeItemBytes; 0 = unknown, no tail term).
  double DecodeAttentionSeconds(int64_t kv_bytes, int64_t item_bytes = 0) const {
    double t = attn_fixed_s + static_cast<double>(kv_bytes) / attn_bytes_per_s;
    if (attn_item_bytes_per_s > 0) t += static_cast<double>(item_bytes) / attn_item_bytes_per_s;
    return t;
  }
};

}  // namespace kvsim
