// ArgMax and ArgMin: the int64 index of the extreme element along one axis (keepdims,
// select_last_index for ties), for every numeric type.
#include "engine/ops/typed_kernels.h"

namespace fb {

namespace {

std::vector<ValueInfo> infer_arg(const ShapeContext& c) {
  const ValueInfo& x = c.in(0);
  const int64_t rank = int64_t(x.shape.size());
  const int64_t axis = normalize_axis(c.node.attr_int("axis", 0), std::max<int64_t>(rank, 1));
  if (rank && x.shape[axis] == 0) throw Error("cannot take the arg-extreme of an empty axis");
  Shape out;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != axis) out.push_back(x.shape[d]);
    else if (c.node.attr_int("keepdims", 1) != 0) out.push_back(1);
  }
  return {ValueInfo{DType::Int64, out, true}};
}

void compute_arg(OpContext& c) {
  if (run_widened(c, compute_arg)) return;
  const Tensor& x = c.in(0);
  const int64_t rank = x.rank();
  const int64_t axis = normalize_axis(c.node.attr_int("axis", 0), std::max<int64_t>(rank, 1));
  const bool is_max = c.node.op_type == "ArgMax", last = c.node.attr_int("select_last_index", 0) != 0;
  int64_t outer = 1, len = rank ? x.shape()[axis] : 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape()[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= x.shape()[d];
  int64_t* o = c.out(0).data<int64_t>();
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = x.data<T>();
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, outer * inner, parallel_grain(len)), [&](const tbb::blocked_range<int64_t>& r) {
      for (int64_t idx = r.begin(); idx < r.end(); ++idx) {
        const T* base = p + (idx / inner) * len * inner + idx % inner;
        int64_t best = 0;
        for (int64_t j = 1; j < len; ++j) {
          const T v = base[j * inner], b = base[best * inner];
          const bool better = is_max ? (v > b || (last && v == b)) : (v < b || (last && v == b));
          if (better) best = j;
        }
        o[idx] = best;
      }
    });
  });
}

}  // namespace

void register_arg_reduce_ops(OpRegistry& r) {
  r.add(OpDef{"", "ArgMax", infer_arg, compute_arg});
  r.add(OpDef{"", "ArgMin", infer_arg, compute_arg});
}

}  // namespace fb
