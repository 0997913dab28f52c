// Host reference of the row-copy engine behind append, gather and layout conversion: the
// same RowCopyParams the CUDA kernel gets, executed with plain memcpy over host buffers.
// Always built (no CUDA). The GPU validation mode compares the device result with this
// byte for byte over whole allocations, so any stray write into padding or into another
// layer's bytes shows up as a mismatch.
#pragma once

#include <cstdint>

#include "kernels/kv_side.h"

namespace kvsim::kernels {

// REQUIRES: every base pointer in p addresses host memory large enough for the layouts.
// Returns the number of rows copied (skipped tokens excluded).
int64_t RunRowCopyHost(const RowCopyParams& p);

}  // namespace kvsim::kernels
