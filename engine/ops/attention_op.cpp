// fusebench.Attention(q, k, v, mask?) with attributes heads and scale: softmax(Q·Kᵀ·scale +
// mask) · V per head over the [batch, seq, heads·dim] layout. Its kernel is a backend's
// (oneDNN's on the CPU: engine/backend/cpu/attention.h), bound to this row from above
// (engine/ops/bound_kernels.h).
#include "engine/ops/attention_shapes.h"
#include "engine/ops/bound_kernels.h"
#include "engine/ops/op_registry.h"

namespace fb {

AttentionShapes attention_shapes(const Shape& q, const Shape& k, int64_t heads, const Shape* mask) {
  if (q.size() != 3 || k.size() != 3 || q[0] != k[0] || q[2] != k[2])
    throw Error("attention expects q [B,S,H] and k/v [B,S',H], got " + shape_str(q) + " and " + shape_str(k));
  if (heads <= 0 || q[2] % heads) throw Error("hidden size " + std::to_string(q[2]) + " is not divisible by heads " + std::to_string(heads));
  AttentionShapes s;
  s.b = q[0], s.sq = q[1], s.sk = k[1], s.hidden = q[2], s.heads = heads, s.d = q[2] / heads;
  if (mask) {
    const Shape full{s.b, s.heads, s.sq, s.sk};
    if (mask->size() != 4) throw Error("attention mask must be rank 4, got " + shape_str(*mask));
    int64_t stride = 1;
    for (int i = 3; i >= 0; --i) {
      if ((*mask)[size_t(i)] != full[size_t(i)] && (*mask)[size_t(i)] != 1)
        throw Error("attention mask " + shape_str(*mask) + " does not broadcast to the scores " + shape_str(full));
      s.mask_stride[i] = (*mask)[size_t(i)] == 1 ? 0 : stride;
      stride *= (*mask)[size_t(i)];
    }
    s.masked = true;
  }
  return s;
}

namespace {

std::vector<ValueInfo> infer_attention(const ShapeContext& c) {
  const Shape& q = c.in(0).shape;
  const Shape& k = c.in(1).shape;
  if (c.in(2).shape != k) throw Error("k and v shapes differ: " + shape_str(k) + " vs " + shape_str(c.in(2).shape));
  const Shape* mask = c.inputs.size() > 3 ? &c.in(3).shape : nullptr;
  attention_shapes(q, k, c.node.attr_int("heads", 0), mask);  // validates shapes
  return {ValueInfo{DType::Float32, q, true}};
}

}  // namespace

void register_attention_ops(OpRegistry& r) {
  r.add(weighted_as(OpDef{"fusebench", "Attention", infer_attention, compute_with_bound_kernel}, WeightedForm::kAttention));
}

}  // namespace fb
