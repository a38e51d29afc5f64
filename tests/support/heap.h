// Whether this process's allocator keeps malloc statistics (glibc's does; AddressSanitizer's, in the sanitizer build
// of scripts/sanitize.sh, reports zero): memory figures measured from them are checked only where they exist.
#pragma once
#include <malloc.h>

#include <cstddef>
#include <vector>

namespace kg::test {

// Bytes malloc has handed out (heap + mmap); glibc before 2.33 only has the int-sized mallinfo().
inline size_t heap_in_use() {
#if __GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33)
  struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
#else
  struct mallinfo m = mallinfo();
  return static_cast<size_t>(static_cast<unsigned>(m.uordblks)) + static_cast<size_t>(static_cast<unsigned>(m.hblkhd));
#endif
}

inline bool heap_statistics_available() {
  std::vector<char> probe(size_t{8} << 20, 1);
  return heap_in_use() >= probe.size();
}

}  // namespace kg::test
