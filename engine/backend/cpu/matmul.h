// Matrix products on oneDNN: numpy-style MatMul with batch broadcasting, with an optional
// bias over the last dimension, an output scale and a fused activation. The primitive is
// created once per shape; the reference executor makes one per call (oneDNN's primitive
// cache makes that cheap, as PyTorch's does), the engine keeps it in the layer.
#pragma once
#include <memory>
#include <string>

#include <oneapi/dnnl/dnnl.hpp>

#include "engine/ir/tensor.h"
#include "engine/ops/activation_kind.h"

namespace fb {

// The activation as a oneDNN eltwise post-op (nothing for None); the float and int8
// matmuls share it. Error for an activation the matmul fusion never writes (Clip,
// Sigmoid, HardSwish).
void append_matmul_activation(dnnl::post_ops& po, ActivationKind a);

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

// Output shape of a MatMul with numpy semantics (1-D operands promoted and squeezed);
// throws Error on mismatched inner dimensions or unbroadcastable batches.
Shape matmul_output_shape(const Shape& a, const Shape& b, bool trans_a = false, bool trans_b = false);

struct Node;
// The spec of a fusebench.FusedMatMul node (attributes transA, transB, alpha, activation).
MatMulSpec fused_matmul_spec(const Node& n, const Shape& a, const Shape& b, bool has_bias);

class MatMulKernel {
 public:
  explicit MatMulKernel(const MatMulSpec& spec);
  ~MatMulKernel();
  MatMulKernel(MatMulKernel&&) noexcept;
  const Shape& output_shape() const;
  // FLOPs of one call (2·M·N·K per batch).
  double flops() const;
  // oneDNN's implementation ("brg:avx512_core_bf16").
  const std::string& impl_info() const;
  // Not thread-safe: the kernel keeps its oneDNN memory objects and rebinds their pointers.
  // Data in the spec's types (float32 unless bf16); the bias is always float32.
  void run(const void* a, const void* b, const float* bias, void* out, const void* multiplier = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fb
