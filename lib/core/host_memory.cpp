#include "core/host_memory.h"

#include <climits>
#include <cstdlib>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace kg {

void keep_freed_host_memory() {
#if defined(__GLIBC__)
  if (!std::getenv("MALLOC_MMAP_THRESHOLD_")) mallopt(M_MMAP_THRESHOLD, 32 << 20);
  if (!std::getenv("MALLOC_TRIM_THRESHOLD_")) mallopt(M_TRIM_THRESHOLD, INT_MAX);  // ~2 GiB, the largest mallopt takes
#endif
}

}  // namespace kg
