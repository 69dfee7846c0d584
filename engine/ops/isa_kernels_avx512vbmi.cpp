// A 256-entry byte table for AVX-512 with AVX512_VBMI (Ice Lake, Zen 4 on), compiled with
// those extensions alone (engine/CMakeLists.txt); isa_kernels.cpp uses it where the CPU has VBMI.
#include <immintrin.h>

#include <cstdint>

namespace fb {

void apply_table_avx512vbmi(uint8_t* bytes, int64_t n, const uint8_t* table) {
  // Two 128-entry lookups (vpermi2b: 7 index bits), the sign bit choosing between them.
  const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
  const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512i v = _mm512_loadu_si512(bytes + i);
    const __m512i low = _mm512_permutex2var_epi8(t0, v, t1), high = _mm512_permutex2var_epi8(t2, v, t3);
    _mm512_storeu_si512(bytes + i, _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), low, high));
  }
  for (; i < n; ++i) bytes[i] = table[bytes[i]];
}

}  // namespace fb
