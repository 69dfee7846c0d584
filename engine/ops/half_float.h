// IEEE half (float16) and bfloat16 conversions. The engine stores these types as raw
// 16-bit words; kernels widen them to float32, compute, and narrow the result, so every
// float op gets the 16-bit types without a second implementation.
#pragma once
#include <cstdint>

#include "engine/ir/tensor.h"

namespace fb {

float half_to_float(uint16_t h);
uint16_t float_to_half(float f);  // round to nearest even, overflow to inf
float bfloat16_to_float(uint16_t b);
uint16_t float_to_bfloat16(float f);  // round to nearest even, NaN stays NaN

// Bulk conversions of n elements for the engine's 16-bit storage (bf16 and fp16 layers
// keep their activations in 16 bits and compute in float32): vectorized, F16C for
// float16 where the compiler targets it. `t` is DType::BFloat16 or DType::Float16.
void widen_16(DType t, const uint16_t* in, float* out, int64_t n);
void narrow_16(DType t, const float* in, uint16_t* out, int64_t n);  // round to nearest even
// Rounds float32 values in place to the nearest value the 16-bit type holds (weights of a
// 16-bit layer whose arithmetic is float32).
void round_to_16(DType t, float* x, int64_t n);

inline bool is_half_type(DType t) { return t == DType::Float16 || t == DType::BFloat16; }
// A float32 copy of a float16/bfloat16 tensor; any other tensor is returned as is (shared).
Tensor widen_half(const Tensor& t);
// Writes float32 `src` into `dst` (float16 or bfloat16, same element count).
void narrow_half(const Tensor& src, Tensor& dst);

}  // namespace fb
