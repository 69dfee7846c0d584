// fusebench.Convert(x) with attribute `to` (a DType): the engine's precision boundary
// between a float32 tensor and a bf16/fp16 one, inserted by the precision-lowering pass.
// Unlike ONNX Cast to bfloat16 (which truncates, as the ONNX reference does), it rounds to
// nearest even, as a bf16 layer's own output would be.
#include <tbb/parallel_for.h>

#include "engine/ops/half_float.h"
#include "engine/ops/op_registry.h"

namespace fb {

namespace {

std::vector<ValueInfo> infer_convert(const ShapeContext& c) {
  const DType from = c.in(0).dtype, to = static_cast<DType>(c.node.attr_int("to", 0));
  const bool ok = (from == DType::Float32 && is_half_type(to)) || (is_half_type(from) && to == DType::Float32);
  if (!ok) throw Error("Convert goes between float32 and bfloat16/float16, not " + dtype_name(from) + " to " + dtype_name(to));
  return {ValueInfo{to, c.in(0).shape, true}};
}

void compute_convert(OpContext& c) {
  const Tensor& x = c.in(0);
  Tensor& y = c.out(0);
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, x.numel(), 16384), [&](const tbb::blocked_range<int64_t>& r) {
    const int64_t n = r.end() - r.begin();
    if (is_half_type(x.dtype()))
      widen_16(x.dtype(), static_cast<const uint16_t*>(x.raw()) + r.begin(), y.data<float>() + r.begin(), n);
    else
      narrow_16(y.dtype(), x.data<float>() + r.begin(), static_cast<uint16_t*>(y.raw()) + r.begin(), n);
  });
}

}  // namespace

void register_convert_op(OpRegistry& r) { r.add(OpDef{"fusebench", "Convert", infer_convert, compute_convert}); }

}  // namespace fb
