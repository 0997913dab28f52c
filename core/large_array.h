// Memory for a block pool's big arrays (block records, the cache map, the free ring). Arrays
// of 2 MiB or more are 2 MiB-aligned and, on Linux, advised to use transparent huge pages
// before first touch: eviction and caching touch the map and the records at random, and with
// 4 KiB pages nearly every such access also misses the TLB (measured ≈ 12–15% of replay time
// at block 16). Smaller arrays are cache-line aligned. The caller owns what it allocates and
// gives it back with the same size; LargeVector does that for a std::vector.
#pragma once

#include <cstddef>
#include <vector>

namespace kvsim {

void* AllocateLargeArray(size_t bytes);
void FreeLargeArray(void* p, size_t bytes);

template <class T>
struct LargeArrayAllocator {
  using value_type = T;
  LargeArrayAllocator() = default;
  template <class U>
  LargeArrayAllocator(const LargeArrayAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(AllocateLargeArray(n * sizeof(T))); }
  void deallocate(T* p, size_t n) { FreeLargeArray(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const LargeArrayAllocator<U>&) const {
    return true;
  }
};

template <class T>
using LargeVector = std::vector<T, LargeArrayAllocator<T>>;

}  // namespace kvsim
