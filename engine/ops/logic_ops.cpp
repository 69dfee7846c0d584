// Comparison, logic and bit ops: Equal, Less, Greater, LessOrEqual, GreaterOrEqual (any
// numeric type in, bool out), Not, And, Or, Xor (bool), BitShift (unsigned), IsInf, IsNaN,
// and Where, which selects by a bool condition and copies elements of any type by size.
#include <cmath>
#include <cstring>

#include "engine/ops/half_float.h"
#include "engine/ops/typed_kernels.h"

namespace fb {

namespace {

std::vector<ValueInfo> infer_compare(const ShapeContext& c) {
  return {ValueInfo{DType::Bool, broadcast_all(c, 0, 2), true}};
}

template <typename F>
void compare_with(OpContext& c, F f) {
  const Tensor& a = c.in(0);
  visit_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    map_binary<T, T, bool>(a, c.in(1), c.out(0), [&](T x, T y) { return f(x, y); });
  });
}

void compute_compare(OpContext& c) {
  if (run_widened(c, compute_compare)) return;
  const std::string& op = c.node.op_type;
  if (op == "Equal") return compare_with(c, [](auto x, auto y) { return x == y; });
  if (op == "Less") return compare_with(c, [](auto x, auto y) { return x < y; });
  if (op == "Greater") return compare_with(c, [](auto x, auto y) { return x > y; });
  if (op == "LessOrEqual") return compare_with(c, [](auto x, auto y) { return x <= y; });
  return compare_with(c, [](auto x, auto y) { return x >= y; });
}

std::vector<ValueInfo> infer_logic(const ShapeContext& c) {
  if (c.in(0).dtype != DType::Bool) throw Error("inputs must be bool, got " + dtype_name(c.in(0).dtype));
  return {ValueInfo{DType::Bool, broadcast_all(c, 0, 2), true}};
}

void compute_logic(OpContext& c) {
  const std::string& op = c.node.op_type;
  if (op == "And") return map_binary<bool, bool, bool>(c.in(0), c.in(1), c.out(0), [](bool x, bool y) { return x && y; });
  if (op == "Or") return map_binary<bool, bool, bool>(c.in(0), c.in(1), c.out(0), [](bool x, bool y) { return x || y; });
  return map_binary<bool, bool, bool>(c.in(0), c.in(1), c.out(0), [](bool x, bool y) { return x != y; });
}

std::vector<ValueInfo> infer_not(const ShapeContext& c) {
  if (c.in(0).dtype != DType::Bool) throw Error("input must be bool, got " + dtype_name(c.in(0).dtype));
  return same_as_input0(c);
}

void compute_not(OpContext& c) { map_unary<bool, bool>(c.in(0), c.out(0), [](bool x) { return !x; }); }

// ---- BitShift ------------------------------------------------------------------------------
std::vector<ValueInfo> infer_bitshift(const ShapeContext& c) {
  const DType t = c.in(0).dtype;
  if (t != DType::UInt8 && t != DType::UInt16 && t != DType::UInt32 && t != DType::UInt64)
    throw Error("BitShift takes unsigned integers, got " + dtype_name(t));
  const std::string dir = c.node.attr_string("direction", "");
  if (dir != "LEFT" && dir != "RIGHT") throw Error("direction must be LEFT or RIGHT, got '" + dir + "'");
  return {ValueInfo{t, broadcast_all(c, 0, 2), true}};
}

void compute_bitshift(OpContext& c) {
  const bool left = c.node.attr_string("direction", "") == "LEFT";
  visit_dtype(c.in(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_unsigned_v<T> && !std::is_same_v<T, bool>) {
      constexpr T bits = T(sizeof(T) * 8);
      // Shifting by the width or more is undefined in C++; ONNX means all bits shifted out.
      map_binary<T, T, T>(c.in(0), c.in(1), c.out(0), [&](T x, T s) {
        if (s >= bits) return T(0);
        return left ? T(x << s) : T(x >> s);
      });
    }
  });
}

// ---- IsInf / IsNaN -------------------------------------------------------------------------
std::vector<ValueInfo> infer_float_test(const ShapeContext& c) {
  if (!dtype_is_float(c.in(0).dtype)) throw Error("input must be a float type, got " + dtype_name(c.in(0).dtype));
  return {ValueInfo{DType::Bool, c.in(0).shape, true}};
}

void compute_isinf(OpContext& c) {
  if (run_widened(c, compute_isinf)) return;
  const bool pos = c.node.attr_int("detect_positive", 1) != 0, neg = c.node.attr_int("detect_negative", 1) != 0;
  visit_dtype(c.in(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>)
      map_unary<T, bool>(c.in(0), c.out(0), [&](T x) { return std::isinf(x) && ((x > 0 && pos) || (x < 0 && neg)); });
  });
}

void compute_isnan(OpContext& c) {
  if (run_widened(c, compute_isnan)) return;
  visit_dtype(c.in(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) map_unary<T, bool>(c.in(0), c.out(0), [](T x) { return std::isnan(x); });
  });
}

// ---- Where ---------------------------------------------------------------------------------
std::vector<ValueInfo> infer_where(const ShapeContext& c) {
  if (c.in(0).dtype != DType::Bool) throw Error("condition must be bool, got " + dtype_name(c.in(0).dtype));
  if (c.in(1).dtype != c.in(2).dtype)
    throw Error("X and Y types differ: " + dtype_name(c.in(1).dtype) + " and " + dtype_name(c.in(2).dtype));
  Shape s = broadcast_shapes(broadcast_shapes(c.in(0).shape, c.in(1).shape), c.in(2).shape);
  return {ValueInfo{c.in(1).dtype, s, true}};
}

template <typename W>
void where_words(const Tensor& cond, const Tensor& x, const Tensor& y, Tensor& out) {
  BroadcastPlan plan(out.shape(), {cond.shape(), x.shape(), y.shape()});
  const bool* pc = cond.data<bool>();
  const W* px = static_cast<const W*>(x.raw());
  const W* py = static_cast<const W*>(y.raw());
  W* po = static_cast<W*>(out.raw());
  const int64_t inner = plan.inner(), sc = plan.inner_stride(0), sx = plan.inner_stride(1), sy = plan.inner_stride(2);
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, plan.rows(), parallel_grain(inner)),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      for (int64_t row = r.begin(); row < r.end(); ++row) {
                        const bool* rc = pc + plan.row_offset(0, row);
                        const W* rx = px + plan.row_offset(1, row);
                        const W* ry = py + plan.row_offset(2, row);
                        W* ro = po + row * inner;
                        for (int64_t i = 0; i < inner; ++i) ro[i] = rc[i * sc] ? rx[i * sx] : ry[i * sy];
                      }
                    });
}

void compute_where(OpContext& c) {
  const Tensor &cond = c.in(0), &x = c.in(1), &y = c.in(2);
  switch (dtype_size(x.dtype())) {
    case 1: return where_words<uint8_t>(cond, x, y, c.out(0));
    case 2: return where_words<uint16_t>(cond, x, y, c.out(0));
    case 4: return where_words<uint32_t>(cond, x, y, c.out(0));
    case 8: return where_words<uint64_t>(cond, x, y, c.out(0));
    default: throw Error("element type " + dtype_name(x.dtype()) + " is not supported");
  }
}

}  // namespace

void register_logic_ops(OpRegistry& r) {
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"})
    r.add(OpDef{"", op, infer_compare, compute_compare});
  for (const char* op : {"And", "Or", "Xor"}) r.add(OpDef{"", op, infer_logic, compute_logic});
  r.add(OpDef{"", "Not", infer_not, compute_not});
  r.add(OpDef{"", "BitShift", infer_bitshift, compute_bitshift});
  r.add(OpDef{"", "IsInf", infer_float_test, compute_isinf});
  r.add(OpDef{"", "IsNaN", infer_float_test, compute_isnan});
  r.add(OpDef{"", "Where", infer_where, compute_where});
}

}  // namespace fb
