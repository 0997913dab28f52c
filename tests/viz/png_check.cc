// viz_png_check: checks that a kvsim-viz screenshot has the structure its panel should have.
//   viz_png_check FILE.png --size WxH [--expect NAME[:MIN_PIXELS]]...
// Always: the size matches, the image is not blank (no colour covers more than 97% of it, and
// there are at least 8 distinct colours: text and widgets were drawn). Each --expect names a
// palette colour (K, V, conv, ssm, padding, highlight, series0, series1, ...) that must
// cover at least MIN_PIXELS pixels (default 50) exactly — legend colours are drawn unblended.
// Exit 0 when every check holds, 1 otherwise (each failure is printed), 2 on bad arguments.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <unordered_map>

#include "viz/colors.h"
#include "viz/panels/steps_panel.h"
#include "viz/png_image.h"

using kvsim::viz::Rgba;

namespace {

bool ColourByName(const std::string& name, Rgba* out) {
  namespace p = kvsim::viz::palette;
  static const std::map<std::string, Rgba> kNamed = {
      {"K", p::kKey},
      {"V", p::kValue},
      {"conv", p::kConv},
      {"ssm", p::kSsm},
      {"padding", p::kPadding},
      {"highlight", p::kHighlight},
      {"free", p::kFree},
      {"cached", p::kCached},
      {"unknown_holder", p::kUnknownHolder},
      {"in_flight", p::kCpuInFlight},
      {"ready", p::kCpuReady},
      {"loading", p::kCpuLoading},
      {"prefill", kvsim::viz::steps_palette::kPrefill},
      {"decode", kvsim::viz::steps_palette::kDecode},
      {"recompute", kvsim::viz::steps_palette::kRecompute},
      {"preempt", kvsim::viz::steps_palette::kPreempt}};
  if (auto it = kNamed.find(name); it != kNamed.end()) {
    *out = it->second;
    return true;
  }
  if (name.rfind("series", 0) == 0) {
    *out = kvsim::viz::CategoricalColour(std::atoi(name.c_str() + 6));
    return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: viz_png_check FILE.png --size WxH [--expect NAME[:MIN]]...\n");
    return 2;
  }
  const std::string path = argv[1];
  int want_w = 0, want_h = 0;
  std::map<std::string, int> expect;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--size" && i + 1 < argc) {
      if (std::sscanf(argv[++i], "%dx%d", &want_w, &want_h) != 2) return 2;
    } else if (a == "--expect" && i + 1 < argc) {
      std::string e = argv[++i];
      int min = 50;
      if (auto c = e.find(':'); c != std::string::npos) {
        min = std::atoi(e.c_str() + c + 1);
        e = e.substr(0, c);
      }
      Rgba dummy;
      if (!ColourByName(e, &dummy)) {
        std::fprintf(stderr, "viz_png_check: unknown colour name %s\n", e.c_str());
        return 2;
      }
      expect[e] = min;
    } else {
      std::fprintf(stderr, "viz_png_check: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  auto img = kvsim::viz::ReadPng(path);
  if (!img.ok()) {
    std::fprintf(stderr, "FAIL %s: %s\n", path.c_str(), img.status().message().c_str());
    return 1;
  }
  int failures = 0;
  const kvsim::viz::Image& im = img.value();
  if (want_w > 0 && (im.width != want_w || im.height != want_h)) {
    std::fprintf(stderr, "FAIL %s: size %dx%d, expected %dx%d\n", path.c_str(), im.width, im.height,
                 want_w, want_h);
    ++failures;
  }
  std::unordered_map<uint32_t, int> counts;
  for (int y = 0; y < im.height; ++y) {
    for (int x = 0; x < im.width; ++x) ++counts[im.Pixel(x, y) | 0xff000000u];
  }
  int top = 0;
  for (const auto& [c, n] : counts) top = std::max(top, n);
  const double total = static_cast<double>(im.width) * im.height;
  if (top > 0.97 * total || counts.size() < 8) {
    std::fprintf(stderr, "FAIL %s: looks blank (%zu colours, the commonest covers %.1f%%)\n",
                 path.c_str(), counts.size(), 100.0 * top / total);
    ++failures;
  }
  for (const auto& [name, min] : expect) {
    Rgba c = 0;
    ColourByName(name, &c);
    const auto it = counts.find(c | 0xff000000u);
    const int n = it == counts.end() ? 0 : it->second;
    if (n < min) {
      std::fprintf(stderr, "FAIL %s: colour %s (#%02x%02x%02x) covers %d pixels, expected >= %d\n",
                   path.c_str(), name.c_str(), kvsim::viz::RedOf(c), kvsim::viz::GreenOf(c),
                   kvsim::viz::BlueOf(c), n, min);
      ++failures;
    }
  }
  if (failures == 0) {
    std::printf("ok %s: %dx%d, %zu colours", path.c_str(), im.width, im.height, counts.size());
    for (const auto& [name, min] : expect) {
      Rgba c = 0;
      ColourByName(name, &c);
      std::printf(", %s %d px", name.c_str(), counts[c | 0xff000000u]);
    }
    std::printf("\n");
  }
  return failures == 0 ? 0 : 1;
}
