// The kernels for AVX-512 (F, BW, DQ, VL), 16 floats a vector with masked tails; compiled
// with those extensions alone (engine/CMakeLists.txt). Nothing here is inline in a header
// or a library template: a copy the linker might hand to code running on an AVX2 CPU
// (tests/check_isa_objects.sh checks the object defines no such symbol).
#include <immintrin.h>

#include <cstdint>

#include "engine/ops/isa_kernels.h"

namespace fb {

namespace {

__mmask16 tail_mask(int64_t left) { return left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1u); }

// softmax_exp (engine/ops/fast_math.h), 16 lanes: fast_exp(d) * (d >= -69) with the same
// reduction and Cephes polynomial. The `#pragma omp simd` loops over the scalar one left a
// row of 197 (ViT's sequence) at about 4 cycles per element: GCC splits off a scalar
// remainder and keeps its 256-bit preference.
__m512 softmax_exp16(__m512 d) {
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

// The largest and the sum of the 16 lanes, halving through 256 and 128 bits. (GCC 12's
// _mm512_reduce_* and _mm512_castps512_ps256 warn of their own undefined vectors.)
float horizontal_max(__m512 v) {
  const __m256 h = _mm256_max_ps(_mm512_maskz_extractf32x8_ps(0xFF, v, 0), _mm512_maskz_extractf32x8_ps(0xFF, v, 1));
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

float horizontal_sum(__m512 v) {
  const __m256 h = _mm256_add_ps(_mm512_maskz_extractf32x8_ps(0xFF, v, 0), _mm512_maskz_extractf32x8_ps(0xFF, v, 1));
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

float softmax_row_max(const float* x, int64_t n) {
  __m512 mx = _mm512_set1_ps(-__builtin_inff());
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail_mask(n - i);
    mx = _mm512_mask_max_ps(mx, k, _mm512_maskz_loadu_ps(k, x + i), mx);  // a NaN x gives mx
  }
  return horizontal_max(mx);
}

float softmax_exp_row(const float* in, float* out, int64_t n, float mx) {
  const __m512 vmx = _mm512_set1_ps(mx);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail_mask(n - i);
    const __m512 e = softmax_exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, in + i), vmx));
    _mm512_mask_storeu_ps(out + i, k, e);
    sum = _mm512_mask_add_ps(sum, k, sum, e);
  }
  return horizontal_sum(sum);
}

void scale_row(float* x, int64_t n, float s) {
  const __m512 vs = _mm512_set1_ps(s);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail_mask(n - i);
    _mm512_mask_storeu_ps(x + i, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + i), vs));
  }
}

// Rounded (to nearest even), clamped and shifted in float, then converted. GCC leaves the
// scalar loop unvectorized (nearbyint), about 1.4 cycles per element: as long as the
// layer's memory traffic.
template <typename Q>
void quantize(const float* x, int64_t n, float inv_scale, float lo, float hi, float shift, Q* out) {
  const __m512 inv = _mm512_set1_ps(inv_scale), vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi), vshift = _mm512_set1_ps(shift);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail_mask(n - i);
    const __m512 r = _mm512_roundscale_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + i), inv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512i q = _mm512_cvtps_epi32(_mm512_add_ps(_mm512_min_ps(_mm512_max_ps(r, vlo), vhi), vshift));
    _mm_mask_storeu_epi8(out + i, k, _mm512_cvtepi32_epi8(q));  // in range: truncation is exact
  }
}

// 16·V channels from c0 (the last vector under `tail`), started from the first pixel:
// vmaxps(p, acc) keeps acc where either is NaN, which is the op kernel's "replace where larger".
template <int V>
void window_max(const float* const* rows, int64_t nh, const int64_t* cols, int64_t nw, int64_t c0, __mmask16 tail, float* y) {
  auto mask = [&](int v) { return v == V - 1 ? tail : __mmask16(0xFFFF); };
  __m512 acc[V];
  for (int v = 0; v < V; ++v) acc[v] = _mm512_maskz_loadu_ps(mask(v), rows[0] + cols[0] + c0 + 16 * v);
  for (int64_t i = 0; i < nh; ++i)
    for (int64_t j = 0; j < nw; ++j) {
      const float* p = rows[i] + cols[j] + c0;
      // maskz_max: GCC 12's _mm512_max_ps starts from an undefined vector and warns.
      for (int v = 0; v < V; ++v) acc[v] = _mm512_maskz_max_ps(0xFFFF, _mm512_maskz_loadu_ps(mask(v), p + 16 * v), acc[v]);
    }
  for (int v = 0; v < V; ++v) _mm512_mask_storeu_ps(y + c0 + 16 * v, mask(v), acc[v]);
}

void window_max_nhwc(const float* const* rows, int64_t nh, const int64_t* cols, int64_t nw, int64_t c, float* y) {
  int64_t c0 = 0;
  for (; c0 + 64 <= c; c0 += 64) window_max<4>(rows, nh, cols, nw, c0, 0xFFFF, y);
  const int64_t left = c - c0;
  if (left == 0) return;
  const __mmask16 tail = tail_mask(left % 16 ? left % 16 : 16);
  switch ((left + 15) / 16) {
    case 1: return window_max<1>(rows, nh, cols, nw, c0, tail, y);
    case 2: return window_max<2>(rows, nh, cols, nw, c0, tail, y);
    case 3: return window_max<3>(rows, nh, cols, nw, c0, tail, y);
    default: return window_max<4>(rows, nh, cols, nw, c0, tail, y);  // 49 to 63 left
  }
}

}  // namespace

// Byte tables: AVX512_VBMI's where the CPU has it, else the generic loop (isa_kernels.cpp).
extern const IsaKernels kIsaKernelsAvx512{KernelIsa::Avx512,     softmax_row_max, softmax_exp_row, scale_row, quantize<int8_t>,
                                          quantize<uint8_t>, nullptr,         window_max_nhwc};

}  // namespace fb
