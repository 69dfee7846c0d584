// The kernels as plain C++ at the binary's own flags: what runs where the CPU has neither
// AVX2 nor AVX-512, or where FUSEBENCH_ISA=generic asks, and the reference the other forms
// are tested against (tests/test_isa_kernels.cpp).
#include <algorithm>
#include <cmath>

#include "engine/ops/fast_math.h"
#include "engine/ops/isa_kernels.h"

namespace fb {

namespace {

float softmax_row_max(const float* x, int64_t n) { return row_max(x, n); }

float softmax_exp_row(const float* in, float* out, int64_t n, float mx) {
  float sum = 0.f;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) sum += (out[i] = softmax_exp(in[i] - mx));
  return sum;
}

void scale_row(float* x, int64_t n, float s) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

template <typename Q>
void quantize(const float* x, int64_t n, float inv_scale, float lo, float hi, float shift, Q* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<Q>(std::min(std::max(std::nearbyint(x[i] * inv_scale), lo), hi) + shift);
}

void apply_table(uint8_t* bytes, int64_t n, const uint8_t* table) {
  for (int64_t i = 0; i < n; ++i) bytes[i] = table[bytes[i]];
}

void window_max_nhwc(const float* const* rows, int64_t nh, const int64_t* cols, int64_t nw, int64_t c, float* y) {
  for (int64_t k = 0; k < c; ++k) {
    float acc = rows[0][cols[0] + k];
    for (int64_t i = 0; i < nh; ++i)
      for (int64_t j = 0; j < nw; ++j) {
        const float v = rows[i][cols[j] + k];
        acc = v > acc ? v : acc;
      }
    y[k] = acc;
  }
}

}  // namespace

extern const IsaKernels kIsaKernelsGeneric{KernelIsa::Generic, softmax_row_max, softmax_exp_row, scale_row,
                                           quantize<int8_t>,   quantize<uint8_t>, apply_table,     window_max_nhwc};

}  // namespace fb
