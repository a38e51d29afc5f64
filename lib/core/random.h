// Counter-based randomness: every random draw in the data stream is a function of
// (seed, epoch, sample index), never of thread timing, so worker count and resume cannot change it.
#pragma once
#include <cstdint>

namespace kg {

// SplitMix64 finalizer (Steele et al., "Fast splittable pseudorandom number generators").
inline uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// A seed for one stream, derived from up to four coordinates.
inline uint64_t stream_seed(uint64_t seed, uint64_t a = 0, uint64_t b = 0, uint64_t c = 0) {
  return mix64(mix64(mix64(mix64(seed) ^ a) ^ b) ^ c);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() { return mix64(state_++); }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Uniform integer in [0, n); n > 0. Lemire's multiply-shift (bias < 2^-64 * n, irrelevant here).
  uint64_t below(uint64_t n) { return static_cast<uint64_t>((static_cast<__uint128_t>(next()) * n) >> 64); }

 private:
  uint64_t state_;
};

}  // namespace kg
