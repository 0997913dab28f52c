#include "kernels/reference/row_copy_ref.h"

#include <cstring>

namespace kvsim::kernels {

int64_t RunRowCopyHost(const RowCopyParams& p) {
  int64_t copied = 0;
  const int64_t rows = p.num_rows();
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* from = nullptr;
    uint8_t* to = nullptr;
    if (!p.Row(r, &from, &to)) continue;
    std::memcpy(to, from, static_cast<size_t>(p.row_bytes));
    ++copied;
  }
  return copied;
}

}  // namespace kvsim::kernels
