#include "core/large_array.h"

#include <cstdlib>
#include <new>
#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace kvsim {
namespace {

constexpr size_t kHugePage = size_t{1} << 21;
constexpr std::align_val_t kLineAlign{64};  // every element type fits a cache-line alignment

}  // namespace

void* AllocateLargeArray(size_t bytes) {
  if (bytes < kHugePage) return ::operator new(bytes, kLineAlign);
  const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = std::aligned_alloc(kHugePage, rounded);
  if (p == nullptr) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  madvise(p, rounded, MADV_HUGEPAGE);  // a hint; failure just means small pages
#endif
  return p;
}

void FreeLargeArray(void* p, size_t bytes) {
  if (bytes < kHugePage) {
    ::operator delete(p, kLineAlign);
  } else {
    std::free(p);
  }
}

}  // namespace kvsim
