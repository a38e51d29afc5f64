// Reference: github.com/Cyan4973/xxHash, xxhash.h, XXH64 streaming.
#include "core/xxh64.h"

#include <cstring>

namespace kg {
namespace {
namespace xxh {  // named: lib/ compiles in unity batches, where short anonymous names could clash

constexpr uint64_t P1 = 0x9E3779B185EBCA87ULL, P2 = 0xC2B2AE3D27D4EB4FULL, P3 = 0x165667B19E3779F9ULL,
                   P4 = 0x85EBCA77C2B2AE63ULL, P5 = 0x27D4EB2F165667C5ULL;
inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
inline uint64_t round1(uint64_t acc, uint64_t input) { return rotl(acc + input * P2, 31) * P1; }
inline uint64_t merge(uint64_t acc, uint64_t v) { return (acc ^ round1(0, v)) * P1 + P4; }
inline uint64_t le64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
inline uint32_t le32(const unsigned char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace xxh
}  // namespace

void Xxh64::stripe(const unsigned char* p) {
  for (int i = 0; i < 4; ++i) v_[i] = xxh::round1(v_[i], xxh::le64(p + 8 * i));
}

Xxh64& Xxh64::update(const void* data, size_t n) {
  auto p = static_cast<const unsigned char*>(data);
  total_ += n;
  if (mem_size_ + n < 32) {
    if (n > 0) std::memcpy(mem_ + mem_size_, p, n);
    mem_size_ += n;
    return *this;
  }
  if (mem_size_ > 0) {
    size_t take = 32 - mem_size_;
    std::memcpy(mem_ + mem_size_, p, take);
    stripe(mem_);
    p += take;
    n -= take;
    mem_size_ = 0;
  }
  for (; n >= 32; p += 32, n -= 32) stripe(p);
  if (n > 0) std::memcpy(mem_, p, n);
  mem_size_ = n;
  return *this;
}

uint64_t Xxh64::digest() const {
  using namespace xxh;
  uint64_t h;
  if (total_ >= 32) {
    h = rotl(v_[0], 1) + rotl(v_[1], 7) + rotl(v_[2], 12) + rotl(v_[3], 18);
    for (int i = 0; i < 4; ++i) h = merge(h, v_[i]);
  } else {
    h = P5;  // seed 0
  }
  h += total_;
  const unsigned char* p = mem_;
  size_t n = mem_size_;
  for (; n >= 8; p += 8, n -= 8) h = rotl(h ^ round1(0, le64(p)), 27) * P1 + P4;
  if (n >= 4) {
    h = rotl(h ^ (static_cast<uint64_t>(le32(p)) * P1), 23) * P2 + P3;
    p += 4;
    n -= 4;
  }
  for (; n > 0; ++p, --n) h = rotl(h ^ (*p * P5), 11) * P1;
  h ^= h >> 33;
  h *= P2;
  h ^= h >> 29;
  h *= P3;
  h ^= h >> 32;
  return h;
}

uint64_t xxh64(std::string_view bytes) { return Xxh64().update(bytes).digest(); }

}  // namespace kg
