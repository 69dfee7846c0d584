// A softmax row's three passes (max, exp and sum, scale), in the form this CPU runs best
// (engine/ops/isa_kernels.h: AVX-512 with masked tails, AVX2, or plain loops). Same
// formulas as softmax_exp (the Cephes polynomial, exactly 0 below -69).
#pragma once
#include <cstdint>

#include "engine/ops/isa_kernels.h"

namespace fb {

// The largest of x[0..n) (-inf for n = 0; NaNs skipped, as row_max).
inline float softmax_row_max(const float* x, int64_t n) { return isa_kernels().softmax_row_max(x, n); }

// out[i] = softmax_exp(in[i] - mx) over the row (out may be in); returns their sum.
inline float softmax_exp_row(const float* in, float* out, int64_t n, float mx) {
  return isa_kernels().softmax_exp_row(in, out, n, mx);
}

// x[0..n) *= s.
inline void scale_row(float* x, int64_t n, float s) { isa_kernels().scale_row(x, n, s); }

}  // namespace fb
