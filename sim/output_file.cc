#include "sim/output_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace kvsim {

Status WriteFileAtomically(const std::string& path, std::string_view content) {
  const std::string tmp = path + ".tmp";
  std::error_code ec;
  auto fail = [&](const std::string& what) {
    const std::string why = errno != 0 ? std::string(": ") + std::strerror(errno) : "";
    std::filesystem::remove(tmp, ec);
    return Status::Error("io_error", what + why);
  };
  errno = 0;
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return fail(tmp + ": cannot write");
    f.write(content.data(), static_cast<std::streamsize>(content.size()));
    f.flush();
    if (!f) return fail(tmp + ": write failed");
    f.close();
    if (!f) return fail(tmp + ": write failed");
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return Status::Error("io_error", path + ": rename failed: " + ec.message());
  }
  return Status::Ok();
}

}  // namespace kvsim
