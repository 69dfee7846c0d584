// float16/bfloat16 <-> float32 by bit manipulation (no hardware F16C assumed), used by
// Cast and by every kernel that runs 16-bit floats through its float32 path.
#include "engine/ops/half_float.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace fb {

float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal: value is man * 2^-24, exactly representable in float32
      float f = std::ldexp(float(man), -24);
      std::memcpy(&bits, &f, 4);
      bits |= sign;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (man << 13);
  } else {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return uint16_t(sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0));  // inf / NaN
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00);  // rounds past the largest half
  if (abs < 0x38800000u) {  // below the smallest normal half: round to a subnormal
    float a;
    std::memcpy(&a, &abs, 4);
    return uint16_t(sign | uint16_t(std::nearbyint(a * 16777216.0f)));  // a / 2^-24, ties to even
  }
  const uint32_t mant_odd = (abs >> 13) & 1;
  const uint32_t rounded = abs + 0xfffu + mant_odd;  // round to nearest even on the 13 dropped bits
  return uint16_t(sign | ((rounded - 0x38000000u) >> 13));
}

float bfloat16_to_float(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_bfloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if (std::isnan(f)) return uint16_t((x >> 16) | 0x40);
  x += 0x7fffu + ((x >> 16) & 1);
  return uint16_t(x >> 16);
}

void widen_16(DType t, const uint16_t* in, float* out, int64_t n) {
  if (t == DType::BFloat16) {
    // A shift: the compiler vectorizes it.
    auto* o = reinterpret_cast<uint32_t*>(out);
    for (int64_t i = 0; i < n; ++i) o[i] = uint32_t(in[i]) << 16;
    return;
  }
  int64_t i = 0;
#ifdef __F16C__
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
#endif
  for (; i < n; ++i) out[i] = half_to_float(in[i]);
}

void narrow_16(DType t, const float* in, uint16_t* out, int64_t n) {
  if (t == DType::BFloat16) {
    // Branch-free round to nearest even; a NaN keeps a quiet NaN's top bits.
    const auto* x = reinterpret_cast<const uint32_t*>(in);
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t b = x[i];
      const bool nan = (b & 0x7fffffffu) > 0x7f800000u;
      const uint32_t rounded = (b + 0x7fffu + ((b >> 16) & 1)) >> 16;
      out[i] = uint16_t(nan ? ((b >> 16) | 0x40) : rounded);
    }
    return;
  }
  int64_t i = 0;
#ifdef __F16C__
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
#endif
  for (; i < n; ++i) out[i] = float_to_half(in[i]);
}

void round_to_16(DType t, float* x, int64_t n) {
  constexpr int64_t kBlock = 1024;
  uint16_t buf[kBlock];
  for (int64_t i = 0; i < n; i += kBlock) {
    const int64_t len = std::min(kBlock, n - i);
    narrow_16(t, x + i, buf, len);
    widen_16(t, buf, x + i, len);
  }
}

Tensor widen_half(const Tensor& t) {
  if (!is_half_type(t.dtype())) return t;
  Tensor out = Tensor::empty(DType::Float32, t.shape());
  widen_16(t.dtype(), static_cast<const uint16_t*>(t.raw()), out.data<float>(), t.numel());
  return out;
}

void narrow_half(const Tensor& src, Tensor& dst) {
  FB_CHECK(is_half_type(dst.dtype()) && src.numel() == dst.numel(), "narrow_half");
  narrow_16(dst.dtype(), src.data<float>(), static_cast<uint16_t*>(dst.raw()), src.numel());
}

}  // namespace fb
