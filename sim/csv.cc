#include "sim/csv.h"

#include <fmt/format.h>

namespace kvsim {

std::string CsvNumber(double v) { return fmt::format("{:.6g}", v); }

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

}  // namespace kvsim
