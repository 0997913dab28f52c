#include "sim/file_pin.h"

#include <openssl/evp.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "sim/embedded_data.h"

namespace kvsim {

std::string Sha256Hex(std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), data.data(), data.size()) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), md.data(), &len) != 1) {
    return "";
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * len);
  for (unsigned int i = 0; i < len; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

Result<FilePin> PinFile(const std::string& path) {
  std::error_code ec;
  std::string text;
  if (std::filesystem::is_regular_file(path, ec)) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    if (!f && !f.eof()) return Status::Error("io_error", path + ": cannot read");
    text = ss.str();
  } else if (const std::string* embedded = FindEmbeddedFile(path)) {
    text = *embedded;
  } else {
    return Status::Error("missing_file", path + ": cannot read");
  }
  return FilePin{static_cast<int64_t>(text.size()), Sha256Hex(text)};
}

}  // namespace kvsim
