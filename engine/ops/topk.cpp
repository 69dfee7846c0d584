// TopK: the K largest (or smallest) elements along an axis with their indices; ties keep
// the lower index first, as the onnx reference does. K is an input from opset 10.
#include <algorithm>
#include <numeric>

#include "engine/ops/nn_common.h"

namespace fb {

namespace {

int64_t k_of(const Node& n, const Tensor* k_input) {
  int64_t k;
  if (n.opset != 0 && n.opset < 10) k = n.attr_int("k", -1);
  else {
    if (!k_input || k_input->numel() != 1) throw Error(n.describe() + ": K must be a one-element tensor");
    k = k_input->as_int64_vector()[0];
  }
  if (k < 0) throw Error(n.describe() + ": K must be non-negative");
  return k;
}

std::vector<ValueInfo> infer_topk(const ShapeContext& c) {
  const ValueInfo& x = c.in(0);
  if (dtype_size(x.dtype) == 0 || x.dtype == DType::Bool || x.dtype == DType::Float16 || x.dtype == DType::BFloat16)
    throw Error(c.node.describe() + ": input type " + dtype_name(x.dtype) + " is not supported");
  const int64_t axis = normalize_axis(c.node.attr_int("axis", -1), int64_t(x.shape.size()));
  const bool old = c.node.opset != 0 && c.node.opset < 10;
  const int64_t k = k_of(c.node, old ? nullptr : &c.constant(1, "K"));
  if (k > x.shape[axis])
    throw Error(c.node.describe() + ": K (" + std::to_string(k) + ") exceeds the axis size (" + std::to_string(x.shape[axis]) + ")");
  Shape out = x.shape;
  out[axis] = k;
  return {ValueInfo{x.dtype, out, true}, ValueInfo{DType::Int64, out, true}};
}

template <typename T>
void topk_typed(OpContext& c, int64_t axis, int64_t k) {
  const Tensor& x = c.in(0);
  const Shape& s = x.shape();
  const int64_t len = s[axis], inner = shape_numel(Shape(s.begin() + axis + 1, s.end()));
  const int64_t outer = shape_numel(Shape(s.begin(), s.begin() + axis));
  const bool largest = c.node.attr_int("largest", 1) != 0;
  const T* in = x.data<T>();
  T* vals = c.out(0).data<T>();
  int64_t* idx = c.outputs.size() > 1 && c.outputs[1] ? c.out(1).data<int64_t>() : nullptr;
  parallel_range(outer * inner, len * 4, [&](int64_t lo, int64_t hi) {
    std::vector<int64_t> order(static_cast<size_t>(len));
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t o = r / inner, i = r % inner;
      const T* base = in + o * len * inner + i;
      std::iota(order.begin(), order.end(), 0);
      auto better = [&](int64_t a, int64_t b) {
        const T va = base[a * inner], vb = base[b * inner];
        if (va != vb) return largest ? va > vb : va < vb;
        return a < b;
      };
      std::partial_sort(order.begin(), order.begin() + k, order.end(), better);
      for (int64_t j = 0; j < k; ++j) {
        const int64_t at = (o * k + j) * inner + i;
        vals[at] = base[order[j] * inner];
        if (idx) idx[at] = order[j];
      }
    }
  });
}

void compute_topk(OpContext& c) {
  const Tensor& x = c.in(0);
  const int64_t axis = normalize_axis(c.node.attr_int("axis", -1), x.rank());
  const bool old = c.node.opset != 0 && c.node.opset < 10;
  const int64_t k = k_of(c.node, old ? nullptr : &c.in(1));
  if (k > x.shape()[axis]) throw Error("K exceeds the axis size");
  switch (x.dtype()) {
    case DType::Float32: return topk_typed<float>(c, axis, k);
    case DType::Float64: return topk_typed<double>(c, axis, k);
    case DType::Int64: return topk_typed<int64_t>(c, axis, k);
    case DType::Int32: return topk_typed<int32_t>(c, axis, k);
    case DType::Int8: return topk_typed<int8_t>(c, axis, k);
    case DType::UInt8: return topk_typed<uint8_t>(c, axis, k);
    default: throw Error("input type " + dtype_name(x.dtype()) + " is not supported");
  }
}

}  // namespace

void register_topk_ops(OpRegistry& r) { r.add(with_shape_inputs(OpDef{"", "TopK", infer_topk, compute_topk}, {1})); }  // K

}  // namespace fb
