// MatMul, Gemm and the engine's FusedMatMul: their shapes and attributes. The product
// itself is a backend's kernel (oneDNN's on the CPU), bound to these rows from above
// (engine/ops/bound_kernels.h).
#include <algorithm>

#include "engine/ops/bound_kernels.h"
#include "engine/ops/broadcast.h"
#include "engine/ops/fused_activation.h"
#include "engine/ops/matmul_spec.h"
#include "engine/ops/op_registry.h"

namespace fb {

MatMulShapes matmul_shapes(const Shape& a0, const Shape& b0, bool ta, bool tb) {
  if (a0.empty() || b0.empty()) throw Error("MatMul operands must have rank >= 1");
  if ((ta && a0.size() != 2) || (tb && b0.size() != 2)) throw Error("transposed operands must be 2-D");
  Shape a = a0, b = b0;
  bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  if (ta) std::swap(a[0], a[1]);
  if (tb) std::swap(b[0], b[1]);
  size_t r = std::max(a.size(), b.size());
  while (a.size() < r) a.insert(a.begin(), 1);
  while (b.size() < r) b.insert(b.begin(), 1);
  MatMulShapes p;
  p.m = a[r - 2];
  p.k = a[r - 1];
  p.n = b[r - 1];
  if (b[r - 2] != p.k)
    throw Error("MatMul inner dimensions differ: " + shape_str(a0) + " x " + shape_str(b0));
  Shape batch_a(a.begin(), a.end() - 2), batch_b(b.begin(), b.end() - 2);
  Shape batch = broadcast_shapes(batch_a, batch_b);
  p.out = batch;
  p.out.push_back(p.m);
  p.out.push_back(p.n);
  p.out_final = batch;
  if (!a_vec) p.out_final.push_back(p.m);
  if (!b_vec) p.out_final.push_back(p.n);
  p.a = a;
  p.b = b;
  return p;
}

Shape matmul_output_shape(const Shape& a, const Shape& b, bool ta, bool tb) {
  return matmul_shapes(a, b, ta, tb).out_final;
}

MatMulSpec fused_matmul_spec(const Node& n, const Shape& a, const Shape& b, bool has_bias) {
  MatMulSpec s{a, b, n.attr_int("transA", 0) != 0, n.attr_int("transB", 0) != 0, has_bias};
  s.alpha = n.attr_float("alpha", 1.f);
  s.activation = fused_activation_of(n).kind;
  s.has_multiplier = n.inputs.size() > 3 && !n.inputs[3].empty();
  return s;
}

namespace {

std::vector<ValueInfo> infer_matmul(const ShapeContext& c) {
  return {ValueInfo{c.in(0).dtype, matmul_output_shape(c.in(0).shape, c.in(1).shape), true}};
}

std::vector<ValueInfo> infer_gemm(const ShapeContext& c) {
  const Node& n = c.node;
  Shape out = matmul_output_shape(c.in(0).shape, c.in(1).shape, n.attr_int("transA", 0), n.attr_int("transB", 0));
  if (c.in(0).shape.size() != 2 || c.in(1).shape.size() != 2) throw Error("Gemm operands must be 2-D");
  if (c.has_input(2)) broadcast_shapes(c.in(2).shape, out);  // C must broadcast to [M, N]
  return {ValueInfo{c.in(0).dtype, out, true}};
}

// fusebench.FusedMatMul(A, B, bias?) with attributes transA, transB, alpha, activation.
std::vector<ValueInfo> infer_fused_matmul(const ShapeContext& c) {
  const Node& n = c.node;
  Shape out = matmul_output_shape(c.in(0).shape, c.in(1).shape, n.attr_int("transA", 0), n.attr_int("transB", 0));
  if (c.has_input(2) && shape_numel(c.in(2).shape) != out.back())
    throw Error("bias of shape " + shape_str(c.in(2).shape) + " does not match N = " + std::to_string(out.back()));
  if (c.has_input(3) && (c.in(3).shape != out || c.in(3).dtype != DType::Float32))
    throw Error("multiplier " + shape_str(c.in(3).shape) + " must be a float32 tensor of the output's shape " + shape_str(out));
  return {ValueInfo{DType::Float32, out, true}};
}

}  // namespace

void register_matmul_ops(OpRegistry& r) {
  r.add(weighted_as(OpDef{"", "MatMul", infer_matmul, compute_with_bound_kernel}, WeightedForm::kMatMul));
  r.add(weighted_as(OpDef{"", "Gemm", infer_gemm, compute_with_bound_kernel}, WeightedForm::kMatMul));
  r.add(weighted_as(OpDef{"fusebench", "FusedMatMul", infer_fused_matmul, compute_with_bound_kernel}, WeightedForm::kMatMul));
}

}  // namespace fb
