// Sweep expansion: a scenario's `sweep:` block turned into the list of points it describes.
//
//   sweep:
//     cache.attn_pack_size: [1, 2, 4, 8]        # an axis: one key path, its values
//     cache.kv_memory_bytes: [16GiB, 32GiB]
//     zip:                                      # axes whose lists advance together
//       - {cache.block_size: [16, 32], workload.rate_per_s: [10, 20]}
//
//     seeds: 5                                  # replicates: every point over 5 seeds
//
// Points are the cartesian product of the axes in file order, the last axis varying fastest
// (nested loops); a zip group is one axis whose i-th value sets every key's i-th entry. Each
// point's tree is the scenario tree without `sweep`, with the values set at their key paths
// as `--set` would (keeping the sweep file's line numbers for error messages). Points are
// numbered 0..N−1 in that order; the number is the point's identity in sweep CSVs, shards
// and resumes.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sim/config/config_tree.h"
#include "sim/labels.h"

namespace kvsim {

// `seeds: N` is not an axis: each point runs N times, with seeds seed … seed+N−1 (`seed` of
// the scenario, default 0), and reports each metric's mean and 95 % interval over them
// (sim/run/replicates.h). A point is still one row, one shard slice, one journal line.
inline constexpr int64_t kMaxSweepSeeds = 1000;

struct SweepPoint {
  int64_t index = 0;
  Labels labels;  // key path → value, in axis order
  ConfigNode tree;
  std::string Label() const;  // "cache.attn_pack_size=2 cache.block_size=16" (LabelOf)
};

// The sweep's key paths in column order (empty when there is no sweep).
Result<std::vector<std::string>> SweepKeys(const ConfigNode& tree);

// Every point (one point with no labels when the tree has no `sweep:`).
Result<std::vector<SweepPoint>> ExpandSweep(const ConfigNode& tree);

// The sweep's `seeds` (1 when absent). An error names the line for a value that is not an
// integer in [1, kMaxSweepSeeds], or for `seeds` > 1 beside a `seed` axis.
Result<int64_t> SweepSeeds(const ConfigNode& tree);
// The scenario's `seed` (0 when absent): the first replicate's seed.
Result<int64_t> BaseSeed(const ConfigNode& tree);
// Sets sweep.seeds to `n` (`--seeds N`), creating the sweep block if there is none.
void SetSweepSeeds(ConfigNode& tree, int64_t n);
// A point's tree with `seed` set to `seed` (one replicate).
ConfigNode ReplicateTree(const ConfigNode& tree, int64_t seed);

// What identifies one sweep across its shards and reruns: a hash of the scenario tree as
// loaded (includes and --set applied, sweep block included) and its number of points. Every
// sweep CSV row carries both (columns sweep_id, sweep_points), so `kvsim merge` can refuse a
// shard of another sweep and name the points that are missing.
struct SweepIdentity {
  std::string id;       // 16 hex digits
  int64_t points = 0;   // points of the whole sweep (all shards)
};
SweepIdentity IdentifySweep(const ConfigNode& tree, int64_t num_points);

// `--set` beats `sweep:`: for every override "key.path=value" whose key path is a sweep
// axis, the axis is dropped from the tree's sweep block (a key of a zip group leaves the
// group; an emptied group goes), so the --set value holds at every point. Returns one note
// per dropped key for the user ("cache.block_size is swept (4 values); --set fixes it to 64").
std::vector<std::string> FixSweptKeys(ConfigNode& tree, const std::vector<std::string>& overrides);

// Sets `node` at a dotted key path, creating maps on the way (the `--set` rule, including
// that setting model.preset drops an inline model).
void SetAtPath(ConfigNode& root, const std::string& path, const ConfigNode& node);

}  // namespace kvsim
