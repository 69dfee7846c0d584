// A small seeded random generator for the statistics (bootstrap resampling, permutation
// tests) and their tests. Written out rather than taken from <random> because the standard
// distributions differ between library versions: a seeded result must be the same number
// on every machine, or a stored CI could not be reproduced from its samples.
#pragma once
#include <cmath>
#include <cstdint>

namespace fb {

// SplitMix64 (Steele, Lea, Flood 2014): 64 bits of state, passes BigCrush, and any seed,
// 0 included, is a good one.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

  // Uniform in [0, n), n > 0: Lemire's multiply-shift with rejection, so no modulo bias.
  uint64_t below(uint64_t n) {
    unsigned __int128 m = static_cast<unsigned __int128>(next()) * n;
    auto low = static_cast<uint64_t>(m);
    if (low < n) {
      const uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(next()) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  // Standard normal by Box–Muller (one of the pair is dropped: simplicity over speed).
  double normal() {
    double u1 = uniform();
    while (u1 <= 0) u1 = uniform();
    const double u2 = uniform();
    return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
  }

 private:
  uint64_t state_;
};

}  // namespace fb
