#include "engine/util/sha256.h"

#include <array>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace fb {
namespace {

constexpr std::array<uint32_t, 64> kRoundConstants = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

constexpr uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

// One 64-byte block into the running state.
void compress(std::array<uint32_t, 8>& h, const unsigned char* block) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i) {
    w[i] = (uint32_t(block[4 * i]) << 24) | (uint32_t(block[4 * i + 1]) << 16) |
           (uint32_t(block[4 * i + 2]) << 8) | uint32_t(block[4 * i + 3]);
  }
  for (int i = 16; i < 64; ++i) {
    uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int i = 0; i < 64; ++i) {
    uint32_t s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
    uint32_t ch = (e & f) ^ (~e & g);
    uint32_t t1 = hh + s1 + ch + kRoundConstants[i] + w[i];
    uint32_t s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
    uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
    uint32_t t2 = s0 + maj;
    hh = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h[0] += a; h[1] += b; h[2] += c; h[3] += d;
  h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

void compress_blocks_portable(std::array<uint32_t, 8>& h, const unsigned char* data, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b) compress(h, data + 64 * b);
}

#if defined(__x86_64__)
// The same blocks with the SHA extensions (Intel SHA-NI, AMD since Zen): about 5x the
// portable loop, which matters because every model's bytes are hashed when it is loaded
// (200 MB for a 50,000-node graph). The state lives in two registers, {A,B,E,F} and
// {C,D,G,H}; sha256rnds2 does two rounds, msg1/msg2 extend the message schedule.
__attribute__((target("sha,sse4.1,ssse3"))) void compress_blocks_sha_ni(std::array<uint32_t, 8>& h,
                                                                       const unsigned char* data, size_t blocks) {
  const __m128i byte_swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);  // big-endian words
  __m128i abcd = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(&h[0])), 0xB1);  // b a d c
  __m128i efgh = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(&h[4])), 0x1B);  // h g f e
  __m128i abef = _mm_alignr_epi8(abcd, efgh, 8);                                                       // f e b a
  __m128i cdgh = _mm_blend_epi16(efgh, abcd, 0xF0);                                                    // h g d c
  for (size_t b = 0; b < blocks; ++b, data += 64) {
    const __m128i abef_before = abef, cdgh_before = cdgh;
    __m128i w[4];  // w[g % 4]: message words 4g .. 4g+3 of the 16 groups
    for (int g = 0; g < 16; ++g) {
      __m128i words;
      if (g < 4) {
        words = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(data + 16 * g)), byte_swap);
      } else {  // W[i] = s1(W[i-2]) + W[i-7] + s0(W[i-15]) + W[i-16], four at a time
        const __m128i w16 = w[g % 4], w12 = w[(g + 1) % 4], w8 = w[(g + 2) % 4], w4 = w[(g + 3) % 4];
        words = _mm_sha256msg2_epu32(_mm_add_epi32(_mm_sha256msg1_epu32(w16, w12), _mm_alignr_epi8(w4, w8, 4)), w4);
      }
      w[g % 4] = words;
      const __m128i k = _mm_add_epi32(words, _mm_loadu_si128(reinterpret_cast<const __m128i*>(&kRoundConstants[4 * g])));
      cdgh = _mm_sha256rnds2_epu32(cdgh, abef, k);                          // rounds 4g, 4g+1: cdgh <- new abef
      abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(k, 0x0E));  // rounds 4g+2, 4g+3
    }
    abef = _mm_add_epi32(abef, abef_before);
    cdgh = _mm_add_epi32(cdgh, cdgh_before);
  }
  const __m128i abef_r = _mm_shuffle_epi32(abef, 0x1B);  // a b e f
  const __m128i cdgh_r = _mm_shuffle_epi32(cdgh, 0xB1);  // g h c d
  _mm_storeu_si128(reinterpret_cast<__m128i*>(&h[0]), _mm_blend_epi16(abef_r, cdgh_r, 0xF0));  // a b c d
  _mm_storeu_si128(reinterpret_cast<__m128i*>(&h[4]), _mm_alignr_epi8(cdgh_r, abef_r, 8));    // e f g h
}

bool cpu_has_sha_ni() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSE4_1) || !(c & bit_SSSE3)) return false;
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_SHA);
}
#endif

using CompressBlocks = void (*)(std::array<uint32_t, 8>&, const unsigned char*, size_t);

CompressBlocks fastest_compress() {
#if defined(__x86_64__)
  if (cpu_has_sha_ni()) return compress_blocks_sha_ni;
#endif
  return compress_blocks_portable;
}

std::string sha256_hex_with(std::string_view bytes, CompressBlocks compress_blocks) {
  std::array<uint32_t, 8> h = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                               0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  size_t full = n - n % 64;
  compress_blocks(h, data, full / 64);

  // Padding: 0x80, zeros, then the message length in bits, big-endian, filling 1 or 2 blocks.
  unsigned char tail[128] = {};
  size_t rest = n - full;
  if (rest > 0) std::memcpy(tail, data + full, rest);
  tail[rest] = 0x80;
  size_t tail_len = rest + 1 + 8 <= 64 ? 64 : 128;
  uint64_t bits = uint64_t(n) * 8;
  for (int i = 0; i < 8; ++i) tail[tail_len - 1 - i] = static_cast<unsigned char>(bits >> (8 * i));
  compress_blocks(h, tail, tail_len / 64);

  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(64);
  for (uint32_t v : h) {
    for (int shift = 28; shift >= 0; shift -= 4) out.push_back(hex[(v >> shift) & 0xf]);
  }
  return out;
}

}  // namespace

std::string sha256_hex(std::string_view bytes) {
  static const CompressBlocks compress_blocks = fastest_compress();
  return sha256_hex_with(bytes, compress_blocks);
}

std::string sha256_hex_portable(std::string_view bytes) { return sha256_hex_with(bytes, compress_blocks_portable); }

}  // namespace fb
