// DType: the one place element sizes live. Every byte count in kvsim that depends on a
// number format goes through ElementBytes() or the KV-content helpers in layer_spec.h.
//
// KV dtypes follow vLLM's `--kv-cache-dtype` names: every fp8 variant is stored as uint8
// (1 byte); nvfp4 is a packed format whose per-head width is D/2 + D/16 bytes (values plus
// block scales), so it has no per-element size; `fp8_per_token_head` stores inline fp32
// scales; `fp8_ds_mla` is DeepSeek's fixed 656-byte MLA token. `auto` means "the model dtype".
// Header-only and usable from CUDA code.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/host_device.h"

namespace kvsim {

enum class DType : uint8_t {
  kAuto,  // resolved to the model dtype before any byte count is taken
  kFloat32,
  kFloat16,
  kBFloat16,
  kFp8,  // vLLM "fp8": e4m3 on NVIDIA
  kFp8E4M3,
  kFp8E5M2,
  kFp8PerTokenHead,  // fp8 values + one fp32 scale per (token, head) for K and for V
  kFp8DsMla,         // DeepSeek V3.2 sparse-MLA fp8 token: 656 bytes
  kInt8,
  kNvfp4,
};

// Bytes of one element. Packed formats (nvfp4) report 0: use the content helpers instead.
KVSIM_HOST_DEVICE constexpr int ElementBytes(DType t) {
  switch (t) {
    case DType::kFloat32:
      return 4;
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
    case DType::kFp8:
    case DType::kFp8E4M3:
    case DType::kFp8E5M2:
    case DType::kFp8PerTokenHead:
    case DType::kFp8DsMla:
    case DType::kInt8:
      return 1;
    case DType::kNvfp4:
    case DType::kAuto:
      return 0;
  }
  return 0;
}

constexpr bool IsFp8(DType t) {
  return t == DType::kFp8 || t == DType::kFp8E4M3 || t == DType::kFp8E5M2 ||
         t == DType::kFp8PerTokenHead || t == DType::kFp8DsMla;
}

constexpr std::string_view DTypeName(DType t) {
  switch (t) {
    case DType::kAuto: return "auto";
    case DType::kFloat32: return "fp32";
    case DType::kFloat16: return "fp16";
    case DType::kBFloat16: return "bf16";
    case DType::kFp8: return "fp8";
    case DType::kFp8E4M3: return "fp8_e4m3";
    case DType::kFp8E5M2: return "fp8_e5m2";
    case DType::kFp8PerTokenHead: return "fp8_per_token_head";
    case DType::kFp8DsMla: return "fp8_ds_mla";
    case DType::kInt8: return "int8";
    case DType::kNvfp4: return "nvfp4";
  }
  return "?";
}

// Accepts kvsim's names and the common aliases (float32, float16, bfloat16, half).
constexpr std::optional<DType> ParseDType(std::string_view s) {
  if (s == "auto") return DType::kAuto;
  if (s == "fp32" || s == "float32" || s == "float") return DType::kFloat32;
  if (s == "fp16" || s == "float16" || s == "half") return DType::kFloat16;
  if (s == "bf16" || s == "bfloat16") return DType::kBFloat16;
  if (s == "fp8") return DType::kFp8;
  if (s == "fp8_e4m3") return DType::kFp8E4M3;
  if (s == "fp8_e5m2") return DType::kFp8E5M2;
  if (s == "fp8_per_token_head") return DType::kFp8PerTokenHead;
  if (s == "fp8_ds_mla") return DType::kFp8DsMla;
  if (s == "int8") return DType::kInt8;
  if (s == "nvfp4") return DType::kNvfp4;
  return std::nullopt;
}

constexpr const char* kDTypeNamesHelp =
    "auto, fp32, fp16, bf16, fp8, fp8_e4m3, fp8_e5m2, fp8_per_token_head, fp8_ds_mla, int8, nvfp4";

}  // namespace kvsim
