// A softmax row's three passes (max, exp and sum, scale) written for AVX-512 with masked
// tails. The `#pragma omp simd` loops over fast_math.h's functions left a row of 197 (ViT's
// sequence) at about 4 cycles per element: GCC splits off a scalar remainder and keeps its
// 256-bit preference; these run the whole row 16 lanes at a time. Same formulas as
// softmax_exp (the Cephes polynomial, exactly 0 below -69); without AVX-512 they are the loops.
#pragma once
#include <cstdint>

#include "engine/ops/fast_math.h"
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace fb {

#if defined(__AVX512F__)
inline __mmask16 row_tail_mask(int64_t left) { return left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1u); }

// fast_exp(d) * (d >= -69), 16 lanes: the same reduction and polynomial as the scalar one.
inline __m512 softmax_exp16(__m512 d) {
  const __m512 x = _mm512_min_ps(_mm512_max_ps(d, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(88.3f));
  const __m512 n = _mm512_roundscale_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), _mm512_set1_ps(0.5f)),
                                        _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  const __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440e-4f), _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x));
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r), _mm512_set1_ps(1.f));
  const __m512i pow2 = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  const __mmask16 kept = _mm512_cmp_ps_mask(d, _mm512_set1_ps(-69.f), _CMP_GE_OQ);
  const __m512 e = _mm512_maskz_mul_ps(kept, p, _mm512_castsi512_ps(pow2));
  return _mm512_mask_mov_ps(e, _mm512_cmp_ps_mask(d, d, _CMP_UNORD_Q), d);  // NaN stays NaN, as in the scalar one
}
#endif

// The largest of x[0..n) (-inf for n = 0; NaNs skipped, as row_max).
inline float softmax_row_max(const float* x, int64_t n) {
#if defined(__AVX512F__)
  __m512 mx = _mm512_set1_ps(-INFINITY);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = row_tail_mask(n - i);
    mx = _mm512_mask_max_ps(mx, k, _mm512_maskz_loadu_ps(k, x + i), mx);  // a NaN x gives mx
  }
  return _mm512_reduce_max_ps(mx);
#else
  return row_max(x, n);
#endif
}

// out[i] = softmax_exp(in[i] - mx) over the row (out may be in); returns their sum.
inline float softmax_exp_row(const float* in, float* out, int64_t n, float mx) {
#if defined(__AVX512F__)
  const __m512 vmx = _mm512_set1_ps(mx);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = row_tail_mask(n - i);
    const __m512 e = softmax_exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, in + i), vmx));
    _mm512_mask_storeu_ps(out + i, k, e);
    sum = _mm512_mask_add_ps(sum, k, sum, e);
  }
  return _mm512_reduce_add_ps(sum);
#else
  float sum = 0.f;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) sum += (out[i] = softmax_exp(in[i] - mx));
  return sum;
#endif
}

// x[0..n) *= s.
inline void scale_row(float* x, int64_t n, float s) {
#if defined(__AVX512F__)
  const __m512 vs = _mm512_set1_ps(s);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = row_tail_mask(n - i);
    _mm512_mask_storeu_ps(x + i, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + i), vs));
  }
#else
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
#endif
}

}  // namespace fb
