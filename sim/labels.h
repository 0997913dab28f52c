// Labels: what names a point of an experiment, the sweep keys it sets and their values as
// written in the scenario, in axis order ({"cache.block_size", "16"}, ...); empty for a run
// without a sweep. Sweeps make them (sim/sweep/sweep_spec.h), outputs print them.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace kvsim {

using Labels = std::vector<std::pair<std::string, std::string>>;

// "key=value key=value", in order ("" for no labels).
inline std::string LabelOf(const Labels& labels) {
  std::string s;
  for (const auto& [k, v] : labels) s += (s.empty() ? "" : " ") + k + "=" + v;
  return s;
}

}  // namespace kvsim
