// Element-type dispatch and the typed loop templates the reference kernels share:
// a unary map, numpy-broadcast binary and ternary maps (rows of the BroadcastPlan,
// run in parallel with oneTBB), and a wrapper that runs a float32 kernel on
// float16/bfloat16 tensors by widening them.
#pragma once
#include <tbb/parallel_for.h>

#include <algorithm>
#include <type_traits>

#include "engine/ops/broadcast.h"
#include "engine/ops/op_registry.h"

namespace fb {

// Calls f(T{}) for the C++ type of `t`; 16-bit floats, strings and unknown types are an Error.
template <typename F>
decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::Float32: return f(float{});
    case DType::Float64: return f(double{});
    case DType::Int8: return f(int8_t{});
    case DType::Int16: return f(int16_t{});
    case DType::Int32: return f(int32_t{});
    case DType::Int64: return f(int64_t{});
    case DType::UInt8: return f(uint8_t{});
    case DType::UInt16: return f(uint16_t{});
    case DType::UInt32: return f(uint32_t{});
    case DType::UInt64: return f(uint64_t{});
    case DType::Bool: return f(bool{});
    default: throw Error("element type " + dtype_name(t) + " is not supported");
  }
}

// Rows of at least ~16K elements per task: smaller tasks cost more to schedule than they save.
inline int64_t parallel_grain(int64_t inner) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(inner, 1)); }

template <typename I, typename O, typename F>
void map_unary(const Tensor& x, Tensor& out, F f) {
  const I* in = x.data<I>();
  O* o = out.data<O>();
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, x.numel(), 16384), [&](const tbb::blocked_range<int64_t>& r) {
    for (int64_t i = r.begin(); i < r.end(); ++i) o[i] = f(in[i]);
  });
}

// out = f(a, b) with numpy broadcasting; out already has the broadcast shape.
template <typename A, typename B, typename O, typename F>
void map_binary(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  BroadcastPlan plan(out.shape(), {a.shape(), b.shape()});
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  O* po = out.data<O>();
  const int64_t inner = plan.inner(), sa = plan.inner_stride(0), sb = plan.inner_stride(1);
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, plan.rows(), parallel_grain(inner)),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      for (int64_t row = r.begin(); row < r.end(); ++row) {
                        const A* ra = pa + plan.row_offset(0, row);
                        const B* rb = pb + plan.row_offset(1, row);
                        O* ro = po + row * inner;
                        for (int64_t i = 0; i < inner; ++i) ro[i] = f(ra[i * sa], rb[i * sb]);
                      }
                    });
}

// Runs `kernel` with float16/bfloat16 inputs widened to float32 and those outputs computed
// in float32, then narrowed back. Returns false (doing nothing) when no tensor is 16-bit.
bool run_widened(OpContext& c, void (*kernel)(OpContext&));

// Output dtype/shape helpers for InferFns.
std::vector<ValueInfo> same_as_input0(const ShapeContext& c);
// Broadcast of all present inputs' shapes; all must share input 0's dtype.
Shape broadcast_all(const ShapeContext& c, size_t first = 0, size_t count = SIZE_MAX);

}  // namespace fb
