// Labels: what names a point of an experiment, the sweep keys it sets and their values as
// written in the scenario, in axis order ({"cache.block_size", "16"}, ...); empty for a run
// without a sweep. Sweeps make them (sim/sweep/sweep_spec.h), outputs print them.
#pragma once

#include <string>
#include <string_view>
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

// The label of a table row: LabelOf with the `cluster.` and `cluster.topology.` prefixes of
// P/D keys left out (prefill.count=2 decode.count=2 nic_gbytes_per_s=25), so a P/D sweep's
// table stays narrow; the CSVs and warnings keep the full keys.
inline std::string ShortLabelOf(const Labels& labels) {
  std::string s;
  for (const auto& [k, v] : labels) {
    std::string_view key = k;
    if (key.starts_with("cluster.")) key.remove_prefix(8);
    if (key.starts_with("topology.")) key.remove_prefix(9);
    s += (s.empty() ? "" : " ") + std::string(key) + "=" + v;
  }
  return s;
}

}  // namespace kvsim
