// VllmSemantics: which vLLM snapshot kvsim mirrors where the two it models differ (reference
// §0): `classic` (2026-05) and `latest` (2026-08-18; docs/vllm-latest-hybrid.md). It is a
// plain value chosen once, at the edge (scenario, command line), and passed down by value to
// the planner, the block pool, the KV cache manager and the offloading connector; each of
// those owns the rules that depend on it, this header only names the snapshots.
#pragma once

#include <cstdint>
#include <string_view>

namespace kvsim {

enum class VllmSemantics : uint8_t { kClassic, kLatest };

// "classic" | "latest": the names the scenario files and the command line use.
constexpr std::string_view VllmSemanticsName(VllmSemantics s) {
  return s == VllmSemantics::kClassic ? "classic" : "latest";
}

}  // namespace kvsim
