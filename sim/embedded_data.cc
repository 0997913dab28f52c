#include "sim/embedded_data.h"

namespace kvsim {

const std::string* FindEmbeddedFile(const std::string& repo_path) {
  for (const auto& f : EmbeddedDataFiles()) {
    if (repo_path == f.path) return &f.content;
  }
  return nullptr;
}

}  // namespace kvsim
