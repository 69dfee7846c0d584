// Hardmax: 1 at the first maximum along the axis, 0 elsewhere. From opset 13 along one
// axis (default -1); before, the input is coerced to 2-D at `axis` (default 1) per row.
#include "engine/ops/nn_common.h"

namespace fb {

namespace {

// [outer, len, inner] view of the input for the node's opset.
void hardmax_view(const Node& n, const Shape& s, int64_t* outer, int64_t* len, int64_t* inner) {
  const int64_t rank = int64_t(s.size());
  if (n.opset != 0 && n.opset < 13) {
    const int64_t axis = normalize_axis(n.attr_int("axis", 1), rank == 0 ? 1 : rank);
    *outer = shape_numel(Shape(s.begin(), s.begin() + axis));
    *len = shape_numel(Shape(s.begin() + axis, s.end()));
    *inner = 1;
    return;
  }
  const int64_t axis = normalize_axis(n.attr_int("axis", -1), rank);
  *outer = shape_numel(Shape(s.begin(), s.begin() + axis));
  *len = s[axis];
  *inner = shape_numel(Shape(s.begin() + axis + 1, s.end()));
}

std::vector<ValueInfo> infer_hardmax(const ShapeContext& c) {
  require_float(c.node, c.in(0).dtype, "input");
  int64_t o, l, i;
  hardmax_view(c.node, c.in(0).shape, &o, &l, &i);
  return {ValueInfo{DType::Float32, c.in(0).shape, true}};
}

void compute_hardmax(OpContext& c) {
  int64_t outer, len, inner;
  hardmax_view(c.node, c.in(0).shape(), &outer, &len, &inner);
  const float* in = c.in(0).data<float>();
  float* out = c.out(0).data<float>();
  std::fill(out, out + c.out(0).numel(), 0.f);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const float* base = in + o * len * inner + i;
      int64_t best = 0;
      for (int64_t j = 1; j < len; ++j)
        if (base[j * inner] > base[best * inner]) best = j;
      if (len) out[(o * len + best) * inner + i] = 1.f;
    }
}

}  // namespace

void register_hardmax_ops(OpRegistry& r) { r.add(OpDef{"", "Hardmax", infer_hardmax, compute_hardmax}); }

}  // namespace fb
