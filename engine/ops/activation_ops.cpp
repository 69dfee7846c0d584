// Activations with parameters (LeakyRelu, PRelu, HardSigmoid, Elu, Selu, Celu,
// ThresholdedRelu, Shrink, Clip). They stay out of the fused-chain function table,
// whose program encoding has no room for attributes, and run here for float32/64
// (16-bit floats widened); PRelu and Clip take integers too.
#include <cmath>
#include <limits>

#include "engine/ops/typed_kernels.h"

namespace fb {

namespace {

std::vector<ValueInfo> infer_float_activation(const ShapeContext& c) {
  if (!dtype_is_float(c.in(0).dtype)) throw Error("input type " + dtype_name(c.in(0).dtype) + " is not supported");
  return same_as_input0(c);
}

// y = f(x, attributes), computed in the input's own float type.
void compute_float_activation(OpContext& c) {
  if (run_widened(c, compute_float_activation)) return;
  const Node& n = c.node;
  const std::string& op = n.op_type;
  visit_dtype(c.in(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_floating_point_v<T>) {
      throw Error("input type " + dtype_name(c.in(0).dtype()) + " is not supported");
    } else {
      const Tensor& x = c.in(0);
      Tensor& y = c.out(0);
      if (op == "LeakyRelu") {
        const T alpha = T(n.attr_float("alpha", 0.01f));
        map_unary<T, T>(x, y, [=](T v) { return v >= T(0) ? v : alpha * v; });
      } else if (op == "HardSigmoid") {
        const T alpha = T(n.attr_float("alpha", 0.2f)), beta = T(n.attr_float("beta", 0.5f));
        map_unary<T, T>(x, y, [=](T v) { return std::max(T(0), std::min(T(1), alpha * v + beta)); });
      } else if (op == "Elu") {
        const T alpha = T(n.attr_float("alpha", 1.0f));
        map_unary<T, T>(x, y, [=](T v) { return v >= T(0) ? v : alpha * (std::exp(v) - T(1)); });
      } else if (op == "Selu") {
        const T alpha = T(n.attr_float("alpha", 1.67326319217681884765625f));
        const T gamma = T(n.attr_float("gamma", 1.05070102214813232421875f));
        map_unary<T, T>(x, y, [=](T v) { return v > T(0) ? gamma * v : gamma * (alpha * std::exp(v) - alpha); });
      } else if (op == "Celu") {
        const T alpha = T(n.attr_float("alpha", 1.0f));
        if (alpha == T(0)) throw Error("alpha must not be 0");
        map_unary<T, T>(x, y, [=](T v) { return std::max(T(0), v) + std::min(T(0), alpha * (std::exp(v / alpha) - T(1))); });
      } else if (op == "ThresholdedRelu") {
        const T alpha = T(n.attr_float("alpha", 1.0f));
        map_unary<T, T>(x, y, [=](T v) { return v > alpha ? v : T(0); });
      } else if (op == "Shrink") {
        const T lambd = T(n.attr_float("lambd", 0.5f)), bias = T(n.attr_float("bias", 0.0f));
        map_unary<T, T>(x, y, [=](T v) { return v < -lambd ? v + bias : v > lambd ? v - bias : T(0); });
      } else {
        FB_CHECK(false, op);
      }
    }
  });
}

// Shrink is defined for integers too; its formula is the same.
std::vector<ValueInfo> infer_shrink(const ShapeContext& c) { return same_as_input0(c); }

void compute_shrink(OpContext& c) {
  if (dtype_is_float(c.in(0).dtype())) return compute_float_activation(c);
  const double lambd = c.node.attr_float("lambd", 0.5f), bias = c.node.attr_float("bias", 0.0f);
  visit_dtype(c.in(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      throw Error("Shrink on bool is not supported");
    } else {
      map_unary<T, T>(c.in(0), c.out(0), [=](T v) {
        const double d = double(v);
        return T(d < -lambd ? d + bias : d > lambd ? d - bias : 0.0);
      });
    }
  });
}

// ---- PRelu: the slope broadcasts to X (unidirectionally) ------------------------------------
std::vector<ValueInfo> infer_prelu(const ShapeContext& c) {
  const ValueInfo &x = c.in(0), &s = c.in(1);
  if (x.dtype != s.dtype) throw Error("X and slope types differ: " + dtype_name(x.dtype) + " and " + dtype_name(s.dtype));
  if (broadcast_shapes(x.shape, s.shape) != x.shape)
    throw Error("slope " + shape_str(s.shape) + " does not broadcast to X " + shape_str(x.shape));
  return same_as_input0(c);
}

void compute_prelu(OpContext& c) {
  if (run_widened(c, compute_prelu)) return;
  visit_dtype(c.in(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) throw Error("PRelu on bool is not supported");
    else map_binary<T, T, T>(c.in(0), c.in(1), c.out(0), [](T x, T s) { return x < T(0) ? T(s * x) : x; });
  });
}

// ---- Clip: bounds are attributes before opset 11, optional scalar inputs from then on ------
std::vector<ValueInfo> infer_clip(const ShapeContext& c) {
  for (size_t i = 1; i < 3; ++i) {
    if (!c.has_input(i)) continue;
    if (c.in(i).dtype != c.in(0).dtype) throw Error("bound types differ from the input's");
    if (shape_numel(c.in(i).shape) != 1) throw Error("bounds must be scalars, got shape " + shape_str(c.in(i).shape));
  }
  return same_as_input0(c);
}

void compute_clip(OpContext& c) {
  if (run_widened(c, compute_clip)) return;
  visit_dtype(c.in(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      throw Error("Clip on bool is not supported");
    } else {
      T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
      if (c.node.opset != 0 && c.node.opset < 11) {
        lo = T(c.node.attr_float("min", -std::numeric_limits<float>::max()));
        hi = T(c.node.attr_float("max", std::numeric_limits<float>::max()));
        if constexpr (std::is_floating_point_v<T>) {
          if (!c.node.has_attr("min")) lo = -std::numeric_limits<T>::infinity();
          if (!c.node.has_attr("max")) hi = std::numeric_limits<T>::infinity();
        }
      }
      if (c.has_input(1)) lo = c.in(1).data<T>()[0];
      if (c.has_input(2)) hi = c.in(2).data<T>()[0];
      // min(max(x, lo), hi): when lo > hi every element becomes hi, as numpy.clip does.
      map_unary<T, T>(c.in(0), c.out(0), [=](T v) { return std::min(std::max(v, lo), hi); });
    }
  });
}

}  // namespace

void register_activation_ops(OpRegistry& r) {
  for (const char* op : {"LeakyRelu", "HardSigmoid", "Elu", "Selu", "Celu", "ThresholdedRelu"})
    r.add(OpDef{"", op, infer_float_activation, compute_float_activation});
  r.add(OpDef{"", "Shrink", infer_shrink, compute_shrink});
  r.add(OpDef{"", "PRelu", infer_prelu, compute_prelu});
  r.add(OpDef{"", "Clip", infer_clip, compute_clip});
}

}  // namespace fb
