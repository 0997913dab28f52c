// A small mutation fuzzer for the libFuzzer targets in this folder, for machines or builds
// without libFuzzer (scripts/mutate_fuzz.sh links it with one target instead of
// -fsanitize=fuzzer). It loads the seed corpus, then runs N inputs, each a seed with a few
// random edits (bit flips, interesting bytes and tokens such as 1e12 or a YAML alias,
// deleted, duplicated or spliced ranges), through LLVMFuzzerTestOneInput, and reports how
// many ran and the slowest one. A crash or an accepted invalid input aborts the process
// (the target's checks), and the input is written to ./mutate-crash first.
//   mutate_TARGET SEED_DIR N [RNG_SEED]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s SEED_DIR N [RNG_SEED]\n", argv[0]);
    return 2;
  }
  std::vector<std::string> seeds;
  for (const auto& e : std::filesystem::directory_iterator(argv[1])) {
    std::ifstream f(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    seeds.push_back(ss.str());
  }
  if (seeds.empty()) {
    std::fprintf(stderr, "no seeds in %s\n", argv[1]);
    return 2;
  }
  const long n = std::atol(argv[2]);
  std::mt19937_64 rng(argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1);
  auto below = [&](size_t k) { return k == 0 ? size_t{0} : static_cast<size_t>(rng() % k); };
  static const char* kTokens[] = {
      "1e12", "9223372036854775808", "4294967296", "-1", "0", "null", "~", "&a ", "*a", "[",
      "]", "{", "}", ": ", "- ", "\n", "\"", "'", "#", ",", "nan", ".inf", "1e309", "\xff\xfe",
      "<<: *a", "!!binary", "\t", "\r\n", "\"hash_ids\": [", "\"input_length\": ",
      "\"timestamp\": -", "2023-13-45 25:61:99", "TIMESTAMP", "ContextTokens", "99999999999"};
  std::string worst_input;
  double worst_ms = 0;
  for (long i = 0; i < n; ++i) {
    std::string s = seeds[below(seeds.size())];
    const int edits = 1 + static_cast<int>(below(6));
    for (int k = 0; k < edits; ++k) {
      const size_t pos = below(s.size() + 1);
      switch (below(7)) {
        case 0:
          if (!s.empty()) s[below(s.size())] ^= static_cast<char>(1 << below(8));
          break;
        case 1:
          if (!s.empty()) s[below(s.size())] = "\0\xff-9 :[{\n"[below(9)];
          break;
        case 2: s.insert(pos, kTokens[below(std::size(kTokens))]); break;
        case 3:
          if (!s.empty()) s.erase(pos, below(32));
          break;
        case 4: {  // duplicate a range
          const size_t len = below(64);
          if (pos + len <= s.size()) s.insert(pos, s.substr(pos, len));
          break;
        }
        case 5: {  // splice another seed
          const std::string& o = seeds[below(seeds.size())];
          const size_t from = below(o.size() + 1);
          s.insert(pos, o.substr(from, below(128)));
          break;
        }
        default: s.insert(pos, std::to_string(static_cast<int64_t>(rng()) >> below(64))); break;
      }
    }
    if (s.size() > 16384) s.resize(16384);
    std::ofstream("mutate-crash", std::ios::binary) << s;  // kept only if the next call dies
    const auto t0 = std::chrono::steady_clock::now();
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (ms > worst_ms) worst_ms = ms, worst_input = s;
  }
  std::filesystem::remove("mutate-crash");
  std::printf("%ld inputs, 0 crashes, 0 accepted invalid; slowest %.1f ms\n", n, worst_ms);
  return 0;
}
