// Branch-free float functions that vectorize inside `#pragma omp simd` loops (std::exp
// does not without -ffast-math). exp uses the classic Cephes range reduction and degree-6
// polynomial: relative error under 2e-7 on [-87, 88], 0 below.
#pragma once
#include <cmath>
#include <cstdint>
#include <bit>

namespace fb {


inline float fast_exp(float x_in) {
  // Plain compares and an int round trip instead of fmin/fmax/floor: without -ffast-math
  // those keep their NaN and errno rules and GCC will not vectorize them well.
  const float x = x_in < -87.3f ? -87.3f : (x_in > 88.3f ? 88.3f : x_in);
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
  const float e = p * std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
  // Exactly 0 below the range, not the smallest normal float: a softmax over masked scores
  // (-3.4e38 added) divides that by the row sum into denormals, and matmuls reading
  // denormal probabilities run microcode assists on Intel cores (BERT's attention 25x slower).
  // A multiply by the comparison, not `?:`: GCC 12 stops vectorizing the loops over this.
  return e * static_cast<float>(x_in >= -87.3f);
}

// The largest of x[0..n) (-inf for n = 0; NaNs are skipped, as a softmax's exp then
// brings them back). Written as a compare and select: GCC 12 leaves a std::max reduction
// scalar, one 4-cycle vmaxss after another, and that was two thirds of a softmax's time.
inline float row_max(const float* x, int64_t n) {
  float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
  for (int64_t i = 0; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  return mx;
}

// exp(d) for a softmax's d = x - max(x) <= 0: exactly 0 below -69 (e^-69 is about 1e-30,
// nothing beside the row's largest term, 1), so that no term, and no term divided by a
// row sum of up to 2^26 terms, is a denormal. On Intel cores every operation on a
// denormal takes a microcode assist, in the softmax and in the matmul that reads the
// probabilities after it (ViT-tiny's unmasked scores reach far enough down for that).
inline float softmax_exp(float d) { return fast_exp(d) * static_cast<float>(d >= -69.f); }

// erf, vectorizable (glibc's erff is scalar: it made the reference's Erf ten times slower
// than PyTorch's vectorized one). |x| < 0.5: the odd Taylor series to x^13, relative error
// under 2e-7 (float rounding); beyond: Abramowitz & Stegun 7.1.26 with fast_exp, absolute error under 4e-7.
// Both are computed and one selected, so the loop stays branch-free.
inline float fast_erf(float x) {
  const float ax = x < 0.f ? -x : x;
  const float x2 = x * x;
  float s = -1.f / 9360.f;  // 2/√π · Σ (-1)^n x^(2n+1) / (n! (2n+1)), Horner in x²
  s = s * x2 + 1.f / 1320.f;
  s = s * x2 - 1.f / 216.f;
  s = s * x2 + 1.f / 42.f;
  s = s * x2 - 1.f / 10.f;
  s = s * x2 + 1.f / 3.f;
  s = s * x2 - 1.f;
  const float small = -1.12837916709551257f * x * s;
  const float t = 1.f / (1.f + 0.3275911f * ax);
  float p = 1.061405429f;
  p = p * t - 1.453152027f;
  p = p * t + 1.421413741f;
  p = p * t - 0.284496736f;
  p = p * t + 0.254829592f;
  const float big = 1.f - p * t * fast_exp(-x2);
  const float large = x < 0.f ? -big : big;
  return ax < 0.5f ? small : large;
}

// The logistic function, vectorizable (std::exp is not: a LLaMA MLP's SiLU chain took
// 0.31 ms for 87k elements). Exactly 0 below -87, where the true value is a denormal;
// NaN stays NaN.
inline float fast_sigmoid(float x) { return static_cast<float>(!(x < -87.f)) / (1.f + fast_exp(-x)); }

// tanh, vectorizable. |x| < 0.4: the odd Taylor series to x^13 (truncation under 2e-9);
// beyond: 1 - 2 / (e^2x + 1) with fast_exp, relative error under 1e-6, saturating at ±1;
// NaN stays NaN.
// Both are computed and one selected, so the loop stays branch-free.
inline float fast_tanh(float x) {
  const float x2 = x * x;
  float s = 21844.f / 6081075.f;
  s = s * x2 - 1382.f / 155925.f;
  s = s * x2 + 62.f / 2835.f;
  s = s * x2 - 17.f / 315.f;
  s = s * x2 + 2.f / 15.f;
  s = s * x2 - 1.f / 3.f;
  const float small = x + x * x2 * s;
  // e^80 at most: 2 / (e^2x + 1) stays a normal float on the way to 1 (no denormal assists).
  const float large = 1.f - 2.f / (fast_exp(2.f * (x > 40.f ? 40.f : x)) + 1.f);
  return (x < 0.f ? -x : x) < 0.4f ? small : large;
}

}  // namespace fb
