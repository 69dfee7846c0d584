// Cast and CastLike between every numeric type, float16 and bfloat16 included (16-bit
// floats go through float32, which holds every value of both exactly). Strings are not
// supported.
#include <cmath>
#include <cstring>

#include "engine/ops/half_float.h"
#include "engine/ops/typed_kernels.h"

namespace fb {

namespace {

DType checked_target(DType to) {
  if (dtype_size(to) == 0) throw Error("Cast to " + dtype_name(to) + " is not supported");
  return to;
}

std::vector<ValueInfo> infer_cast(const ShapeContext& c) {
  if (dtype_size(c.in(0).dtype) == 0) throw Error("Cast from " + dtype_name(c.in(0).dtype) + " is not supported");
  return {ValueInfo{checked_target(static_cast<DType>(c.node.attr_int("to", 0))), c.in(0).shape, true}};
}

std::vector<ValueInfo> infer_castlike(const ShapeContext& c) {
  if (dtype_size(c.in(0).dtype) == 0) throw Error("Cast from " + dtype_name(c.in(0).dtype) + " is not supported");
  return {ValueInfo{checked_target(c.in(1).dtype), c.in(0).shape, true}};
}

template <typename To, typename From>
To convert(From v) {
  if constexpr (std::is_same_v<To, bool>) return v != From(0);
  else return static_cast<To>(v);
}

void cast_tensor(const Tensor& x, Tensor& out) {
  if (x.dtype() == out.dtype()) {
    std::memcpy(out.raw(), x.raw(), x.nbytes());
    return;
  }
  if (is_half_type(x.dtype())) return cast_tensor(widen_half(x), out);
  if (out.dtype() == DType::BFloat16) {
    // Cast to bfloat16 keeps the upper 16 bits (truncation), as the ONNX 1.12 reference
    // and its conformance data do; arithmetic results elsewhere are rounded to nearest.
    Tensor wide = Tensor::empty(DType::Float32, out.shape());
    cast_tensor(x, wide);
    const float* s = wide.data<float>();
    auto* d = static_cast<uint16_t*>(out.raw());
    for (int64_t i = 0, n = wide.numel(); i < n; ++i) {
      uint32_t bits;
      std::memcpy(&bits, &s[i], 4);
      d[i] = std::isnan(s[i]) ? uint16_t((bits >> 16) | 0x40) : uint16_t(bits >> 16);
    }
    return;
  }
  if (is_half_type(out.dtype())) {
    Tensor wide = Tensor::empty(DType::Float32, out.shape());
    cast_tensor(x, wide);
    return narrow_half(wide, out);
  }
  visit_dtype(x.dtype(), [&](auto from) {
    using F = decltype(from);
    visit_dtype(out.dtype(), [&](auto to) {
      using T = decltype(to);
      map_unary<F, T>(x, out, [](F v) { return convert<T>(v); });
    });
  });
}

void compute_cast(OpContext& c) { cast_tensor(c.in(0), c.out(0)); }

}  // namespace

void register_cast_ops(OpRegistry& r) {
  r.add(OpDef{"", "Cast", infer_cast, compute_cast});
  r.add(OpDef{"", "CastLike", infer_castlike, compute_cast});
}

}  // namespace fb
