#include "viz/png_image.h"

#include <stb_image.h>
#include <stb_image_write.h>

#include <cstring>

namespace kvsim::viz {

uint32_t Image::Pixel(int x, int y) const {
  const size_t i =
      (static_cast<size_t>(y) * static_cast<size_t>(width) + static_cast<size_t>(x)) * 4;
  uint32_t v;
  std::memcpy(&v, &rgba[i], 4);
  return v;
}

Status WritePng(const std::string& path, const Image& image) {
  if (image.width <= 0 || image.height <= 0 ||
      image.rgba.size() != static_cast<size_t>(image.width) * image.height * 4) {
    return Status::Error("bad_image", "nothing to write to " + path);
  }
  if (!stbi_write_png(path.c_str(), image.width, image.height, 4, image.rgba.data(),
                      image.width * 4)) {
    return Status::Error("write_failed", path + ": cannot write the PNG");
  }
  return Status::Ok();
}

Result<Image> ReadPng(const std::string& path) {
  int w = 0, h = 0, n = 0;
  unsigned char* px = stbi_load(path.c_str(), &w, &h, &n, 4);
  if (!px) return Status::Error("bad_png", path + ": cannot read the PNG");
  Image img;
  img.width = w;
  img.height = h;
  img.rgba.assign(px, px + static_cast<size_t>(w) * h * 4);
  stbi_image_free(px);
  return img;
}

}  // namespace kvsim::viz
