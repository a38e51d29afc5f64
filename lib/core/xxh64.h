// XXH64 (Collet, github.com/Cyan4973/xxHash), streaming, seed 0: the content hash of a pack (data/pack.h).
// Not a cryptographic hash: it catches damage, fast; checkpoints use SHA-256 (core/sha256.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kg {

class Xxh64 {
 public:
  // Feeds more bytes; may be called any number of times, before and after digest().
  Xxh64& update(const void* data, size_t n);
  Xxh64& update(std::string_view bytes) { return update(bytes.data(), bytes.size()); }
  // The hash of every byte fed so far (the state is left as it was).
  uint64_t digest() const;

 private:
  void stripe(const unsigned char* p);
  uint64_t v_[4] = {0x9E3779B185EBCA87ULL + 0xC2B2AE3D27D4EB4FULL, 0xC2B2AE3D27D4EB4FULL, 0,
                    0 - 0x9E3779B185EBCA87ULL};  // seed 0: P1 + P2, P2, 0, -P1
  uint64_t total_ = 0;
  unsigned char mem_[32];
  size_t mem_size_ = 0;
};

// The XXH64 (seed 0) of `bytes`: `xxhsum -H64` of the same bytes.
uint64_t xxh64(std::string_view bytes);

}  // namespace kg
