// The non-template parts of typed_kernels.h: the 16-bit widening wrapper and the
// InferFn helpers shared by the elementwise families.
#include "engine/ops/typed_kernels.h"

#include "engine/ops/half_float.h"

namespace fb {

bool run_widened(OpContext& c, void (*kernel)(OpContext&)) {
  bool any = false;
  for (const Tensor* t : c.inputs) any = any || (t && is_half_type(t->dtype()));
  for (const Tensor* t : c.outputs) any = any || (t && is_half_type(t->dtype()));
  if (!any) return false;
  std::vector<Tensor> wide_in;
  wide_in.reserve(c.inputs.size());
  for (const Tensor* t : c.inputs) wide_in.push_back(t ? widen_half(*t) : Tensor());
  // 16-bit outputs get float32 stand-ins; the others are passed through, so a kernel that
  // assigns a data-dependent output assigns the caller's tensor.
  std::vector<Tensor> wide_out(c.outputs.size());
  OpContext wc{c.node, {}, {}, c.ops};
  for (size_t i = 0; i < c.inputs.size(); ++i) wc.inputs.push_back(c.inputs[i] ? &wide_in[i] : nullptr);
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    Tensor* t = c.outputs[i];
    if (t && is_half_type(t->dtype())) {
      wide_out[i] = Tensor::empty(DType::Float32, t->shape());
      wc.outputs.push_back(&wide_out[i]);
    } else {
      wc.outputs.push_back(t);
    }
  }
  kernel(wc);
  for (size_t i = 0; i < c.outputs.size(); ++i)
    if (c.outputs[i] && is_half_type(c.outputs[i]->dtype())) narrow_half(wide_out[i], *c.outputs[i]);
  return true;
}

std::vector<ValueInfo> same_as_input0(const ShapeContext& c) { return {ValueInfo{c.in(0).dtype, c.in(0).shape, true}}; }

Shape broadcast_all(const ShapeContext& c, size_t first, size_t count) {
  const size_t end = std::min(c.inputs.size(), count == SIZE_MAX ? c.inputs.size() : first + count);
  Shape out;
  const DType dt = c.in(first).dtype;
  for (size_t i = first; i < end; ++i) {
    if (!c.has_input(i)) continue;
    if (c.in(i).dtype != dt)
      throw Error("input types differ: " + dtype_name(dt) + " and " + dtype_name(c.in(i).dtype));
    out = broadcast_shapes(out, c.in(i).shape);
  }
  return out;
}

}  // namespace fb
