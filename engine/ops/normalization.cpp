// Normalizations: BatchNormalization (inference form), InstanceNormalization,
// LayerNormalization (with its Mean and InvStdDev outputs), LRN, MeanVarianceNormalization
// and LpNormalization. Statistics accumulate in double so long rows stay accurate.
#include <algorithm>
#include <cmath>

#include "engine/ops/group_norm.h"
#include "engine/ops/nn_common.h"

namespace fb {

namespace {

void require_vector(const Node& n, const ValueInfo& v, int64_t len, const char* what) {
  if (shape_numel(v.shape) != len || v.shape.size() > 1)
    throw Error(n.describe() + ": " + what + " " + shape_str(v.shape) + " must be [" + std::to_string(len) + "]");
  require_float(n, v.dtype, what);
}

// ---- BatchNormalization(X, scale, B, mean, var) ---------------------------------------------
std::vector<ValueInfo> infer_batch_norm(const ShapeContext& c) {
  const Node& n = c.node;
  if (n.attr_int("training_mode", 0) != 0)
    throw Error(n.describe() + ": training_mode=1 is unsupported (inference only)");
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (!n.outputs[i].empty()) throw Error(n.describe() + ": the running-statistics outputs (training) are unsupported");
  const ValueInfo& x = c.in(0);
  require_float(n, x.dtype, "input X");
  require_rank_at_least(n, x.shape, 2, "input X");
  const int64_t ch = x.shape[1];
  const char* names[] = {"scale", "B", "mean", "var"};
  for (size_t i = 1; i <= 4; ++i) require_vector(n, c.in(i), ch, names[i - 1]);
  return {ValueInfo{DType::Float32, x.shape, true}};
}

void compute_batch_norm(OpContext& c) {
  const Tensor& x = c.in(0);
  const int64_t batch = x.shape()[0], ch = x.shape()[1], inner = ch ? x.numel() / (batch * ch) : 0;
  const float eps = c.node.attr_float("epsilon", 1e-5f);
  const float *scale = c.in(1).data<float>(), *bias = c.in(2).data<float>(), *mean = c.in(3).data<float>(),
              *var = c.in(4).data<float>();
  std::vector<float> a(ch), b(ch);
  for (int64_t k = 0; k < ch; ++k) {
    a[k] = scale[k] / std::sqrt(var[k] + eps);
    b[k] = bias[k] - mean[k] * a[k];
  }
  const float* in = x.data<float>();
  float* out = c.out(0).data<float>();
  parallel_range(batch * ch, inner, [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      const float ak = a[p % ch], bk = b[p % ch];
      const float* xi = in + p * inner;
      float* yo = out + p * inner;
      for (int64_t i = 0; i < inner; ++i) yo[i] = xi[i] * ak + bk;
    }
  });
}

// ---- InstanceNormalization(input, scale, B) --------------------------------------------------
std::vector<ValueInfo> infer_instance_norm(const ShapeContext& c) {
  const ValueInfo& x = c.in(0);
  require_float(c.node, x.dtype, "input");
  require_rank_at_least(c.node, x.shape, 3, "input");
  require_vector(c.node, c.in(1), x.shape[1], "scale");
  require_vector(c.node, c.in(2), x.shape[1], "B");
  return {ValueInfo{DType::Float32, x.shape, true}};
}

// Normalizes `rows` rows of `len` elements: y = (x - mean) / sqrt(var + eps) * scale[j] + bias[j]
// (LayerNormalization over any axes). Mean and inverse std-dev are written when asked for.
void normalize_rows(const float* x, float* y, int64_t rows, int64_t len, float eps, const float* scale,
                    const float* bias, float* mean_out, float* inv_out) {
  parallel_range(rows, len * 3, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float* xi = x + r * len;
      float* yo = y + r * len;
      double sum = 0, sq = 0;
      for (int64_t i = 0; i < len; ++i) sum += xi[i];
      const double mean = len ? sum / double(len) : 0;
      for (int64_t i = 0; i < len; ++i) sq += (xi[i] - mean) * (xi[i] - mean);
      const double var = len ? sq / double(len) : 0;
      const float inv = float(1.0 / std::sqrt(var + double(eps)));
      if (mean_out) mean_out[r] = float(mean);
      if (inv_out) inv_out[r] = inv;
      const float m = float(mean);
      for (int64_t i = 0; i < len; ++i) yo[i] = (xi[i] - m) * inv * scale[i] + (bias ? bias[i] : 0.f);
    }
  });
}

// One group per channel: the group-norm kernel's float lanes, not normalize_rows' scalar
// double loop (a diffusion ResBlock's GroupNorm, exported as InstanceNormalization over
// [N, G, -1], ran at 5 GB/s).
void compute_instance_norm(OpContext& c) {
  const Tensor& x = c.in(0);
  GroupNormArgs a;
  a.batch = x.shape()[0];
  a.channels = a.groups = x.shape()[1];
  a.inner = (a.batch * a.channels) != 0 ? x.numel() / (a.batch * a.channels) : 0;
  a.epsilon = c.node.attr_float("epsilon", 1e-5f);
  a.group_scale = c.in(1).data<float>();
  a.group_bias = c.in(2).data<float>();
  group_norm(x.data<float>(), c.out(0).data<float>(), a);
}

// ---- LayerNormalization(X, Scale, B?) -> Y, Mean?, InvStdDev? --------------------------------
std::vector<ValueInfo> infer_layer_norm(const ShapeContext& c) {
  const ValueInfo& x = c.in(0);
  require_float(c.node, x.dtype, "input X");
  const int64_t rank = int64_t(x.shape.size());
  const int64_t axis = normalize_axis(c.node.attr_int("axis", -1), rank);
  const int64_t len = shape_numel(Shape(x.shape.begin() + axis, x.shape.end()));
  const int64_t sn = shape_numel(c.in(1).shape);
  require_float(c.node, c.in(1).dtype, "Scale");
  if (sn != len && sn != 1)
    throw Error(c.node.describe() + ": Scale " + shape_str(c.in(1).shape) + " does not fit the normalized shape " +
                shape_str(Shape(x.shape.begin() + axis, x.shape.end())));
  if (c.has_input(2) && shape_numel(c.in(2).shape) != len && shape_numel(c.in(2).shape) != 1)
    throw Error(c.node.describe() + ": B " + shape_str(c.in(2).shape) + " does not fit the normalized shape");
  std::vector<ValueInfo> r{ValueInfo{DType::Float32, x.shape, true}};
  Shape stat(x.shape.begin(), x.shape.begin() + axis);
  stat.resize(size_t(rank), 1);
  for (size_t i = 1; i < c.node.outputs.size() && i < 3; ++i) r.push_back(ValueInfo{DType::Float32, stat, true});
  return r;
}

void compute_layer_norm(OpContext& c) {
  const Tensor& x = c.in(0);
  const int64_t axis = normalize_axis(c.node.attr_int("axis", -1), x.rank());
  const int64_t len = shape_numel(Shape(x.shape().begin() + axis, x.shape().end()));
  const int64_t rows = len ? x.numel() / len : 0;
  // One-element Scale or B is broadcast to the row.
  auto full = [&](size_t i, std::vector<float>& buf) -> const float* {
    if (!c.has_input(i)) return nullptr;
    if (c.in(i).numel() == len) return c.in(i).data<float>();
    buf.assign(size_t(len), c.in(i).data<float>()[0]);
    return buf.data();
  };
  std::vector<float> sbuf, bbuf;
  const float* scale = full(1, sbuf);
  const float* bias = full(2, bbuf);
  float* mean = c.outputs.size() > 1 && c.outputs[1] ? c.out(1).data<float>() : nullptr;
  float* inv = c.outputs.size() > 2 && c.outputs[2] ? c.out(2).data<float>() : nullptr;
  normalize_rows(x.data<float>(), c.out(0).data<float>(), rows, len, c.node.attr_float("epsilon", 1e-5f), scale, bias, mean, inv);
}

// ---- LRN: across channels ------------------------------------------------------------------
std::vector<ValueInfo> infer_lrn(const ShapeContext& c) {
  const ValueInfo& x = c.in(0);
  require_float(c.node, x.dtype, "input X");
  require_rank_at_least(c.node, x.shape, 3, "input X");
  if (c.node.attr_int("size", 0) <= 0) throw Error(c.node.describe() + ": attribute 'size' must be positive");
  return {ValueInfo{DType::Float32, x.shape, true}};
}

void compute_lrn(OpContext& c) {
  const Tensor& x = c.in(0);
  const int64_t n = x.shape()[0], ch = x.shape()[1], inner = (n * ch != 0) ? x.numel() / (n * ch) : 0;
  const int64_t size = c.node.attr_int("size", 1);
  const float alpha = c.node.attr_float("alpha", 1e-4f), beta = c.node.attr_float("beta", 0.75f),
              bias = c.node.attr_float("bias", 1.f);
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  const float* in = x.data<float>();
  float* out = c.out(0).data<float>();
  parallel_range(n * ch, inner * size, [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      const int64_t b = p / ch, k = p % ch;
      const int64_t c0 = std::max<int64_t>(0, k - before), c1 = std::min<int64_t>(ch - 1, k + after);
      for (int64_t i = 0; i < inner; ++i) {
        double sq = 0;
        for (int64_t j = c0; j <= c1; ++j) {
          const float v = in[(b * ch + j) * inner + i];
          sq += double(v) * v;
        }
        out[p * inner + i] = float(in[p * inner + i] / std::pow(bias + alpha / float(size) * sq, double(beta)));
      }
    }
  });
}

// ---- MeanVarianceNormalization (axes, default [0, 2, 3]) --------------------------------------
std::vector<int64_t> mvn_axes(const Node& n, int64_t rank) {
  std::vector<int64_t> axes = n.attr_ints("axes", {0, 2, 3});
  for (int64_t& a : axes) a = normalize_axis(a, rank);
  return axes;
}

std::vector<ValueInfo> infer_mvn(const ShapeContext& c) {
  require_float(c.node, c.in(0).dtype, "input X");
  mvn_axes(c.node, int64_t(c.in(0).shape.size()));
  return {ValueInfo{DType::Float32, c.in(0).shape, true}};
}

void compute_mvn(OpContext& c) {
  const Tensor& x = c.in(0);
  const Shape& s = x.shape();
  const int64_t rank = x.rank();
  std::vector<int64_t> axes = mvn_axes(c.node, rank);
  std::vector<bool> reduced(size_t(rank), false);
  for (int64_t a : axes) reduced[a] = true;
  // Each element's statistics slot: its index over the kept dims.
  std::vector<int64_t> slot_stride(size_t(rank), 0);
  int64_t slots = 1;
  for (int64_t d = rank; d-- > 0;)
    if (!reduced[d]) slot_stride[d] = slots, slots *= s[d];
  const int64_t total = x.numel(), count = slots ? total / slots : 0;
  std::vector<int64_t> slot_of(static_cast<size_t>(total));
  std::vector<int64_t> idx(size_t(rank), 0);
  for (int64_t i = 0; i < total; ++i) {
    int64_t sl = 0;
    for (int64_t d = 0; d < rank; ++d) sl += idx[d] * slot_stride[d];
    slot_of[i] = sl;
    for (int64_t d = rank; d-- > 0;) {
      if (++idx[d] < s[d]) break;
      idx[d] = 0;
    }
  }
  std::vector<double> sum(size_t(slots), 0), sq(size_t(slots), 0);
  const float* in = x.data<float>();
  for (int64_t i = 0; i < total; ++i) sum[slot_of[i]] += in[i], sq[slot_of[i]] += double(in[i]) * in[i];
  float* out = c.out(0).data<float>();
  // As ONNX's function body: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9).
  for (int64_t i = 0; i < total; ++i) {
    const double m = sum[slot_of[i]] / double(count), var = sq[slot_of[i]] / double(count) - m * m;
    out[i] = float((in[i] - m) / (std::sqrt(std::max(var, 0.0)) + 1e-9));
  }
}

// ---- LpNormalization (axis, p in {1, 2}) -----------------------------------------------------
std::vector<ValueInfo> infer_lp_norm(const ShapeContext& c) {
  require_float(c.node, c.in(0).dtype, "input");
  normalize_axis(c.node.attr_int("axis", -1), int64_t(c.in(0).shape.size()));
  const int64_t p = c.node.attr_int("p", 2);
  if (p != 1 && p != 2) throw Error(c.node.describe() + ": p=" + std::to_string(p) + " is unsupported (1 or 2)");
  return {ValueInfo{DType::Float32, c.in(0).shape, true}};
}

void compute_lp_norm(OpContext& c) {
  const Tensor& x = c.in(0);
  const int64_t axis = normalize_axis(c.node.attr_int("axis", -1), x.rank());
  const int64_t p = c.node.attr_int("p", 2);
  const int64_t len = x.shape()[axis], inner = shape_numel(Shape(x.shape().begin() + axis + 1, x.shape().end()));
  const int64_t outer = (len * inner != 0) ? x.numel() / (len * inner) : 0;
  const float* in = x.data<float>();
  float* out = c.out(0).data<float>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const float* xi = in + o * len * inner + i;
      double norm = 0;
      for (int64_t j = 0; j < len; ++j) norm += p == 1 ? std::fabs(xi[j * inner]) : double(xi[j * inner]) * xi[j * inner];
      if (p == 2) norm = std::sqrt(norm);
      for (int64_t j = 0; j < len; ++j) out[o * len * inner + i + j * inner] = norm == 0 ? 0.f : float(xi[j * inner] / norm);
    }
}

}  // namespace

void register_normalization_ops(OpRegistry& r) {
  r.add(OpDef{"", "BatchNormalization", infer_batch_norm, compute_batch_norm});
  // group_norm and normalize_rows read a whole row before writing it: safe in place.
  r.add(OpDef{"", "InstanceNormalization", infer_instance_norm, compute_instance_norm, false, false, /*in_place=*/true});
  r.add(OpDef{"", "LayerNormalization", infer_layer_norm, compute_layer_norm, false, false, /*in_place=*/true});
  r.add(OpDef{"", "LRN", infer_lrn, compute_lrn});
  r.add(OpDef{"", "MeanVarianceNormalization", infer_mvn, compute_mvn});
  r.add(OpDef{"", "LpNormalization", infer_lp_norm, compute_lp_norm});
}

}  // namespace fb
