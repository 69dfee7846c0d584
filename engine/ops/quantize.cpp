// Quantization: QuantizeLinear, DequantizeLinear (per-tensor or per-axis), DynamicQuantizeLinear,
// and the integer products MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv.
// Integer products accumulate exactly in int32/int64 with direct loops (oneDNN's int8
// paths need zero points folded differently per layout; these ops are rare in models).
#include <cmath>
#include <limits>

#include "engine/ops/matmul_spec.h"
#include "engine/ops/nn_common.h"

namespace fb {

namespace {

bool is_int8_type(DType t) { return t == DType::UInt8 || t == DType::Int8; }

// Integer contents of an 8-bit or 32-bit integer tensor, widened.
std::vector<int32_t> widen(const Tensor& t) {
  std::vector<int32_t> v(static_cast<size_t>(t.numel()));
  switch (t.dtype()) {
    case DType::UInt8: for (size_t i = 0; i < v.size(); ++i) v[i] = t.data<uint8_t>()[i]; break;
    case DType::Int8: for (size_t i = 0; i < v.size(); ++i) v[i] = t.data<int8_t>()[i]; break;
    case DType::Int32: for (size_t i = 0; i < v.size(); ++i) v[i] = t.data<int32_t>()[i]; break;
    default: throw Error("expected an 8-bit or 32-bit integer tensor, got " + dtype_name(t.dtype()));
  }
  return v;
}

// Rounds half to even (numpy's rint) and saturates to the 8-bit type.
template <typename T>
T saturate(float v) {
  const float r = std::nearbyint(v);
  return T(std::clamp(r, float(std::numeric_limits<T>::min()), float(std::numeric_limits<T>::max())));
}

void store_saturated(Tensor& y, int64_t i, float v) {
  if (y.dtype() == DType::UInt8) y.data<uint8_t>()[i] = saturate<uint8_t>(v);
  else y.data<int8_t>()[i] = saturate<int8_t>(v);
}

// Per-tensor (scalar) or per-axis (1-D) scale/zero point: the index into it for element i.
struct AxisIndex {
  int64_t len = 1, inner = 1;
  bool per_axis = false;
  int64_t operator()(int64_t i) const { return per_axis ? (i / inner) % len : 0; }
};

AxisIndex axis_index(const Node& n, const Shape& x, const Shape& scale) {
  AxisIndex a;
  if (shape_numel(scale) == 1 && scale.size() <= 1) return a;
  if (scale.size() != 1) throw Error(n.describe() + ": scale must be a scalar or 1-D, got " + shape_str(scale));
  const int64_t axis = normalize_axis(n.attr_int("axis", 1), int64_t(x.size()));
  if (scale[0] != x[axis])
    throw Error(n.describe() + ": scale " + shape_str(scale) + " does not match dimension " + std::to_string(axis) + " of " + shape_str(x));
  a.per_axis = true;
  a.len = x[axis];
  a.inner = shape_numel(Shape(x.begin() + axis + 1, x.end()));
  return a;
}

// ---- QuantizeLinear(x, y_scale, y_zero_point?) -------------------------------------------------
std::vector<ValueInfo> infer_quantize(const ShapeContext& c) {
  const ValueInfo& x = c.in(0);
  if (x.dtype != DType::Float32 && x.dtype != DType::Int32)
    throw Error(c.node.describe() + ": input type " + dtype_name(x.dtype) + " is not supported");
  require_float(c.node, c.in(1).dtype, "y_scale");
  axis_index(c.node, x.shape, c.in(1).shape);
  DType out = c.has_input(2) ? c.in(2).dtype : DType::UInt8;
  if (!is_int8_type(out)) throw Error(c.node.describe() + ": output type " + dtype_name(out) + " is not supported");
  if (c.has_input(2) && shape_numel(c.in(2).shape) != shape_numel(c.in(1).shape))
    throw Error(c.node.describe() + ": y_zero_point must have the shape of y_scale");
  return {ValueInfo{out, x.shape, true}};
}

void compute_quantize(OpContext& c) {
  const Tensor& x = c.in(0);
  const float* scale = c.in(1).data<float>();
  std::vector<int32_t> zp = c.has_input(2) ? widen(c.in(2)) : std::vector<int32_t>(size_t(c.in(1).numel()), 0);
  AxisIndex ax = axis_index(c.node, x.shape(), c.in(1).shape());
  Tensor& y = c.out(0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float v = x.dtype() == DType::Float32 ? x.data<float>()[i] : float(x.data<int32_t>()[i]);
    const int64_t k = ax(i);
    store_saturated(y, i, std::nearbyint(v / scale[k]) + float(zp[k]));
  }
}

// ---- DequantizeLinear(x, x_scale, x_zero_point?) ------------------------------------------------
std::vector<ValueInfo> infer_dequantize(const ShapeContext& c) {
  const ValueInfo& x = c.in(0);
  if (!is_int8_type(x.dtype) && x.dtype != DType::Int32)
    throw Error(c.node.describe() + ": input type " + dtype_name(x.dtype) + " is not supported");
  require_float(c.node, c.in(1).dtype, "x_scale");
  axis_index(c.node, x.shape, c.in(1).shape);
  if (c.has_input(2) && shape_numel(c.in(2).shape) != shape_numel(c.in(1).shape))
    throw Error(c.node.describe() + ": x_zero_point must have the shape of x_scale");
  return {ValueInfo{DType::Float32, x.shape, true}};
}

void compute_dequantize(OpContext& c) {
  const Tensor& x = c.in(0);
  std::vector<int32_t> xv = widen(x);
  const float* scale = c.in(1).data<float>();
  std::vector<int32_t> zp = c.has_input(2) ? widen(c.in(2)) : std::vector<int32_t>(size_t(c.in(1).numel()), 0);
  AxisIndex ax = axis_index(c.node, x.shape(), c.in(1).shape());
  float* y = c.out(0).data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) y[i] = float(xv[i] - zp[ax(i)]) * scale[ax(i)];
}

// ---- DynamicQuantizeLinear(x) -> y (uint8), y_scale, y_zero_point -----------------------------
std::vector<ValueInfo> infer_dynamic_quantize(const ShapeContext& c) {
  require_float(c.node, c.in(0).dtype, "input x");
  return {ValueInfo{DType::UInt8, c.in(0).shape, true}, ValueInfo{DType::Float32, {}, true}, ValueInfo{DType::UInt8, {}, true}};
}

void compute_dynamic_quantize(OpContext& c) {
  const Tensor& x = c.in(0);
  const float* in = x.data<float>();
  float lo = 0.f, hi = 0.f;  // the range always includes 0
  for (int64_t i = 0; i < x.numel(); ++i) lo = std::min(lo, in[i]), hi = std::max(hi, in[i]);
  const float scale = (hi - lo) / 255.f;
  const uint8_t zp = scale == 0.f ? 0 : saturate<uint8_t>(0.f - lo / scale);
  uint8_t* y = c.out(0).data<uint8_t>();
  for (int64_t i = 0; i < x.numel(); ++i) y[i] = scale == 0.f ? zp : saturate<uint8_t>(std::nearbyint(in[i] / scale) + float(zp));
  if (c.outputs.size() > 1 && c.outputs[1]) c.out(1).data<float>()[0] = scale;
  if (c.outputs.size() > 2 && c.outputs[2]) c.out(2).data<uint8_t>()[0] = zp;
}

// ---- Integer matrix products ------------------------------------------------------------------
// acc[b, m, n] = sum_k (A[b, m, k] - azp[m]) * (B[b, k, n] - bzp[n]) with numpy batch broadcasting;
// a zero point is a scalar or per row (A) / per column (B).
std::vector<int32_t> int_matmul(const Tensor& a, const Tensor& b, const Tensor* azp_t, const Tensor* bzp_t, const Shape& out) {
  Shape as = a.shape(), bs = b.shape();
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  std::vector<int32_t> av = widen(a), bv = widen(b);
  std::vector<int32_t> azp = azp_t ? widen(*azp_t) : std::vector<int32_t>{0};
  std::vector<int32_t> bzp = bzp_t ? widen(*bzp_t) : std::vector<int32_t>{0};
  if ((azp.size() != 1 && int64_t(azp.size()) != m) || (bzp.size() != 1 && int64_t(bzp.size()) != n))
    throw Error("zero points must be scalars, per row of A or per column of B");
  const int64_t batches = (m * n != 0) ? shape_numel(out) / (m * n) : 0;
  const Shape batch_shape(out.begin(), out.end() - std::min<size_t>(out.size(), 2));
  Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  while (ab.size() < batch_shape.size()) ab.insert(ab.begin(), 1);
  while (bb.size() < batch_shape.size()) bb.insert(bb.begin(), 1);
  const auto as_str = shape_strides(ab), bs_str = shape_strides(bb);
  std::vector<int32_t> acc(size_t(batches * m * n), 0);
  for (int64_t bi = 0; bi < batches; ++bi) {
    int64_t rem = bi, ao = 0, bo = 0;
    for (size_t d = batch_shape.size(); d-- > 0;) {
      const int64_t idx = rem % batch_shape[d];
      rem /= batch_shape[d];
      ao += (ab[d] == 1 ? 0 : idx) * as_str[d];
      bo += (bb[d] == 1 ? 0 : idx) * bs_str[d];
    }
    const int32_t* pa = av.data() + ao * m * k;
    const int32_t* pb = bv.data() + bo * k * n;
    int32_t* pc = acc.data() + bi * m * n;
    for (int64_t i = 0; i < m; ++i) {
      const int32_t za = azp.size() == 1 ? azp[0] : azp[i];
      for (int64_t kk = 0; kk < k; ++kk) {
        const int32_t va = pa[i * k + kk] - za;
        for (int64_t j = 0; j < n; ++j) pc[i * n + j] += va * (pb[kk * n + j] - (bzp.size() == 1 ? bzp[0] : bzp[j]));
      }
    }
  }
  return acc;
}

Shape int_matmul_shape(const Node& node, const ValueInfo& a, const ValueInfo& b) {
  if (!is_int8_type(a.dtype) || !is_int8_type(b.dtype))
    throw Error(node.describe() + ": input types " + dtype_name(a.dtype) + " and " + dtype_name(b.dtype) + " are not supported (8-bit)");
  return matmul_output_shape(a.shape, b.shape);
}

std::vector<ValueInfo> infer_matmul_integer(const ShapeContext& c) {
  return {ValueInfo{DType::Int32, int_matmul_shape(c.node, c.in(0), c.in(1)), true}};
}

void compute_matmul_integer(OpContext& c) {
  std::vector<int32_t> acc = int_matmul(c.in(0), c.in(1), c.has_input(2) ? &c.in(2) : nullptr, c.has_input(3) ? &c.in(3) : nullptr,
                                        c.out(0).shape());
  std::copy(acc.begin(), acc.end(), c.out(0).data<int32_t>());
}

// QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp)
std::vector<ValueInfo> infer_qlinear_matmul(const ShapeContext& c) {
  Shape out = int_matmul_shape(c.node, c.in(0), c.in(3));
  for (size_t i : {1, 4, 6})
    if (shape_numel(c.in(i).shape) != 1) throw Error(c.node.describe() + ": per-channel scales are not supported in QLinearMatMul");
  return {ValueInfo{c.in(7).dtype, out, true}};
}

void compute_qlinear_matmul(OpContext& c) {
  std::vector<int32_t> acc = int_matmul(c.in(0), c.in(3), &c.in(2), &c.in(5), c.out(0).shape());
  const float mult = float(c.in(1).scalar_as_double() * c.in(4).scalar_as_double() / c.in(6).scalar_as_double());
  const float zp = float(widen(c.in(7))[0]);
  Tensor& y = c.out(0);
  for (size_t i = 0; i < acc.size(); ++i) store_saturated(y, int64_t(i), std::nearbyint(float(acc[i]) * mult) + zp);
}

// ---- Integer convolution ---------------------------------------------------------------------
struct IntConvShape {
  int64_t n, c, m, group;
  WindowGeometry g;
  Shape out;
};

IntConvShape int_conv_shape(const Node& node, const ValueInfo& x, const ValueInfo& w) {
  if (!is_int8_type(x.dtype) || !is_int8_type(w.dtype))
    throw Error(node.describe() + ": input types " + dtype_name(x.dtype) + " and " + dtype_name(w.dtype) + " are not supported (8-bit)");
  require_rank_at_least(node, x.shape, 3, "input x");
  if (w.shape.size() != x.shape.size()) throw Error(node.describe() + ": weights must have the rank of the input");
  IntConvShape s{x.shape[0], x.shape[1], w.shape[0], node.attr_int("group", 1), {}, {}};
  if (s.group <= 0 || s.c % s.group || s.m % s.group || w.shape[1] * s.group != s.c)
    throw Error(node.describe() + ": group " + std::to_string(s.group) + " does not fit input " + shape_str(x.shape) +
                " and weights " + shape_str(w.shape));
  s.g = window_geometry(node, Shape(x.shape.begin() + 2, x.shape.end()), Shape(w.shape.begin() + 2, w.shape.end()), false);
  s.out = {s.n, s.m};
  s.out.insert(s.out.end(), s.g.out.begin(), s.g.out.end());
  return s;
}

// acc[n, m, out...] = sum (x - xzp) * (w[m] - wzp[m]) over the window; padding is the zero point (contributes 0).
std::vector<int32_t> int_conv(const IntConvShape& s, const Tensor& x, const Tensor& w, int32_t xzp, const std::vector<int32_t>& wzp) {
  std::vector<int32_t> xv = widen(x), wv = widen(w);
  const size_t nd = s.g.in.size();
  const int64_t cg = s.c / s.group, mg = s.m / s.group;
  const int64_t in_sp = shape_numel(s.g.in), out_sp = shape_numel(s.g.out), k_sp = shape_numel(s.g.kernel);
  const auto in_str = shape_strides(s.g.in), k_str = shape_strides(s.g.kernel), out_str = shape_strides(s.g.out);
  std::vector<int32_t> acc(size_t(s.n * s.m * out_sp), 0);
  for (int64_t b = 0; b < s.n; ++b)
    for (int64_t m = 0; m < s.m; ++m) {
      const int64_t grp = m / mg;
      const int32_t wz = wzp.size() == 1 ? wzp[0] : wzp[m];
      for (int64_t o = 0; o < out_sp; ++o) {
        int32_t sum = 0;
        for (int64_t ci = 0; ci < cg; ++ci) {
          const int64_t ch = grp * cg + ci;
          for (int64_t kk = 0; kk < k_sp; ++kk) {
            int64_t off = 0;
            bool inside = true;
            for (size_t d = 0; d < nd; ++d) {
              const int64_t od = (o / out_str[d]) % s.g.out[d], kd = (kk / k_str[d]) % s.g.kernel[d];
              const int64_t id = od * s.g.stride[d] - s.g.pad_begin[d] + kd * s.g.dilation[d];
              if (id < 0 || id >= s.g.in[d]) inside = false;
              off += id * in_str[d];
            }
            if (!inside) continue;
            sum += (xv[(b * s.c + ch) * in_sp + off] - xzp) * (wv[(m * cg + ci) * k_sp + kk] - wz);
          }
        }
        acc[(b * s.m + m) * out_sp + o] = sum;
      }
    }
  return acc;
}

std::vector<int32_t> zero_points(const OpContext& c, size_t i, int64_t channels) {
  if (!c.has_input(i)) return {0};
  std::vector<int32_t> z = widen(c.in(i));
  if (z.size() != 1 && int64_t(z.size()) != channels) throw Error("zero point must be a scalar or per output channel");
  return z;
}

std::vector<ValueInfo> infer_conv_integer(const ShapeContext& c) {
  return {ValueInfo{DType::Int32, int_conv_shape(c.node, c.in(0), c.in(1)).out, true}};
}

void compute_conv_integer(OpContext& c) {
  ValueInfo xi{c.in(0).dtype(), c.in(0).shape(), true}, wi{c.in(1).dtype(), c.in(1).shape(), true};
  IntConvShape s = int_conv_shape(c.node, xi, wi);
  const int32_t xzp = c.has_input(2) ? widen(c.in(2))[0] : 0;
  std::vector<int32_t> acc = int_conv(s, c.in(0), c.in(1), xzp, zero_points(c, 3, s.m));
  std::copy(acc.begin(), acc.end(), c.out(0).data<int32_t>());
}

// QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B?)
std::vector<ValueInfo> infer_qlinear_conv(const ShapeContext& c) {
  IntConvShape s = int_conv_shape(c.node, c.in(0), c.in(3));
  const int64_t ws = shape_numel(c.in(4).shape);
  if (ws != 1 && ws != s.m) throw Error(c.node.describe() + ": w_scale must be a scalar or per output channel");
  return {ValueInfo{c.in(7).dtype, s.out, true}};
}

void compute_qlinear_conv(OpContext& c) {
  ValueInfo xi{c.in(0).dtype(), c.in(0).shape(), true}, wi{c.in(3).dtype(), c.in(3).shape(), true};
  IntConvShape s = int_conv_shape(c.node, xi, wi);
  std::vector<int32_t> acc = int_conv(s, c.in(0), c.in(3), widen(c.in(2))[0], zero_points(c, 5, s.m));
  const float xs = float(c.in(1).scalar_as_double()), ys = float(c.in(6).scalar_as_double());
  const float* ws = c.in(4).data<float>();
  const bool per_ch = c.in(4).numel() != 1;
  const float yzp = float(widen(c.in(7))[0]);
  std::vector<int32_t> bias = c.has_input(8) ? widen(c.in(8)) : std::vector<int32_t>(size_t(s.m), 0);
  if (int64_t(bias.size()) != s.m) throw Error("bias must have one entry per output channel");
  const int64_t out_sp = shape_numel(s.g.out);
  Tensor& y = c.out(0);
  for (int64_t i = 0; i < int64_t(acc.size()); ++i) {
    const int64_t m = (i / out_sp) % s.m;
    const float scale = xs * ws[per_ch ? m : 0] / ys;
    store_saturated(y, i, std::nearbyint(float(acc[i] + bias[m]) * scale) + yzp);
  }
}

}  // namespace

void register_quantize_ops(OpRegistry& r) {
  r.add(OpDef{"", "QuantizeLinear", infer_quantize, compute_quantize});
  r.add(OpDef{"", "DequantizeLinear", infer_dequantize, compute_dequantize});
  r.add(OpDef{"", "DynamicQuantizeLinear", infer_dynamic_quantize, compute_dynamic_quantize});
  r.add(OpDef{"", "MatMulInteger", infer_matmul_integer, compute_matmul_integer});
  r.add(OpDef{"", "QLinearMatMul", infer_qlinear_matmul, compute_qlinear_matmul});
  r.add(OpDef{"", "ConvInteger", infer_conv_integer, compute_conv_integer});
  r.add(OpDef{"", "QLinearConv", infer_qlinear_conv, compute_qlinear_conv});
}

}  // namespace fb
