// What a matrix product is asked for, whatever runs it: numpy-style MatMul with batch
// broadcasting, Gemm's transposes and alpha, FusedMatMul's bias, activation and gated
// multiplier. The shapes are worked out here; a backend's kernel (oneDNN's on the CPU:
// engine/backend/cpu/matmul.h) computes the product.
#pragma once
#include "engine/ir/dtype.h"
#include "engine/ir/shape.h"
#include "engine/ops/activation_kind.h"

namespace fb {

struct Node;

struct MatMulSpec {
  Shape a, b;              // as the inputs come (rank >= 1; 2-D when transposed)
  bool trans_a = false;    // only for rank-2 a (Gemm)
  bool trans_b = false;    // only for rank-2 b (Gemm)
  bool has_bias = false;   // bias of shape [N] (or [1, N]) added to every row
  float alpha = 1.f;
  ActivationKind activation = ActivationKind::None;
  // y = act(a·b + bias) ⊙ m, m of y's shape, as oneDNN's binary post-op: a gated MLP's up
  // projection times its gate (fusebench.FusedMatMul's input 3).
  bool has_multiplier = false;
  // b never changes (the engine's initializer): it is packed once, on the first run, into
  // the layout oneDNN's kernel reads fastest, instead of on every call (a transposed
  // classifier's weights at batch 1: 0.067 -> 0.044 ms standalone).
  bool constant_b = false;
  // bf16 on oneDNN's bf16 kernel (use_onednn_bf16): a, the output and the multiplier are
  // bf16 tensors, b too unless it is a constant float32 one (packed to bf16 with the
  // layout); the bias stays float32, and the products accumulate in float32.
  bool bf16 = false;
  DType b_type = DType::Float32;
};

// Both operands promoted to a common rank >= 2 (1-D operands become [1,K] / [K,1]).
struct MatMulShapes {
  Shape a, b, out;           // rank r each, out unsqueezed
  Shape out_final;           // numpy result shape
  int64_t m, k, n;
};

// Throws Error on mismatched inner dimensions or unbroadcastable batches.
MatMulShapes matmul_shapes(const Shape& a, const Shape& b, bool trans_a = false, bool trans_b = false);

// Output shape of a MatMul with numpy semantics (1-D operands promoted and squeezed).
Shape matmul_output_shape(const Shape& a, const Shape& b, bool trans_a = false, bool trans_b = false);

// The spec of a fusebench.FusedMatMul node (attributes transA, transB, alpha, activation).
MatMulSpec fused_matmul_spec(const Node& n, const Shape& a, const Shape& b, bool has_bias);

}  // namespace fb
