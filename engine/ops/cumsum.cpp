// CumSum along one axis (given as an input tensor), with the exclusive and reverse variants.
#include "engine/ops/nn_common.h"

namespace fb {

namespace {

int64_t cumsum_axis(const Node& n, const Tensor& axis, int64_t rank) {
  if (axis.numel() != 1) throw Error(n.describe() + ": axis must be a one-element tensor");
  return normalize_axis(axis.as_int64_vector()[0], rank);
}

std::vector<ValueInfo> infer_cumsum(const ShapeContext& c) {
  const ValueInfo& x = c.in(0);
  if (x.dtype != DType::Float32 && x.dtype != DType::Float64 && x.dtype != DType::Int32 && x.dtype != DType::Int64 &&
      x.dtype != DType::UInt32 && x.dtype != DType::UInt64)
    throw Error(c.node.describe() + ": input type " + dtype_name(x.dtype) + " is not supported");
  if (const Tensor* a = c.constant_or_null(1)) cumsum_axis(c.node, *a, int64_t(x.shape.size()));
  return {ValueInfo{x.dtype, x.shape, true}};
}

template <typename T>
void cumsum_typed(const Tensor& x, Tensor& y, int64_t axis, bool exclusive, bool reverse) {
  const Shape& s = x.shape();
  const int64_t len = s[axis], inner = shape_numel(Shape(s.begin() + axis + 1, s.end()));
  const int64_t outer = shape_numel(Shape(s.begin(), s.begin() + axis));
  const T* in = x.data<T>();
  T* out = y.data<T>();
  parallel_range(outer * inner, len, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t o = r / inner, i = r % inner;
      T acc = T(0);
      for (int64_t j = 0; j < len; ++j) {
        const int64_t jj = reverse ? len - 1 - j : j;
        const int64_t at = (o * len + jj) * inner + i;
        if (exclusive) {
          out[at] = acc;
          acc += in[at];
        } else {
          acc += in[at];
          out[at] = acc;
        }
      }
    }
  });
}

void compute_cumsum(OpContext& c) {
  const Tensor& x = c.in(0);
  const int64_t axis = cumsum_axis(c.node, c.in(1), x.rank());
  const bool ex = c.node.attr_int("exclusive", 0) != 0, rev = c.node.attr_int("reverse", 0) != 0;
  Tensor& y = c.out(0);
  switch (x.dtype()) {
    case DType::Float32: return cumsum_typed<float>(x, y, axis, ex, rev);
    case DType::Float64: return cumsum_typed<double>(x, y, axis, ex, rev);
    case DType::Int32: return cumsum_typed<int32_t>(x, y, axis, ex, rev);
    case DType::Int64: return cumsum_typed<int64_t>(x, y, axis, ex, rev);
    case DType::UInt32: return cumsum_typed<uint32_t>(x, y, axis, ex, rev);
    case DType::UInt64: return cumsum_typed<uint64_t>(x, y, axis, ex, rev);
    default: throw Error("input type " + dtype_name(x.dtype()) + " is not supported");
  }
}

}  // namespace

void register_cumsum_ops(OpRegistry& r) { r.add(OpDef{"", "CumSum", infer_cumsum, compute_cumsum}); }

}  // namespace fb
