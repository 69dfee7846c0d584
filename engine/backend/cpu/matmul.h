// Matrix products on oneDNN (what engine/ops/matmul_spec.h describes): numpy-style MatMul
// with batch broadcasting, with an optional bias over the last dimension, an output scale
// and a fused activation. The primitive is
// created once per shape; the reference executor makes one per call (oneDNN's primitive
// cache makes that cheap, as PyTorch's does), the engine keeps it in the layer.
#pragma once
#include <memory>
#include <string>

#include <oneapi/dnnl/dnnl.hpp>

#include "engine/ir/tensor.h"
#include "engine/ops/activation_kind.h"
#include "engine/ops/matmul_spec.h"

namespace fb {

// The activation as a oneDNN eltwise post-op (nothing for None); the float and int8
// matmuls share it. Error for an activation the matmul fusion never writes (Clip,
// Sigmoid, HardSwish).
void append_matmul_activation(dnnl::post_ops& po, ActivationKind a);

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

// Binds MatMul, Gemm and FusedMatMul, and the float32 product RNN and Einsum use, to
// these kernels (engine/ops/bound_kernels.h); bind_cpu_kernels() calls it.
void bind_cpu_matmul_kernels();

}  // namespace fb
