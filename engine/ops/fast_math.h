// Branch-free float functions that vectorize inside `#pragma omp simd` loops (std::exp
// does not without -ffast-math). exp uses the classic Cephes range reduction and degree-6
// polynomial: relative error under 2e-7 on [-87, 88], 0 below.
#pragma once
#include <cmath>
#include <cstdint>
#include <bit>

namespace fb {


inline float fast_exp(float x) {
  // Plain compares and an int round trip instead of fmin/fmax/floor: without -ffast-math
  // those keep their NaN and errno rules and GCC will not vectorize them well.
  x = x < -87.3f ? -87.3f : (x > 88.3f ? 88.3f : x);
  const float t = x * 1.44269504088896341f + 0.5f;
  const int32_t ti = static_cast<int32_t>(t);
  const float n = static_cast<float>(ti - (t < static_cast<float>(ti) ? 1 : 0));  // floor(t)
  float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  return p * std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
}

}  // namespace fb
