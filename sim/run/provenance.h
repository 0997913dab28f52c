// Provenance of an output directory, written by `kvsim run -o`, `kvsim sweep` and the Python
// module (python/): DIR/scenario.resolved.yaml (the scenario tree after includes and --set,
// with the seed spelled out, so `kvsim run DIR/scenario.resolved.yaml` reproduces the run) and
// DIR/provenance.json (kvsim version, scenario source, overrides, seed, scenario hash = the
// sweep id, number of points, and how the command ran: its command line, host, start time
// (UTC), threads, seeds, shard and, once it ended, its wall time). A shard of a sweep writes
// provenance.shard-K-of-N.json instead, so the tasks of a Slurm array never overwrite each
// other's. It lives here, not in apps/, so that the CLI and the module write the same files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "sim/config/config_tree.h"

namespace kvsim {

struct ProvenanceContext {
  std::string version;                 // the kvsim build (apps/kvsim/version.h)
  std::string command;                 // "run" | "sweep"
  std::string scenario;                // the scenario path as given; "" = built-in default
  std::vector<std::string> overrides;  // --set a.b=v, in order
  int jobs = 1;
  int64_t seeds = 1;
  int shard_k = 0, shard_n = 1;
  double wall_s = -1;  // < 0: still running (not written)
};

// provenance.json's text (no trailing newline) for `tree` as run.
std::string ProvenanceJsonText(const ConfigNode& tree, const std::string& scenario_hash,
                               int64_t points, const ProvenanceContext& context);

// Writes DIR/scenario.resolved.yaml and DIR/provenance.json (or the shard's file), creating DIR.
Status WriteProvenance(const std::string& dir, const ConfigNode& tree,
                       const std::string& scenario_hash, int64_t points,
                       const ProvenanceContext& context);

// Refuses (bad input, code "out_dir_taken") a DIR whose provenance names another scenario
// hash, or that holds results without one, unless `force`.
Status CheckOutDir(const std::string& dir, const std::string& scenario_hash, bool force);

}  // namespace kvsim
