// PNG files for screenshots and screenshot tests, through Debian's libstb (stb_image_write
// and stb_image are compiled into libstb.so; nothing here defines an STB implementation).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace kvsim::viz {

struct Image {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> rgba;           // row-major, top row first, 4 bytes per pixel
  uint32_t Pixel(int x, int y) const;  // 0xAABBGGRR like Rgba
};

// `rgba` top row first.
Status WritePng(const std::string& path, const Image& image);
Result<Image> ReadPng(const std::string& path);

}  // namespace kvsim::viz
