// CSV fields as kvsim writes them: one number format for every metric column (6 significant
// digits, the same bytes on every platform fmt supports) and RFC 4180 quoting. Used by the
// per-request CSVs of the engine and the P/D cluster and by the sweep CSVs.
#pragma once

#include <string>

namespace kvsim {

// A real number with 6 significant digits ("0.512346", "1.51275e+09").
std::string CsvNumber(double v);
// One CSV field, quoted when it holds a comma, quote or newline.
std::string CsvField(const std::string& s);

}  // namespace kvsim
