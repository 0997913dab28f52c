// Writing an output file whole or not at all. A run's outputs (metrics.json, requests.csv,
// summary.csv, sweep CSVs, traces) are written to PATH.tmp and renamed over PATH, so a disk
// that fills or a directory that cannot be written never leaves a truncated or zero-byte
// PATH behind (the temp file is removed on failure). Errors carry the code "io_error",
// which the CLI maps to its own exit code (not 2: the input was fine).
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace kvsim {

Status WriteFileAtomically(const std::string& path, std::string_view content);

}  // namespace kvsim
