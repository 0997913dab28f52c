// Pinning input files by content: a file's SHA-256 and size, so that an output directory
// records exactly which trace it read and a rerun can refuse another file of the same name
// (a trace is found through a search path: the scenario's folder, the working directory,
// $KVSIM_TRACE_DIR, the shared data folder, the built-in samples).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace kvsim {

// Lower-case hex SHA-256 of `data` (OpenSSL's libcrypto).
std::string Sha256Hex(std::string_view data);

struct FilePin {
  int64_t bytes = 0;
  std::string sha256;
};

// The pin of a file on disk, or of a built-in file (scenarios/traces/...) when `path` names
// no file on disk but an embedded one. An error names the path.
Result<FilePin> PinFile(const std::string& path);

}  // namespace kvsim
