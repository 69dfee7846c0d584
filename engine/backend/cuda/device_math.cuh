// What our kernels (*.cu) share on the device: a float32, float16 or bfloat16 element
// loaded and stored as float (the arithmetic is float32 whatever the storage), and the
// activations fused layers apply.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "engine/backend/cuda/cuda_layer_table.h"
#include "engine/ops/activation_kind.h"

namespace fb::cuda {

__device__ inline float load(const void* p, Elem e, int64_t i) {
  switch (e) {
    case Elem::F16: return __half2float(static_cast<const __half*>(p)[i]);
    case Elem::BF16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}

__device__ inline void store(void* p, Elem e, int64_t i, float v) {
  switch (e) {
    case Elem::F16: static_cast<__half*>(p)[i] = __float2half(v); break;
    case Elem::BF16: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(v); break;
    default: static_cast<float*>(p)[i] = v;
  }
}

// Two floats rounded to T as one 32-bit pair (the first in the lower half), through the
// pair intrinsics. Not as an array of two T copied out with memcpy: CUDA 13.0's ptxas
// lowered that copy to global memory as byte stores and the low byte's as
// F2I.U8.F16.TRUNC (the element's value converted to an integer byte), so 9.0 was stored as
// 8.07 (0x4809) and the outputs kept 2 of fp16's 10 mantissa bits (the SASS and a probe on
// an H200; the first form of the fused attention kernel failed CudaFlashAttention so).
template <typename T>
struct Pair;
template <>
struct Pair<__half> {
  using type = __half2;
  static __device__ __forceinline__ type make(float x, float y) { return __floats2half2_rn(x, y); }
  static __device__ __forceinline__ float2 back(type p) { return __half22float2(p); }
};
template <>
struct Pair<__nv_bfloat16> {
  using type = __nv_bfloat162;
  static __device__ __forceinline__ type make(float x, float y) { return __floats2bfloat162_rn(x, y); }
  static __device__ __forceinline__ float2 back(type p) { return __bfloat1622float2(p); }
};

// Index arithmetic in 32 bits when every index of a launch fits: a 64-bit division or
// remainder is a long software sequence on the GPU (tens of instructions), which made the
// per-element index math most of a light kernel's time (a fused MatMul's GELU epilogue on
// BERT-base at batch 32 ran at a third of the memory's rate). A kernel templated on its
// index type I is launched as fits_32_bits(n) ? kernel<int32_t> : kernel<int64_t>.
inline bool fits_32_bits(int64_t n) { return n >= 0 && n < (int64_t(1) << 31) - 1; }

// The activations as the CPU kernels define them (engine/ops/elementwise.cpp).
__device__ inline float activate(ActivationKind a, float v, float lo, float hi) {
  switch (a) {
    case ActivationKind::None: return v;
    case ActivationKind::Relu: return v > 0.f ? v : 0.f;
    case ActivationKind::Clip: return fminf(fmaxf(v, lo), hi);
    case ActivationKind::Sigmoid: return 1.f / (1.f + expf(-v));
    case ActivationKind::HardSwish: return v * fminf(fmaxf(v / 6.f + 0.5f, 0.f), 1.f);
    case ActivationKind::Silu: return v / (1.f + expf(-v));
    case ActivationKind::Gelu: return 0.5f * v * (1.f + erff(v * 0.70710678118654752f));
    case ActivationKind::GeluTanh:
      return 0.5f * v * (1.f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
  }
  return v;
}

}  // namespace fb::cuda
