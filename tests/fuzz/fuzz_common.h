// Shared by the libFuzzer targets under tests/fuzz/ (built only with -DKVSIM_FUZZ=ON and
// clang; see tests/fuzz/CMakeLists.txt). A target returns normally on every input the code
// under test rejects with a Status; it aborts (a finding) when the code crashes, hangs,
// or accepts input that breaks the parser's documented contract (ACCEPTED_INVALID below).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

// An input was accepted although the parser's contract says it is invalid.
#define ACCEPTED_INVALID(cond, what)                                          \
  do {                                                                        \
    if (!(cond)) {                                                            \
      std::fprintf(stderr, "ACCEPTED INVALID INPUT: %s (%s)\n", what, #cond); \
      std::abort();                                                           \
    }                                                                         \
  } while (0)

inline std::string AsText(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}
