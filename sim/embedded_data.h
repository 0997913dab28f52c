// Data files compiled into the binaries (scenarios/, model and hardware presets, sample
// traces), so that `kvsim run` with no argument and `model.preset` work from any directory.
// The files in the repository stay the source of truth; CMake regenerates the table.
#pragma once

#include <string>
#include <vector>

namespace kvsim {

struct EmbeddedFile {
  const char* path;     // repository-relative, e.g. "scenarios/models/llama-3.1-8b.yaml"
  std::string content;
};

const std::vector<EmbeddedFile>& EmbeddedDataFiles();

// The contents of an embedded file, or null.
const std::string* FindEmbeddedFile(const std::string& repo_path);
// How error positions and messages name an embedded file: "<built-in>/scenarios/...".
inline constexpr const char* kBuiltInPrefix = "<built-in>/";

}  // namespace kvsim
