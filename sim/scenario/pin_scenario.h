// Pinning a loaded scenario tree, so that the scenario.resolved.yaml an output directory
// keeps reproduces it on its own: after a refit of the shipped presets, on another build
// with the same code, or with another file of the same name on the trace search path.
//
//   model:     the preset's keys (layers, compute numbers, dtypes, ...) are written in,
//              under the scenario's own keys, which still win; `preset` stays, so the run
//              names it as before, but nothing is read from the preset any more. A draft
//              model is pinned the same way. A model built from `hf_config` is left as is.
//   hardware:  the same with the hardware preset's coefficients (H100-SXM when none is
//              named). A `hardware.file` (a calibration) is left as is: its keys are the
//              user's and its path is recorded.
//   workload:  a trace gets `sha256`, `bytes` and `resolved_path` (relative to the working
//              directory when under it, else absolute) beside its `path`; a run
//              of a pinned scenario refuses a trace file whose hash differs, and says why.
//
// A section that a sweep axis switches (model.preset, hardware.preset, a whole section, the
// trace path) is not pinned: the axis would meet the pinned keys of another preset. Pinning
// is idempotent: a pinned tree pins to itself, so its scenario hash (the sweep id) is stable
// across reruns, while a refit of a preset changes the hash of a scenario that names it.
#pragma once

#include <string>

#include "sim/config/config_tree.h"

namespace kvsim {

// `source` is the scenario file as given (its folder is on the trace search path).
void PinScenarioTree(ConfigNode& tree, const std::string& source);

}  // namespace kvsim
