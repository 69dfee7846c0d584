// Elementwise kernels: the unary/binary function table shared with the fused chains, and
// the ONNX ops built on it. float32 runs the vectorisable table loops; float64 the same
// loops instantiated for double; float16/bfloat16 are widened to float32; integer types
// get the functions that mean something for integers (Neg, Abs, Sign, Relu, arithmetic).
// Every loop reads element i before writing element i and never looks back, so the ops
// are registered in_place: the engine may give the output a dying input's buffer.
#include "engine/ops/elementwise.h"

#include <tbb/parallel_for.h>

#include <cmath>
#include <type_traits>

#include "engine/ops/broadcast.h"
#include "engine/ops/fast_math.h"
#include "engine/ops/op_registry.h"
#include "engine/ops/typed_kernels.h"

namespace fb {

namespace {
struct UnaryRow { UnaryFn fn; const char* op; };
constexpr UnaryRow kUnary[] = {
    {UnaryFn::Relu, "Relu"}, {UnaryFn::Sigmoid, "Sigmoid"}, {UnaryFn::Tanh, "Tanh"},
    {UnaryFn::Erf, "Erf"},   {UnaryFn::Sqrt, "Sqrt"},       {UnaryFn::Exp, "Exp"},
    {UnaryFn::Log, "Log"},   {UnaryFn::Neg, "Neg"},         {UnaryFn::Abs, "Abs"},
    {UnaryFn::Reciprocal, "Reciprocal"}, {UnaryFn::Gelu, "Gelu"},
    {UnaryFn::Sin, "Sin"},   {UnaryFn::Cos, "Cos"},         {UnaryFn::Tan, "Tan"},
    {UnaryFn::Asin, "Asin"}, {UnaryFn::Acos, "Acos"},       {UnaryFn::Atan, "Atan"},
    {UnaryFn::Sinh, "Sinh"}, {UnaryFn::Cosh, "Cosh"},       {UnaryFn::Asinh, "Asinh"},
    {UnaryFn::Acosh, "Acosh"}, {UnaryFn::Atanh, "Atanh"},   {UnaryFn::Ceil, "Ceil"},
    {UnaryFn::Floor, "Floor"}, {UnaryFn::Round, "Round"},   {UnaryFn::Sign, "Sign"},
    {UnaryFn::Softplus, "Softplus"}, {UnaryFn::Softsign, "Softsign"}, {UnaryFn::Mish, "Mish"},
    {UnaryFn::HardSwish, "HardSwish"}, {UnaryFn::GeluTanh, "GeluTanh"},
};
static_assert(std::size(kUnary) == size_t(UnaryFn::Count), "one row per UnaryFn");
struct BinaryRow { BinaryFn fn; const char* op; };
constexpr BinaryRow kBinary[] = {
    {BinaryFn::Add, "Add"}, {BinaryFn::Sub, "Sub"}, {BinaryFn::Mul, "Mul"}, {BinaryFn::Div, "Div"},
    {BinaryFn::Pow, "Pow"}, {BinaryFn::Min, "Min"}, {BinaryFn::Max, "Max"},
};
static_assert(std::size(kBinary) == size_t(BinaryFn::Count), "one row per BinaryFn");

template <typename T, typename F>
inline void unary_loop(const T* in, T* out, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) out[i] = f(in[i]);
}

// Binary loop specialised on the stride pattern so the compiler vectorises each.
template <typename T, typename F>
inline void binary_loop(const T* a, int64_t sa, const T* b, int64_t sb, T* out, int64_t n, F f) {
  if (sa && sb) {
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
  } else if (sa) {
    const T bv = b[0];
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], bv);
  } else if (sb) {
    const T av = a[0];
    for (int64_t i = 0; i < n; ++i) out[i] = f(av, b[i]);
  } else {
    const T v = f(a[0], b[0]);
    for (int64_t i = 0; i < n; ++i) out[i] = v;
  }
}

template <typename T>
inline T pow_t(T a, T b) {
  if (b == T(2)) return a * a;  // the LayerNorm variance's Pow(x, 2): exact and fast
  return std::pow(a, b);
}

// softplus(x) = log(1 + e^x), written so that neither branch overflows.
template <typename T>
inline T softplus_t(T x) {
  return x > T(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

// The float loops, for float and double.
template <typename T>
void apply_unary_t(UnaryFn f, const T* in, T* out, int64_t n) {
  switch (f) {
    case UnaryFn::Relu: return unary_loop(in, out, n, [](T x) { return x > T(0) ? x : T(0); });
    case UnaryFn::Sigmoid:
      if constexpr (std::is_same_v<T, float>) return unary_loop(in, out, n, [](float x) { return fast_sigmoid(x); });
      else return unary_loop(in, out, n, [](T x) { return T(1) / (T(1) + std::exp(-x)); });
    case UnaryFn::Tanh:
      if constexpr (std::is_same_v<T, float>) return unary_loop(in, out, n, [](float x) { return fast_tanh(x); });
      else return unary_loop(in, out, n, [](T x) { return std::tanh(x); });
    case UnaryFn::Erf:
      if constexpr (std::is_same_v<T, float>) return unary_loop(in, out, n, [](float x) { return fast_erf(x); });
      else return unary_loop(in, out, n, [](T x) { return std::erf(x); });
    case UnaryFn::Sqrt: return unary_loop(in, out, n, [](T x) { return std::sqrt(x); });
    case UnaryFn::Exp: return unary_loop(in, out, n, [](T x) { return std::exp(x); });
    case UnaryFn::Log: return unary_loop(in, out, n, [](T x) { return std::log(x); });
    case UnaryFn::Neg: return unary_loop(in, out, n, [](T x) { return -x; });
    case UnaryFn::Abs: return unary_loop(in, out, n, [](T x) { return std::fabs(x); });
    case UnaryFn::Reciprocal: return unary_loop(in, out, n, [](T x) { return T(1) / x; });
    case UnaryFn::Gelu:
      if constexpr (std::is_same_v<T, float>)
        return unary_loop(in, out, n, [](float x) { return 0.5f * x * (1.f + fast_erf(x * 0.70710678118654752f)); });
      else return unary_loop(in, out, n, [](T x) { return T(0.5) * x * (T(1) + std::erf(x * T(0.70710678118654752))); });
    case UnaryFn::Sin: return unary_loop(in, out, n, [](T x) { return std::sin(x); });
    case UnaryFn::Cos: return unary_loop(in, out, n, [](T x) { return std::cos(x); });
    case UnaryFn::Tan: return unary_loop(in, out, n, [](T x) { return std::tan(x); });
    case UnaryFn::Asin: return unary_loop(in, out, n, [](T x) { return std::asin(x); });
    case UnaryFn::Acos: return unary_loop(in, out, n, [](T x) { return std::acos(x); });
    case UnaryFn::Atan: return unary_loop(in, out, n, [](T x) { return std::atan(x); });
    case UnaryFn::Sinh: return unary_loop(in, out, n, [](T x) { return std::sinh(x); });
    case UnaryFn::Cosh: return unary_loop(in, out, n, [](T x) { return std::cosh(x); });
    case UnaryFn::Asinh: return unary_loop(in, out, n, [](T x) { return std::asinh(x); });
    case UnaryFn::Acosh: return unary_loop(in, out, n, [](T x) { return std::acosh(x); });
    case UnaryFn::Atanh: return unary_loop(in, out, n, [](T x) { return std::atanh(x); });
    case UnaryFn::Ceil: return unary_loop(in, out, n, [](T x) { return std::ceil(x); });
    case UnaryFn::Floor: return unary_loop(in, out, n, [](T x) { return std::floor(x); });
    // nearbyint rounds in the default mode, to nearest with ties to even, as ONNX asks.
    case UnaryFn::Round: return unary_loop(in, out, n, [](T x) { return std::nearbyint(x); });
    case UnaryFn::Sign: return unary_loop(in, out, n, [](T x) { return T((x > T(0)) - (x < T(0))); });
    case UnaryFn::Softplus: return unary_loop(in, out, n, [](T x) { return softplus_t(x); });
    case UnaryFn::Softsign: return unary_loop(in, out, n, [](T x) { return x / (T(1) + std::fabs(x)); });
    case UnaryFn::Mish: return unary_loop(in, out, n, [](T x) { return x * std::tanh(softplus_t(x)); });
    case UnaryFn::HardSwish:
      return unary_loop(in, out, n, [](T x) { return x * std::max(T(0), std::min(T(1), x / T(6) + T(0.5))); });
    case UnaryFn::GeluTanh:  // 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
      if constexpr (std::is_same_v<T, float>)
        return unary_loop(in, out, n, [](float x) {
          return 0.5f * x * (1.f + fast_tanh(0.79788456080286536f * (x + 0.044715f * x * x * x)));
        });
      else return unary_loop(in, out, n, [](T x) {
        return T(0.5) * x * (T(1) + std::tanh(T(0.79788456080286536) * (x + T(0.044715) * x * x * x)));
      });
    case UnaryFn::Count: break;
  }
  FB_CHECK(false, "bad UnaryFn");
}

template <typename T>
void apply_binary_t(BinaryFn f, const T* a, int64_t sa, const T* b, int64_t sb, T* out, int64_t n) {
  switch (f) {
    case BinaryFn::Add: return binary_loop(a, sa, b, sb, out, n, [](T x, T y) { return x + y; });
    case BinaryFn::Sub: return binary_loop(a, sa, b, sb, out, n, [](T x, T y) { return x - y; });
    case BinaryFn::Mul: return binary_loop(a, sa, b, sb, out, n, [](T x, T y) { return x * y; });
    case BinaryFn::Div: return binary_loop(a, sa, b, sb, out, n, [](T x, T y) { return x / y; });
    case BinaryFn::Pow: return binary_loop(a, sa, b, sb, out, n, pow_t<T>);
    case BinaryFn::Min: return binary_loop(a, sa, b, sb, out, n, [](T x, T y) { return std::fmin(x, y); });
    case BinaryFn::Max: return binary_loop(a, sa, b, sb, out, n, [](T x, T y) { return std::fmax(x, y); });
    case BinaryFn::Count: break;
  }
  FB_CHECK(false, "bad BinaryFn");
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

void apply_unary(UnaryFn f, const float* in, float* out, int64_t n) { apply_unary_t<float>(f, in, out, n); }

void apply_binary(BinaryFn f, const float* a, int64_t sa, const float* b, int64_t sb, float* out, int64_t n) {
  apply_binary_t<float>(f, a, sa, b, sb, out, n);
}

namespace {

template <typename T>
void float_binary_rows(BinaryFn f, const Tensor& a, const Tensor& b, Tensor& out) {
  BroadcastPlan plan(out.shape(), {a.shape(), b.shape()});
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* po = out.data<T>();
  const int64_t inner = plan.inner();
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, plan.rows(), parallel_grain(inner)),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      for (int64_t row = r.begin(); row < r.end(); ++row)
                        apply_binary_t<T>(f, pa + plan.row_offset(0, row), plan.inner_stride(0),
                                          pb + plan.row_offset(1, row), plan.inner_stride(1), po + row * inner, inner);
                    });
}

template <typename T>
void int_binary(BinaryFn f, const Tensor& a, const Tensor& b, Tensor& out) {
  switch (f) {
    case BinaryFn::Add: return map_binary<T, T, T>(a, b, out, [](T x, T y) { return T(x + y); });
    case BinaryFn::Sub: return map_binary<T, T, T>(a, b, out, [](T x, T y) { return T(x - y); });
    case BinaryFn::Mul: return map_binary<T, T, T>(a, b, out, [](T x, T y) { return T(x * y); });
    case BinaryFn::Div: {
      // A zero divisor anywhere is an error; check before dividing so no task traps.
      const T* pb = b.data<T>();
      for (int64_t i = 0, n = b.numel(); i < n; ++i)
        if (pb[i] == T(0)) throw Error("integer division by zero");
      return map_binary<T, T, T>(a, b, out, [](T x, T y) { return T(x / y); });
    }
    case BinaryFn::Min: return map_binary<T, T, T>(a, b, out, [](T x, T y) { return std::min(x, y); });
    case BinaryFn::Max: return map_binary<T, T, T>(a, b, out, [](T x, T y) { return std::max(x, y); });
    default: break;
  }
  FB_CHECK(false, "int_binary");
}

}  // namespace

void binary_tensor(BinaryFn f, const Tensor& a, const Tensor& b, Tensor& out) {
  if (f == BinaryFn::Pow && (a.dtype() != b.dtype() || !dtype_is_float(a.dtype()))) {
    // Mixed-type Pow (opset 12+): the exponent may have another type; computed in double.
    return visit_dtype(a.dtype(), [&](auto ta) {
      using A = decltype(ta);
      if constexpr (std::is_same_v<A, bool>) {
        throw Error("Pow on bool is not supported");
      } else {
        visit_dtype(b.dtype(), [&](auto tb) {
          using B = decltype(tb);
          if constexpr (std::is_same_v<B, bool>) {
            throw Error("Pow on bool is not supported");
          } else {
            map_binary<A, B, A>(a, b, out, [](A x, B y) { return A(std::pow(double(x), double(y))); });
          }
        });
      }
    });
  }
  if (a.dtype() != b.dtype())
    throw Error("input types differ: " + dtype_name(a.dtype()) + " and " + dtype_name(b.dtype()));
  visit_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      throw Error(std::string(binary_op_type(f)) + " on bool is not supported");
    } else if constexpr (std::is_floating_point_v<T>) {
      float_binary_rows<T>(f, a, b, out);
    } else {
      int_binary<T>(f, a, b, out);
    }
  });
}

namespace {

std::vector<ValueInfo> infer_unary(const ShapeContext& c) { return {ValueInfo{c.in(0).dtype, c.in(0).shape, true}}; }

void compute_unary(OpContext& c) {
  if (run_widened(c, compute_unary)) return;
  UnaryFn f;
  FB_CHECK(unary_from_op_type(c.node.op_type, &f), c.node.op_type);
  const Tensor& x = c.in(0);
  const int64_t n = x.numel();
  if (x.dtype() == DType::Float32 || x.dtype() == DType::Float64) {
    visit_dtype(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_floating_point_v<T>) {
        const T* in = x.data<T>();
        T* out = c.out(0).data<T>();
        tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, 16384), [&](const tbb::blocked_range<int64_t>& r) {
          apply_unary_t<T>(f, in + r.begin(), out + r.begin(), int64_t(r.size()));
        });
      }
    });
    return;
  }
  // Integers: only the functions that stay in the integers.
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool> || std::is_floating_point_v<T>) {
      throw Error("input type " + dtype_name(x.dtype()) + " is not supported");
    } else {
      switch (f) {
        case UnaryFn::Neg: return map_unary<T, T>(x, c.out(0), [](T v) { return T(-v); });
        case UnaryFn::Abs: return map_unary<T, T>(x, c.out(0), [](T v) { return v < T(0) ? T(-v) : v; });
        case UnaryFn::Relu: return map_unary<T, T>(x, c.out(0), [](T v) { return v > T(0) ? v : T(0); });
        case UnaryFn::Sign: return map_unary<T, T>(x, c.out(0), [](T v) { return T((v > T(0)) - (v < T(0))); });
        default: throw Error("input type " + dtype_name(x.dtype()) + " is not supported");
      }
    }
  });
}

std::vector<ValueInfo> infer_binary(const ShapeContext& c) {
  const ValueInfo& a = c.in(0);
  const ValueInfo& b = c.in(1);
  // Pow's exponent may have another numeric type (opset 12+); the result has the base's.
  if (a.dtype != b.dtype && c.node.op_type != "Pow")
    throw Error("input types differ: " + dtype_name(a.dtype) + " and " + dtype_name(b.dtype));
  return {ValueInfo{a.dtype, broadcast_shapes(a.shape, b.shape), true}};
}

void compute_binary(OpContext& c) {
  if (run_widened(c, compute_binary)) return;
  BinaryFn f;
  FB_CHECK(binary_from_op_type(c.node.op_type, &f), c.node.op_type);
  binary_tensor(f, c.in(0), c.in(1), c.out(0));
}

}  // namespace

void register_elementwise_ops(OpRegistry& r) {
  for (const auto& row : kUnary) {
    if (row.fn == UnaryFn::Gelu || row.fn == UnaryFn::GeluTanh) continue;  // registered with the fused ops
    r.add(OpDef{"", row.op, infer_unary, compute_unary, /*elementwise=*/true, false, /*in_place=*/true});
  }
  // Min and Max are variadic in ONNX: variadic_ops.cpp registers them.
  for (const auto& row : kBinary)
    if (row.fn != BinaryFn::Min && row.fn != BinaryFn::Max)
      r.add(OpDef{"", row.op, infer_binary, compute_binary, true, false, /*in_place=*/true});
}

// The fused GELUs share the unary kernel.
void register_gelu_op(OpRegistry& r) {
  r.add(OpDef{"fusebench", "Gelu", infer_unary, compute_unary, true, false, /*in_place=*/true});
  r.add(OpDef{"fusebench", "GeluTanh", infer_unary, compute_unary, true, false, /*in_place=*/true});
}

}  // namespace fb
