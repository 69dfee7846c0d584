// Elementwise kernels: the unary/binary function table, and the ONNX ops built on it
// (float32 everywhere; integer Add/Sub/Mul/Div too, for shape arithmetic).
#include "engine/ops/elementwise.h"

#include <tbb/parallel_for.h>

#include <cmath>

#include "engine/ops/broadcast.h"
#include "engine/ops/op_registry.h"

namespace fb {

namespace {
struct UnaryRow { UnaryFn fn; const char* op; };
constexpr UnaryRow kUnary[] = {
    {UnaryFn::Relu, "Relu"}, {UnaryFn::Sigmoid, "Sigmoid"}, {UnaryFn::Tanh, "Tanh"},
    {UnaryFn::Erf, "Erf"},   {UnaryFn::Sqrt, "Sqrt"},       {UnaryFn::Exp, "Exp"},
    {UnaryFn::Log, "Log"},   {UnaryFn::Neg, "Neg"},         {UnaryFn::Abs, "Abs"},
    {UnaryFn::Reciprocal, "Reciprocal"}, {UnaryFn::Gelu, "Gelu"},
};
static_assert(std::size(kUnary) == size_t(UnaryFn::Count), "one row per UnaryFn");
struct BinaryRow { BinaryFn fn; const char* op; };
constexpr BinaryRow kBinary[] = {
    {BinaryFn::Add, "Add"}, {BinaryFn::Sub, "Sub"}, {BinaryFn::Mul, "Mul"}, {BinaryFn::Div, "Div"},
    {BinaryFn::Pow, "Pow"}, {BinaryFn::Min, "Min"}, {BinaryFn::Max, "Max"},
};
static_assert(std::size(kBinary) == size_t(BinaryFn::Count), "one row per BinaryFn");

template <typename F>
inline void unary_loop(const float* in, float* out, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) out[i] = f(in[i]);
}

// Binary loop specialised on the stride pattern so the compiler vectorises each.
template <typename F>
inline void binary_loop(const float* a, int64_t sa, const float* b, int64_t sb, float* out, int64_t n, F f) {
  if (sa && sb) {
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
  } else if (sa) {
    const float bv = b[0];
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], bv);
  } else if (sb) {
    const float av = a[0];
    for (int64_t i = 0; i < n; ++i) out[i] = f(av, b[i]);
  } else {
    const float v = f(a[0], b[0]);
    for (int64_t i = 0; i < n; ++i) out[i] = v;
  }
}

inline float pow_f(float a, float b) {
  if (b == 2.0f) return a * a;  // the LayerNorm variance's Pow(x, 2): exact and fast
  return std::pow(a, b);
}
}  // namespace

const char* unary_op_type(UnaryFn f) { return kUnary[size_t(f)].op; }
const char* binary_op_type(BinaryFn f) { return kBinary[size_t(f)].op; }
bool unary_from_op_type(const std::string& op, UnaryFn* f) {
  for (const auto& r : kUnary)
    if (op == r.op) return *f = r.fn, true;
  return false;
}
bool binary_from_op_type(const std::string& op, BinaryFn* f) {
  for (const auto& r : kBinary)
    if (op == r.op) return *f = r.fn, true;
  return false;
}

float unary_scalar(UnaryFn f, float x) {
  float y;
  apply_unary(f, &x, &y, 1);
  return y;
}
float binary_scalar(BinaryFn f, float a, float b) {
  float y;
  apply_binary(f, &a, 1, &b, 1, &y, 1);
  return y;
}

void apply_unary(UnaryFn f, const float* in, float* out, int64_t n) {
  switch (f) {
    case UnaryFn::Relu: return unary_loop(in, out, n, [](float x) { return x > 0.f ? x : 0.f; });
    case UnaryFn::Sigmoid: return unary_loop(in, out, n, [](float x) { return 1.f / (1.f + std::exp(-x)); });
    case UnaryFn::Tanh: return unary_loop(in, out, n, [](float x) { return std::tanh(x); });
    case UnaryFn::Erf: return unary_loop(in, out, n, [](float x) { return std::erf(x); });
    case UnaryFn::Sqrt: return unary_loop(in, out, n, [](float x) { return std::sqrt(x); });
    case UnaryFn::Exp: return unary_loop(in, out, n, [](float x) { return std::exp(x); });
    case UnaryFn::Log: return unary_loop(in, out, n, [](float x) { return std::log(x); });
    case UnaryFn::Neg: return unary_loop(in, out, n, [](float x) { return -x; });
    case UnaryFn::Abs: return unary_loop(in, out, n, [](float x) { return std::fabs(x); });
    case UnaryFn::Reciprocal: return unary_loop(in, out, n, [](float x) { return 1.f / x; });
    case UnaryFn::Gelu:
      return unary_loop(in, out, n, [](float x) { return 0.5f * x * (1.f + std::erf(x * 0.70710678118654752f)); });
    case UnaryFn::Count: break;
  }
  FB_CHECK(false, "bad UnaryFn");
}

void apply_binary(BinaryFn f, const float* a, int64_t sa, const float* b, int64_t sb, float* out, int64_t n) {
  switch (f) {
    case BinaryFn::Add: return binary_loop(a, sa, b, sb, out, n, [](float x, float y) { return x + y; });
    case BinaryFn::Sub: return binary_loop(a, sa, b, sb, out, n, [](float x, float y) { return x - y; });
    case BinaryFn::Mul: return binary_loop(a, sa, b, sb, out, n, [](float x, float y) { return x * y; });
    case BinaryFn::Div: return binary_loop(a, sa, b, sb, out, n, [](float x, float y) { return x / y; });
    case BinaryFn::Pow: return binary_loop(a, sa, b, sb, out, n, pow_f);
    case BinaryFn::Min: return binary_loop(a, sa, b, sb, out, n, [](float x, float y) { return std::fmin(x, y); });
    case BinaryFn::Max: return binary_loop(a, sa, b, sb, out, n, [](float x, float y) { return std::fmax(x, y); });
    case BinaryFn::Count: break;
  }
  FB_CHECK(false, "bad BinaryFn");
}

namespace {

// Grain: rows per task so that each task touches at least ~16K elements.
int64_t row_grain(int64_t inner) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(inner, 1)); }

std::vector<ValueInfo> infer_unary(const ShapeContext& c) { return {ValueInfo{c.in(0).dtype, c.in(0).shape, true}}; }

void compute_unary(OpContext& c) {
  UnaryFn f;
  FB_CHECK(unary_from_op_type(c.node.op_type, &f), c.node.op_type);
  const Tensor& x = c.in(0);
  if (x.dtype() != DType::Float32) throw Error("input type " + dtype_name(x.dtype()) + " is not supported (float32 only)");
  const float* in = x.data<float>();
  float* out = c.out(0).data<float>();
  const int64_t n = x.numel();
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, 16384), [&](const tbb::blocked_range<int64_t>& r) {
    apply_unary(f, in + r.begin(), out + r.begin(), int64_t(r.size()));
  });
}

std::vector<ValueInfo> infer_binary(const ShapeContext& c) {
  const ValueInfo& a = c.in(0);
  const ValueInfo& b = c.in(1);
  if (a.dtype != b.dtype)
    throw Error("input types differ: " + dtype_name(a.dtype) + " and " + dtype_name(b.dtype));
  return {ValueInfo{a.dtype, broadcast_shapes(a.shape, b.shape), true}};
}

template <typename T, typename F>
void binary_typed(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  BroadcastPlan plan(out.shape(), {a.shape(), b.shape()});
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* po = out.data<T>();
  const int64_t inner = plan.inner(), sa = plan.inner_stride(0), sb = plan.inner_stride(1);
  for (int64_t row = 0; row < plan.rows(); ++row) {
    const T* ra = pa + plan.row_offset(0, row);
    const T* rb = pb + plan.row_offset(1, row);
    T* ro = po + row * inner;
    for (int64_t i = 0; i < inner; ++i) ro[i] = f(ra[i * sa], rb[i * sb]);
  }
}

void compute_binary(OpContext& c) {
  BinaryFn f;
  FB_CHECK(binary_from_op_type(c.node.op_type, &f), c.node.op_type);
  const Tensor& a = c.in(0);
  const Tensor& b = c.in(1);
  Tensor& out = c.out(0);
  if (a.dtype() == DType::Float32) {
    BroadcastPlan plan(out.shape(), {a.shape(), b.shape()});
    const float* pa = a.data<float>();
    const float* pb = b.data<float>();
    float* po = out.data<float>();
    const int64_t inner = plan.inner();
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, plan.rows(), row_grain(inner)),
                      [&](const tbb::blocked_range<int64_t>& r) {
                        for (int64_t row = r.begin(); row < r.end(); ++row)
                          apply_binary(f, pa + plan.row_offset(0, row), plan.inner_stride(0),
                                       pb + plan.row_offset(1, row), plan.inner_stride(1), po + row * inner, inner);
                      });
    return;
  }
  auto int_op = [&](auto tag) {
    using T = decltype(tag);
    switch (f) {
      case BinaryFn::Add: return binary_typed<T>(a, b, out, [](T x, T y) { return T(x + y); });
      case BinaryFn::Sub: return binary_typed<T>(a, b, out, [](T x, T y) { return T(x - y); });
      case BinaryFn::Mul: return binary_typed<T>(a, b, out, [](T x, T y) { return T(x * y); });
      case BinaryFn::Div:
        return binary_typed<T>(a, b, out, [&](T x, T y) {
          if (y == 0) throw Error(c.node.describe() + ": integer division by zero");
          return T(x / y);
        });
      case BinaryFn::Min: return binary_typed<T>(a, b, out, [](T x, T y) { return std::min(x, y); });
      case BinaryFn::Max: return binary_typed<T>(a, b, out, [](T x, T y) { return std::max(x, y); });
      default: throw Error("integer " + c.node.op_type + " is not supported");
    }
  };
  switch (a.dtype()) {
    case DType::Int64: return int_op(int64_t{});
    case DType::Int32: return int_op(int32_t{});
    default: throw Error("input type " + dtype_name(a.dtype()) + " is not supported");
  }
}

}  // namespace

void register_elementwise_ops(OpRegistry& r) {
  for (const auto& row : kUnary) {
    if (row.fn == UnaryFn::Gelu) continue;  // registered with the fused ops
    r.add(OpDef{"", row.op, infer_unary, compute_unary, /*elementwise=*/true, false});
  }
  for (const auto& row : kBinary) r.add(OpDef{"", row.op, infer_binary, compute_binary, true, false});
}

// The fused GELU shares the unary kernel.
void register_gelu_op(OpRegistry& r) { r.add(OpDef{"fusebench", "Gelu", infer_unary, compute_unary, true, false}); }

}  // namespace fb
