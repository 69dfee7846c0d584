// Pooling: MaxPool (with Indices, dilations, ceil_mode, storage_order), AveragePool
// (count_include_pad), LpPool, their global forms, and MaxUnpool. Kernels view every
// input as [planes, D, H, W] (1-D and 2-D pools get leading unit dims) and run planes in
// parallel; each output position walks its clipped window.
#include <cmath>
#include <cstring>
#include <limits>

#include "engine/ops/nn_common.h"

namespace fb {

namespace {

enum class PoolKind { Max, Average, Lp };

PoolKind pool_kind(const std::string& op) {
  if (op == "MaxPool" || op == "GlobalMaxPool") return PoolKind::Max;
  if (op == "AveragePool" || op == "GlobalAveragePool") return PoolKind::Average;
  return PoolKind::Lp;
}

bool is_global(const std::string& op) { return op.rfind("Global", 0) == 0; }

// The geometry in three spatial dims (leading unit dims for 1-D and 2-D pools).
struct Pool3 {
  int64_t planes;
  int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
};

WindowGeometry pool_geometry(const Node& n, const Shape& x) {
  require_rank_at_least(n, x, 3, "input X");
  if (x.size() > 5) throw Error(n.describe() + ": pooling over more than 3 spatial dimensions is not supported");
  Shape sp(x.begin() + 2, x.end());
  if (is_global(n.op_type)) {
    WindowGeometry g;
    g.in = sp;
    g.kernel = sp;
    g.out.assign(sp.size(), 1);
    g.stride.assign(sp.size(), 1);
    g.dilation.assign(sp.size(), 1);
    g.pad_begin.assign(sp.size(), 0);
    g.pad_end.assign(sp.size(), 0);
    return g;
  }
  if (!n.has_attr("kernel_shape")) throw Error(n.describe() + ": attribute 'kernel_shape' is required");
  return window_geometry(n, sp, {}, n.attr_int("ceil_mode", 0) != 0);
}

Pool3 to_pool3(const WindowGeometry& g, const Shape& x) {
  Pool3 p;
  p.planes = x[0] * x[1];
  const size_t nd = g.in.size(), off = 3 - nd;
  for (size_t i = 0; i < 3; ++i) p.in[i] = p.out[i] = p.k[i] = p.s[i] = p.d[i] = 1, p.pb[i] = p.pe[i] = 0;
  for (size_t i = 0; i < nd; ++i) {
    p.in[off + i] = g.in[i];
    p.out[off + i] = g.out[i];
    p.k[off + i] = g.kernel[i];
    p.s[off + i] = g.stride[i];
    p.d[off + i] = g.dilation[i];
    p.pb[off + i] = g.pad_begin[i];
    p.pe[off + i] = g.pad_end[i];
  }
  return p;
}

Shape pool_out_shape(const WindowGeometry& g, const Shape& x) {
  Shape out{x[0], x[1]};
  out.insert(out.end(), g.out.begin(), g.out.end());
  return out;
}

std::vector<ValueInfo> infer_pool(const ShapeContext& c) {
  const ValueInfo& x = c.in(0);
  const PoolKind kind = pool_kind(c.node.op_type);
  if (kind != PoolKind::Max || (x.dtype != DType::UInt8 && x.dtype != DType::Int8))
    require_float(c.node, x.dtype, "input X");
  if (kind == PoolKind::Lp && c.node.attr_float("p", 2.f) <= 0.f) throw Error(c.node.describe() + ": p must be positive");
  WindowGeometry g = pool_geometry(c.node, x.shape);
  Shape out = pool_out_shape(g, x.shape);
  std::vector<ValueInfo> r{ValueInfo{x.dtype, out, true}};
  if (c.node.outputs.size() > 1) {
    if (kind != PoolKind::Max || is_global(c.node.op_type)) throw Error(c.node.describe() + ": only MaxPool has a second output");
    r.push_back(ValueInfo{DType::Int64, out, true});
  }
  return r;
}

// For output position o in one dim: the first input coordinate of its window.
inline int64_t window_start(const Pool3& p, int dim, int64_t o) { return o * p.s[dim] - p.pb[dim]; }

template <typename T>
void max_pool(const Pool3& p, const T* x, T* y, int64_t* idx, bool col_major, int64_t nd) {
  const int64_t in_plane = p.in[0] * p.in[1] * p.in[2], out_plane = p.out[0] * p.out[1] * p.out[2];
  parallel_range(p.planes, out_plane * p.k[0] * p.k[1] * p.k[2], [&](int64_t b, int64_t e) {
    for (int64_t pl = b; pl < e; ++pl) {
      const T* xp = x + pl * in_plane;
      T* yp = y + pl * out_plane;
      int64_t* ip = idx ? idx + pl * out_plane : nullptr;
      for (int64_t od = 0; od < p.out[0]; ++od)
        for (int64_t oh = 0; oh < p.out[1]; ++oh)
          for (int64_t ow = 0; ow < p.out[2]; ++ow) {
            T best = std::numeric_limits<T>::lowest();
            int64_t best_at = -1;
            const int64_t d0 = window_start(p, 0, od), h0 = window_start(p, 1, oh), w0 = window_start(p, 2, ow);
            for (int64_t kd = 0; kd < p.k[0]; ++kd) {
              const int64_t id = d0 + kd * p.d[0];
              if (id < 0 || id >= p.in[0]) continue;
              for (int64_t kh = 0; kh < p.k[1]; ++kh) {
                const int64_t ih = h0 + kh * p.d[1];
                if (ih < 0 || ih >= p.in[1]) continue;
                const T* row = xp + (id * p.in[1] + ih) * p.in[2];
                for (int64_t kw = 0; kw < p.k[2]; ++kw) {
                  const int64_t iw = w0 + kw * p.d[2];
                  if (iw < 0 || iw >= p.in[2]) continue;
                  if (best_at < 0 || row[iw] > best) {
                    best = row[iw];
                    best_at = (id * p.in[1] + ih) * p.in[2] + iw;
                  }
                }
              }
            }
            const int64_t o = (od * p.out[1] + oh) * p.out[2] + ow;
            yp[o] = best;
            if (!ip) continue;
            int64_t flat = std::max<int64_t>(best_at, 0);
            if (col_major) {  // the spatial index with the first spatial dim fastest
              const int64_t iw = flat % p.in[2], ih = (flat / p.in[2]) % p.in[1], id = flat / (p.in[2] * p.in[1]);
              flat = nd == 3 ? (iw * p.in[1] + ih) * p.in[0] + id : nd == 2 ? iw * p.in[1] + ih : iw;
            }
            ip[o] = pl * in_plane + flat;
          }
    }
  });
}

// The mean of each whole plane (GlobalAveragePool, a CNN's head): float32 sums in vector
// lanes, as PyTorch's are (mobilenet_v2's 1280 x 7 x 7 took 0.097 ms through the windowed
// loop below; EfficientNet's squeeze-and-excitation pools planes of up to 112 x 112).
void plane_mean(const Pool3& p, const float* x, float* y) {
  const int64_t n = p.in[0] * p.in[1] * p.in[2];
  parallel_range(p.planes, n, [&](int64_t b, int64_t e) {
    for (int64_t pl = b; pl < e; ++pl) {
      const float* xp = x + pl * n;
      float acc = 0.f;
#pragma omp simd reduction(+ : acc)
      for (int64_t i = 0; i < n; ++i) acc += xp[i];
      y[pl] = acc / float(n);
    }
  });
}

// Average (divisor per count_include_pad) or Lp pooling.
void sum_pool(const Pool3& p, const float* x, float* y, PoolKind kind, bool include_pad, float pw) {
  const int64_t in_plane = p.in[0] * p.in[1] * p.in[2], out_plane = p.out[0] * p.out[1] * p.out[2];
  const bool whole_plane = out_plane == 1 && p.k[0] == p.in[0] && p.k[1] == p.in[1] && p.k[2] == p.in[2] &&
                           p.pb[0] == 0 && p.pb[1] == 0 && p.pb[2] == 0 && p.pe[0] == 0 && p.pe[1] == 0 && p.pe[2] == 0 &&
                           p.d[0] == 1 && p.d[1] == 1 && p.d[2] == 1;
  if (kind == PoolKind::Average && whole_plane) return plane_mean(p, x, y);
  parallel_range(p.planes, out_plane * p.k[0] * p.k[1] * p.k[2], [&](int64_t b, int64_t e) {
    for (int64_t pl = b; pl < e; ++pl) {
      const float* xp = x + pl * in_plane;
      float* yp = y + pl * out_plane;
      for (int64_t od = 0; od < p.out[0]; ++od)
        for (int64_t oh = 0; oh < p.out[1]; ++oh)
          for (int64_t ow = 0; ow < p.out[2]; ++ow) {
            const int64_t st[3] = {window_start(p, 0, od), window_start(p, 1, oh), window_start(p, 2, ow)};
            double acc = 0;
            int64_t count = 0, padded_count = 1;
            for (int dim = 0; dim < 3; ++dim) {
              // Window positions inside the padded input (what count_include_pad counts).
              int64_t in_pad = 0;
              for (int64_t k = 0; k < p.k[dim]; ++k) {
                const int64_t i = st[dim] + k * p.d[dim];
                in_pad += i >= -p.pb[dim] && i < p.in[dim] + p.pe[dim];
              }
              padded_count *= in_pad;
            }
            for (int64_t kd = 0; kd < p.k[0]; ++kd) {
              const int64_t id = st[0] + kd * p.d[0];
              if (id < 0 || id >= p.in[0]) continue;
              for (int64_t kh = 0; kh < p.k[1]; ++kh) {
                const int64_t ih = st[1] + kh * p.d[1];
                if (ih < 0 || ih >= p.in[1]) continue;
                const float* row = xp + (id * p.in[1] + ih) * p.in[2];
                for (int64_t kw = 0; kw < p.k[2]; ++kw) {
                  const int64_t iw = st[2] + kw * p.d[2];
                  if (iw < 0 || iw >= p.in[2]) continue;
                  const float v = row[iw];
                  if (kind == PoolKind::Lp) acc += pw == 2.f ? double(v) * v : std::pow(std::fabs(double(v)), double(pw));
                  else acc += v;
                  ++count;
                }
              }
            }
            const int64_t o = (od * p.out[1] + oh) * p.out[2] + ow;
            if (kind == PoolKind::Lp) yp[o] = float(pw == 2.f ? std::sqrt(acc) : std::pow(acc, 1.0 / pw));
            else {
              const int64_t div = include_pad ? padded_count : count;
              yp[o] = div ? float(acc / double(div)) : 0.f;
            }
          }
    }
  });
}

void compute_pool(OpContext& c) {
  const Tensor& x = c.in(0);
  WindowGeometry g = pool_geometry(c.node, x.shape());
  Pool3 p = to_pool3(g, x.shape());
  const PoolKind kind = pool_kind(c.node.op_type);
  Tensor& y = c.out(0);
  if (kind == PoolKind::Max) {
    int64_t* idx = c.outputs.size() > 1 && c.outputs[1] ? c.out(1).data<int64_t>() : nullptr;
    const bool col = c.node.attr_int("storage_order", 0) != 0;
    const int64_t nd = int64_t(g.in.size());
    switch (x.dtype()) {
      case DType::Float32: return max_pool(p, x.data<float>(), y.data<float>(), idx, col, nd);
      case DType::UInt8: return max_pool(p, x.data<uint8_t>(), y.data<uint8_t>(), idx, col, nd);
      case DType::Int8: return max_pool(p, x.data<int8_t>(), y.data<int8_t>(), idx, col, nd);
      default: throw Error("input type " + dtype_name(x.dtype()) + " is not supported");
    }
  }
  const float pw = kind == PoolKind::Lp ? c.node.attr_float("p", 2.f) : 1.f;
  sum_pool(p, x.data<float>(), y.data<float>(), kind, c.node.attr_int("count_include_pad", 0) != 0, pw);
}

// ---- MaxUnpool(X, I, output_shape?) ---------------------------------------------------------
// The shape the attributes give (what the indices were computed against).
Shape unpool_default_shape(const Node& node, const Shape& x) {
  require_rank_at_least(node, x, 3, "input X");
  const size_t nd = x.size() - 2;
  if (!node.has_attr("kernel_shape")) throw Error(node.describe() + ": attribute 'kernel_shape' is required");
  std::vector<int64_t> k = spatial_attr(node, "kernel_shape", nd, 1), s = spatial_attr(node, "strides", nd, 1);
  std::vector<int64_t> pads = node.attr_ints("pads", std::vector<int64_t>(2 * nd, 0));
  if (pads.size() != 2 * nd) throw Error(node.describe() + ": pads must have " + std::to_string(2 * nd) + " entries");
  Shape out{x[0], x[1]};
  for (size_t d = 0; d < nd; ++d) {
    const int64_t o = (x[d + 2] - 1) * s[d] + k[d] - pads[d] - pads[d + nd];
    if (o < 0) throw Error(node.describe() + ": the output would have a negative size");
    out.push_back(o);
  }
  return out;
}

Shape unpool_shape(const ShapeContext& c) {
  const ValueInfo& x = c.in(0);
  require_float(c.node, x.dtype, "input X");
  if (c.in(1).shape != x.shape) throw Error(c.node.describe() + ": indices I must have the shape of X " + shape_str(x.shape));
  if (c.has_input(2)) {
    std::vector<int64_t> s = c.constant(2, "output_shape").as_int64_vector();
    if (s.size() != x.shape.size() || s[0] != x.shape[0] || s[1] != x.shape[1])
      throw Error(c.node.describe() + ": output_shape " + shape_str(s) + " does not fit X " + shape_str(x.shape));
    for (int64_t d : s)
      if (d < 0) throw Error(c.node.describe() + ": negative output_shape");
    return s;
  }
  return unpool_default_shape(c.node, x.shape);
}

std::vector<ValueInfo> infer_max_unpool(const ShapeContext& c) { return {ValueInfo{DType::Float32, unpool_shape(c), true}}; }

void compute_max_unpool(OpContext& c) {
  Tensor& y = c.out(0);
  float* out = y.data<float>();
  std::fill(out, out + y.numel(), 0.f);
  const float* x = c.in(0).data<float>();
  std::vector<int64_t> idx = c.in(1).as_int64_vector();
  // Indices are flat over the shape the attributes give (what MaxPool produced them for);
  // an explicit output_shape places each at the same coordinates in the larger output.
  const Shape from = unpool_default_shape(c.node, c.in(0).shape());
  const Shape& to = y.shape();
  const int64_t from_numel = shape_numel(from);
  const auto to_strides = shape_strides(to);
  for (int64_t i = 0; i < int64_t(idx.size()); ++i) {
    int64_t j = idx[i];
    if (j < 0 || j >= from_numel) throw Error("index " + std::to_string(j) + " is out of range for " + shape_str(from));
    int64_t off = 0;
    for (size_t d = from.size(); d-- > 0;) {
      const int64_t coord = j % from[d];
      j /= from[d];
      if (coord >= to[d]) throw Error("index " + std::to_string(idx[i]) + " falls outside the output " + shape_str(to));
      off += coord * to_strides[d];
    }
    out[off] = x[i];
  }
}

}  // namespace

void register_pool_ops(OpRegistry& r) {
  for (const char* op : {"MaxPool", "AveragePool", "LpPool", "GlobalMaxPool", "GlobalAveragePool", "GlobalLpPool"})
    r.add(OpDef{"", op, infer_pool, compute_pool});
  r.add(with_shape_inputs(OpDef{"", "MaxUnpool", infer_max_unpool, compute_max_unpool}, {2}));  // output_shape
}

}  // namespace fb
