// SHA-256 (FIPS 180-4), streaming: checkpoint manifests record one per file so a resume can tell a
// complete checkpoint from a truncated or bit-flipped one.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kg {

class Sha256 {
 public:
  Sha256();
  // Feeds more bytes; may be called any number of times before digest().
  Sha256& update(const void* data, size_t n);
  Sha256& update(std::string_view bytes) { return update(bytes.data(), bytes.size()); }
  // Finishes the hash (the object is then spent: a further update or digest is an internal error).
  std::array<uint8_t, 32> digest();
  // digest() as 64 lower-case hex digits.
  std::string hex_digest();

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_{};
  size_t buf_len_ = 0;
  uint64_t total_ = 0;  // bytes fed so far
  bool done_ = false;
};

// The hex SHA-256 of `bytes`.
std::string sha256_hex(std::string_view bytes);
// The hex SHA-256 of a file, read in chunks; DataError naming the path when it cannot be read.
std::string sha256_file_hex(const std::string& path);

}  // namespace kg
