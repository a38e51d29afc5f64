// Whether this process's allocator keeps malloc statistics (glibc's does; AddressSanitizer's, in the sanitizer build
// of scripts/sanitize.sh, reports zero): memory figures measured from them (kg::device::heap_in_use, as
// `kgtrain bench-model` measures) are checked only where they exist.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "device/memory_probe.h"

namespace kg::test {

inline bool heap_statistics_available() {
  std::vector<char> probe(size_t{8} << 20, 1);
  return kg::device::heap_in_use() >= static_cast<int64_t>(probe.size());
}

}  // namespace kg::test
