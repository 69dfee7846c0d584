// Ops defined in engine/ops whose kernels a backend owns: Conv, ConvTranspose, FusedConv,
// MatMul, Gemm, FusedMatMul and Attention run on oneDNN on the CPU, in the reference
// executor too (as PyTorch eager does), and RNN and Einsum multiply through the bound
// float32 matrix product. Their rows compute through what is bound here, by an explicit
// call from a layer above (engine/backend/cpu/cpu_kernels.h: bind_cpu_kernels(), made by
// the CPU backend, the reference executor and the builder): ops never call a backend, and
// nothing depends on a static initializer. Running such a row unbound fails naming the
// node and the op.
#pragma once
#include <string>

#include "engine/ops/matmul_spec.h"
#include "engine/ops/op_registry.h"

namespace fb {

// The compute of a row whose kernel a backend binds: runs the kernel bound for the node's
// op, or throws an Error naming the node and the op when none is.
void compute_with_bound_kernel(OpContext& c);

// Binds `fn` as the kernel of the op (domain "" for ONNX), replacing any bound before.
void bind_op_kernel(const std::string& domain, const std::string& op_type, ComputeFn fn);

// out = a·b (+ bias over the last dimension), float32, as the spec says.
using FloatMatMulFn = void (*)(const MatMulSpec& spec, const float* a, const float* b, const float* bias, float* out);
void bind_float_matmul(FloatMatMulFn fn);
// The bound float32 product; an Error naming `node` when none is bound.
void float_matmul(const Node& node, const MatMulSpec& spec, const float* a, const float* b, const float* bias, float* out);

}  // namespace fb
