// The CPU backend's kernels for the ops engine/ops defines but does not compute (Conv,
// ConvTranspose, FusedConv, MatMul, Gemm, FusedMatMul, Attention, and the float32 product
// RNN and Einsum use: engine/ops/bound_kernels.h), bound by an explicit call. Made by the
// CPU backend when it is created, the reference executor and the builder, before they run
// a node; a program that evaluates nodes itself (a test) calls it first.
#pragma once

namespace fb {

// Binds oneDNN's kernels to those rows; idempotent and thread-safe.
void bind_cpu_kernels();

}  // namespace fb
