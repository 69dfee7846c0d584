// What a library product leaves to us: the activation, bias, residual, multiplier or
// Gemm's C that cuBLASLt's and cuDNN's own epilogues do not cover (erf GELU, SiLU,
// Clip, HardSwish, a broadcast C), in one pass over the output; and attention's masked
// softmax between its two products.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "engine/backend/cuda/cuda_layer_table.h"
#include "engine/ops/activation_kind.h"

namespace fb::cuda {


struct Epilogue {
  // y is [outer, channels, inner] (a matrix product: outer = rows, inner = 1; a
  // convolution: outer = N, inner = spatial size).
  int64_t outer = 1, channels = 1, inner = 1;
  const void* bias = nullptr;  // [channels], of bias_elem
  Elem bias_elem = Elem::F32;
  const void* residual = nullptr;  // y's shape and type, added before the activation
  // Gemm's beta·C: C broadcast to [outer, channels] through these element strides.
  const void* c = nullptr;
  Elem c_elem = Elem::F32;
  int64_t c_outer_stride = 0, c_channel_stride = 0;
  float beta = 0;
  ActivationKind act = ActivationKind::None;
  float lo = 0, hi = 0;          // Clip's bounds
  const void* multiplier = nullptr;  // y's shape and type, multiplied after the activation
};

// y = act(y + bias + residual + beta·C) · multiplier, elementwise, in float32.
void launch_epilogue(Elem y_elem, void* y, const Epilogue& e, cudaStream_t stream);

// Attention's softmax: rows of `scores` (float32 [B, H, Sq, Sk], already scaled) plus an
// additive mask (of mask_elem: a 16-bit layer's mask is 16-bit) broadcast through its
// strides (0 where the mask's dim is 1),
// written as probabilities of p_elem into p ([B, H, Sq, Sk]).
struct MaskStrides {
  int64_t b = 0, h = 0, q = 0, k = 0;
};
void launch_attention_softmax(const float* scores, const void* mask, Elem mask_elem, const MaskStrides& ms, int64_t batch,
                              int64_t heads, int64_t sq, int64_t sk, Elem p_elem, void* p, cudaStream_t stream);

}  // namespace fb::cuda
