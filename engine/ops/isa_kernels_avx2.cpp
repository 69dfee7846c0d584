// The kernels for AVX2 with FMA, 8 floats a vector, tails under a lane mask; compiled with
// -mno-avx512f (engine/CMakeLists.txt), so an AVX2 CPU runs every instruction here.
// Nothing here is inline in a header or a library template: the linker must not hand this
// file's copy to other code, nor another file's AVX-512 copy to this one
// (tests/check_isa_objects.sh checks both).
#include <immintrin.h>

#include <cstdint>

#include "engine/ops/isa_kernels.h"

namespace fb {

namespace {

// Lanes [0, left) set, for maskload/maskstore/blendv (left >= 8: all).
__m256i tail_mask(int64_t left) {
  alignas(32) static const int32_t kOnes[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kOnes + 8 - (left >= 8 ? 8 : left)));
}

// softmax_exp (engine/ops/fast_math.h), 8 lanes: the AVX-512 form's formulas.
__m256 softmax_exp8(__m256 d) {
  const __m256 x = _mm256_min_ps(_mm256_max_ps(d, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3f));
  const __m256 n = _mm256_floor_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), _mm256_set1_ps(0.5f)));
  const __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(2.12194440e-4f), _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x));
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_add_ps(_mm256_fmadd_ps(_mm256_mul_ps(p, r), r, r), _mm256_set1_ps(1.f));
  const __m256i pow2 = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  const __m256 kept = _mm256_cmp_ps(d, _mm256_set1_ps(-69.f), _CMP_GE_OQ);
  const __m256 e = _mm256_and_ps(kept, _mm256_mul_ps(p, _mm256_castsi256_ps(pow2)));
  return _mm256_blendv_ps(e, d, _mm256_cmp_ps(d, d, _CMP_UNORD_Q));  // NaN stays NaN, as in the scalar one
}

float horizontal_max(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

float horizontal_sum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

float softmax_row_max(const float* x, int64_t n) {
  const __m256 lowest = _mm256_set1_ps(-__builtin_inff());
  __m256 mx = lowest;
  for (int64_t i = 0; i < n; i += 8) {
    const __m256i k = tail_mask(n - i);
    const __m256 v = _mm256_blendv_ps(lowest, _mm256_maskload_ps(x + i, k), _mm256_castsi256_ps(k));
    mx = _mm256_max_ps(v, mx);  // a NaN v gives mx
  }
  return horizontal_max(mx);
}

float softmax_exp_row(const float* in, float* out, int64_t n, float mx) {
  const __m256 vmx = _mm256_set1_ps(mx);
  __m256 sum = _mm256_setzero_ps();
  for (int64_t i = 0; i < n; i += 8) {
    const __m256i k = tail_mask(n - i);
    const __m256 e = _mm256_and_ps(_mm256_castsi256_ps(k), softmax_exp8(_mm256_sub_ps(_mm256_maskload_ps(in + i, k), vmx)));
    _mm256_maskstore_ps(out + i, k, e);
    sum = _mm256_add_ps(sum, e);
  }
  return horizontal_sum(sum);
}

void scale_row(float* x, int64_t n, float s) {
  const __m256 vs = _mm256_set1_ps(s);
  for (int64_t i = 0; i < n; i += 8) {
    const __m256i k = tail_mask(n - i);
    _mm256_maskstore_ps(x + i, k, _mm256_mul_ps(_mm256_maskload_ps(x + i, k), vs));
  }
}

// Rounded (to nearest even), clamped and shifted in float, converted to int32, then packed
// to bytes with saturation, which changes nothing in range; the tail as the generic loop.
template <typename Q>
void quantize(const float* x, int64_t n, float inv_scale, float lo, float hi, float shift, Q* out) {
  const __m256 inv = _mm256_set1_ps(inv_scale), vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi), vshift = _mm256_set1_ps(shift);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 r = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), inv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256i q = _mm256_cvtps_epi32(_mm256_add_ps(_mm256_min_ps(_mm256_max_ps(r, vlo), vhi), vshift));
    const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    const __m128i bytes = sizeof(Q) == 1 && Q(-1) < Q(0) ? _mm_packs_epi16(words, words) : _mm_packus_epi16(words, words);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + i), bytes);
  }
  for (; i < n; ++i) {
    const float r = _mm_cvtss_f32(_mm_round_ss(_mm_setzero_ps(), _mm_set_ss(x[i] * inv_scale), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    const float c = r < lo ? lo : r > hi ? hi : r;
    out[i] = static_cast<Q>(c + shift);
  }
}

// 8·V channels from c0 (the last vector under `tail`), started from the first pixel:
// vmaxps(p, acc) keeps acc where either is NaN, which is the op kernel's "replace where larger".
template <int V>
void window_max(const float* const* rows, int64_t nh, const int64_t* cols, int64_t nw, int64_t c0, __m256i tail, float* y) {
  const __m256i all = _mm256_set1_epi32(-1);
  __m256 acc[V];
  for (int v = 0; v < V; ++v) acc[v] = _mm256_maskload_ps(rows[0] + cols[0] + c0 + 8 * v, v == V - 1 ? tail : all);
  for (int64_t i = 0; i < nh; ++i)
    for (int64_t j = 0; j < nw; ++j) {
      const float* p = rows[i] + cols[j] + c0;
      for (int v = 0; v < V; ++v) acc[v] = _mm256_max_ps(_mm256_maskload_ps(p + 8 * v, v == V - 1 ? tail : all), acc[v]);
    }
  for (int v = 0; v < V; ++v) _mm256_maskstore_ps(y + c0 + 8 * v, v == V - 1 ? tail : all, acc[v]);
}

void window_max_nhwc(const float* const* rows, int64_t nh, const int64_t* cols, int64_t nw, int64_t c, float* y) {
  const __m256i all = _mm256_set1_epi32(-1);
  int64_t c0 = 0;
  for (; c0 + 32 <= c; c0 += 32) window_max<4>(rows, nh, cols, nw, c0, all, y);
  const int64_t left = c - c0;
  if (left == 0) return;
  const __m256i tail = tail_mask(left % 8 ? left % 8 : 8);
  switch ((left + 7) / 8) {
    case 1: return window_max<1>(rows, nh, cols, nw, c0, tail, y);
    case 2: return window_max<2>(rows, nh, cols, nw, c0, tail, y);
    case 3: return window_max<3>(rows, nh, cols, nw, c0, tail, y);
    default: return window_max<4>(rows, nh, cols, nw, c0, tail, y);  // 25 to 31 left
  }
}

}  // namespace

// Byte tables: AVX2 has no 256-entry byte lookup, so the generic loop (isa_kernels.cpp).
extern const IsaKernels kIsaKernelsAvx2{KernelIsa::Avx2,  softmax_row_max, softmax_exp_row, scale_row, quantize<int8_t>,
                                        quantize<uint8_t>, nullptr,         window_max_nhwc};

}  // namespace fb
