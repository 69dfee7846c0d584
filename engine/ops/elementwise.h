// Elementwise math shared by the per-op kernels and the engine's fused elementwise
// chains: one table of unary and binary functions, each applied over a strided run.
#pragma once
#include <cstdint>
#include <string>

namespace fb {

// New functions are appended before Count: fused chains store these numbers.
enum class UnaryFn {
  Relu, Sigmoid, Tanh, Erf, Sqrt, Exp, Log, Neg, Abs, Reciprocal, Gelu,
  Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh,
  Ceil, Floor, Round, Sign, Softplus, Softsign, Mish, HardSwish, GeluTanh, Count
};
enum class BinaryFn { Add, Sub, Mul, Div, Pow, Min, Max, Count };

// The ONNX op type for each function ("Gelu" and "GeluTanh" are the engine's fused GELU,
// erf and tanh forms).
const char* unary_op_type(UnaryFn f);
const char* binary_op_type(BinaryFn f);
bool unary_from_op_type(const std::string& op, UnaryFn* f);
bool binary_from_op_type(const std::string& op, BinaryFn* f);

// out[i] = f(in[i]) for i < n.
void apply_unary(UnaryFn f, const float* in, float* out, int64_t n);
// out[i] = f(a[i * sa], b[i * sb]) for i < n, with strides sa, sb in {0, 1}.
void apply_binary(BinaryFn f, const float* a, int64_t sa, const float* b, int64_t sb, float* out, int64_t n);
// The scalar form, for the odd element.
float unary_scalar(UnaryFn f, float x);

class Tensor;
// out = f(a, b) with numpy broadcasting, for every numeric element type (not 16-bit floats:
// callers widen those); out has the broadcast shape. Pow takes a and b of different types
// (out has a's). Integer division by zero is an Error.
void binary_tensor(BinaryFn f, const Tensor& a, const Tensor& b, Tensor& out);

}  // namespace fb
