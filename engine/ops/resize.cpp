// Resize (opset 10 to 17: nearest with every nearest_mode, linear and cubic, every
// coordinate_transformation_mode, tf_crop_and_resize's roi and extrapolation) and the
// older Upsample. Each dimension gets a list of input taps and weights per output index;
// an output element is the weighted sum over the product of its dimensions' taps. Two
// common cases skip the general walk: nearest (every output element copies one input
// element; a repeated source row is one memcpy) and linear or cubic over the last two
// dimensions of a float tensor (rows resized first, then mixed a whole row at a time).
#include "engine/ops/resize.h"

#include <cmath>
#include <cstring>

#include "engine/ops/nn_common.h"

namespace fb {

namespace {

struct ResizeInputs {
  const Tensor* roi = nullptr;
  const Tensor* scales = nullptr;
  const Tensor* sizes = nullptr;
};

bool is_upsample(const Node& n) { return n.op_type == "Upsample"; }
// Upsample and opset-10 Resize: (X, scales), asymmetric coordinates, floor for nearest.
bool legacy(const Node& n) { return is_upsample(n) || (n.opset != 0 && n.opset < 11); }

struct ResizePlan {
  Shape out;
  std::vector<float> scale;  // per dim, output / input
};

template <typename GetT>
ResizePlan resize_plan(const Node& n, const Shape& in, GetT get) {
  ResizePlan p;
  const size_t rank = in.size();
  const Tensor* scales = nullptr;
  const Tensor* sizes = nullptr;
  if (legacy(n)) {
    if (is_upsample(n) && n.has_attr("scales")) {
      std::vector<float> s = n.attr_floats("scales");
      if (s.size() != rank) throw Error(n.describe() + ": scales must have one entry per dimension");
      p.scale = s;
    } else {
      scales = get(1, "scales");
    }
  } else {
    scales = get(2, "scales");
    sizes = get(3, "sizes");
    if (scales && scales->numel() == 0) scales = nullptr;
    if (sizes && sizes->numel() == 0) sizes = nullptr;
    if (!scales && !sizes) throw Error(n.describe() + ": one of scales and sizes is required");
    if (scales && sizes) throw Error(n.describe() + ": only one of scales and sizes may be given");
  }
  if (scales) {
    if (scales->dtype() != DType::Float32 || size_t(scales->numel()) != rank)
      throw Error(n.describe() + ": scales must be float32 with " + std::to_string(rank) + " entries");
    p.scale.assign(scales->data<float>(), scales->data<float>() + rank);
  }
  if (sizes) {
    std::vector<int64_t> s = sizes->as_int64_vector();
    if (s.size() != rank) throw Error(n.describe() + ": sizes must have " + std::to_string(rank) + " entries");
    p.out = s;
    for (size_t d = 0; d < rank; ++d) {
      if (s[d] < 0) throw Error(n.describe() + ": negative sizes");
      p.scale.push_back(in[d] ? float(s[d]) / float(in[d]) : 1.f);
    }
    return p;
  }
  for (size_t d = 0; d < rank; ++d) {
    if (!(p.scale[d] > 0.f) || !std::isfinite(p.scale[d])) throw Error(n.describe() + ": scales must be positive");
    const double o = std::floor(double(in[d]) * double(p.scale[d]));
    if (o > double(int64_t(1) << 40)) throw Error(n.describe() + ": the output would be too large");
    p.out.push_back(int64_t(o));
  }
  return p;
}

std::vector<ValueInfo> infer_resize(const ShapeContext& c) {
  const Node& n = c.node;
  const ValueInfo& x = c.in(0);
  const std::string mode = n.attr_string("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic" && !(legacy(n) && mode == "bilinear"))
    throw Error(n.describe() + ": unsupported mode '" + mode + "'");
  if (mode != "nearest") require_float(n, x.dtype, "input X");
  if (dtype_size(x.dtype) == 0) throw Error(n.describe() + ": input type " + dtype_name(x.dtype) + " is not supported");
  ResizePlan p = resize_plan(n, x.shape, [&](size_t i, const char* what) -> const Tensor* {
    return c.has_input(i) ? &c.constant(i, what) : nullptr;
  });
  return {ValueInfo{x.dtype, p.out, true}};
}

using Taps = ResizeTaps;

float nearest_round(const std::string& m, float x) {
  if (m == "floor") return std::floor(x);
  if (m == "ceil") return std::ceil(x);
  const float fl = std::floor(x);
  if (x - fl == 0.5f) return m == "round_prefer_ceil" ? fl + 1 : fl;
  return std::round(x);
}

Taps taps_for(const Node& n, int64_t in_len, int64_t out_len, float scale, float roi_start, float roi_end) {
  const bool old = legacy(n);
  std::string coord = old ? "asymmetric" : n.attr_string("coordinate_transformation_mode", "half_pixel");
  std::string mode = n.attr_string("mode", "nearest");
  if (mode == "bilinear") mode = "linear";
  const std::string nearest = old ? "floor" : n.attr_string("nearest_mode", "round_prefer_floor");
  const float a = n.attr_float("cubic_coeff_a", -0.75f);
  const bool exclude = n.attr_int("exclude_outside", 0) != 0;
  Taps t;
  t.start.reserve(size_t(out_len) + 1);
  // The onnx reference measures the output as in_len * scale, unrounded, in these formulas.
  const float out_f = float(in_len) * scale;
  for (int64_t o = 0; o < out_len; ++o) {
    t.start.push_back(int64_t(t.idx.size()));
    const float x = float(o);
    float xo;
    if (coord == "half_pixel") xo = (x + 0.5f) / scale - 0.5f;
    else if (coord == "pytorch_half_pixel") xo = out_f > 1 ? (x + 0.5f) / scale - 0.5f : 0.f;
    else if (coord == "align_corners") xo = out_f == 1.f ? 0.f : x * float(in_len - 1) / (out_f - 1.f);
    else if (coord == "asymmetric") xo = x / scale;
    else if (coord == "tf_half_pixel_for_nn") xo = (x + 0.5f) / scale;
    else if (coord == "tf_crop_and_resize") {
      xo = out_f > 1 ? roi_start * float(in_len - 1) + x * (roi_end - roi_start) * float(in_len - 1) / (out_f - 1.f)
                       : 0.5f * (roi_start + roi_end) * float(in_len - 1);
      if (xo < 0.f || xo > float(in_len - 1)) {
        t.idx.push_back(-1);
        t.w.push_back(1.f);
        continue;
      }
    } else throw Error(n.describe() + ": unsupported coordinate_transformation_mode '" + coord + "'");
    auto clampi = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in_len - 1); };
    if (mode == "nearest") {
      t.idx.push_back(clampi(int64_t(nearest_round(nearest, xo))));
      t.w.push_back(1.f);
    } else if (mode == "linear") {
      const float fl = std::floor(xo);
      const float r = xo - fl;
      t.idx.push_back(clampi(int64_t(fl)));
      t.w.push_back(1.f - r);
      t.idx.push_back(clampi(int64_t(fl) + 1));
      t.w.push_back(r);
    } else {  // cubic (Keys), edge-clamped or renormalized without outside taps
      const float fl = std::floor(xo);
      const float s = xo - fl;
      const float d[4] = {1 + s, s, 1 - s, 2 - s};
      float cw[4];
      for (int k = 0; k < 4; ++k) {
        const float z = std::fabs(d[k]);
        cw[k] = z <= 1 ? ((a + 2) * z - (a + 3)) * z * z + 1 : ((a * z - 5 * a) * z + 8 * a) * z - 4 * a;
      }
      float sum = 0;
      const size_t first = t.idx.size();
      for (int k = 0; k < 4; ++k) {
        const int64_t i = int64_t(fl) - 1 + k;
        if (exclude && (i < 0 || i >= in_len)) continue;
        t.idx.push_back(clampi(i));
        t.w.push_back(cw[k]);
        sum += cw[k];
      }
      if (exclude && sum != 0.f)
        for (size_t k = first; k < t.w.size(); ++k) t.w[k] /= sum;
    }
  }
  t.start.push_back(int64_t(t.idx.size()));
  return t;
}

template <typename T>
void resize_typed(const Node& n, const Tensor& x, Tensor& y, const std::vector<Taps>& taps, float extrapolation) {
  const Shape& in = x.shape();
  const Shape& out = y.shape();
  const int64_t rank = int64_t(in.size());
  const auto in_str = shape_strides(in);
  const T* src = x.data<T>();
  T* dst = y.data<T>();
  const int64_t inner = rank ? out[rank - 1] : 1;
  const int64_t rows = inner ? y.numel() / inner : 0;
  parallel_range(rows, inner * 8, [&](int64_t lo, int64_t hi) {
    std::vector<int64_t> oidx(size_t(rank), 0);
    std::vector<int64_t> k(size_t(rank), 0);
    for (int64_t row = lo; row < hi; ++row) {
      int64_t rem = row;
      for (int64_t d = rank - 1; d-- > 0;) oidx[d] = rem % out[d], rem /= out[d];
      for (int64_t ow = 0; ow < inner; ++ow) {
        if (rank) oidx[rank - 1] = ow;
        // Walk the product of the per-dim taps.
        double acc = 0;
        bool extrapolate = false;
        for (int64_t d = 0; d < rank; ++d) k[d] = taps[d].start[oidx[d]];
        while (true) {
          int64_t off = 0;
          double w = 1;
          for (int64_t d = 0; d < rank; ++d) {
            const int64_t i = taps[d].idx[k[d]];
            if (i < 0) extrapolate = true;
            off += std::max<int64_t>(i, 0) * in_str[d];
            w *= taps[d].w[k[d]];
          }
          if (extrapolate) break;
          acc += w * double(src[off]);
          int64_t d = rank - 1;
          for (; d >= 0; --d) {
            if (++k[d] < taps[d].start[oidx[d] + 1]) break;
            k[d] = taps[d].start[oidx[d]];
          }
          if (d < 0) break;
        }
        dst[row * inner + ow] = extrapolate ? T(extrapolation) : T(std::is_integral_v<T> ? std::round(acc) : acc);
      }
    }
  });
}

// Every dimension samples one input index per output index: a gather, by element size.
// Consecutive output rows that read the same input row (upsampling) copy the first.
void resize_nearest(const Tensor& x, Tensor& y, const std::vector<Taps>& taps) {
  const Shape& in = x.shape();
  const Shape& out = y.shape();
  const int64_t rank = int64_t(in.size()), esize = int64_t(dtype_size(x.dtype()));
  const auto in_str = shape_strides(in);
  const int64_t inner = rank ? out[rank - 1] : 1;
  const int64_t rows = inner ? y.numel() / inner : 0;
  const char* src = static_cast<const char*>(x.raw());
  char* dst = static_cast<char*>(y.raw());
  const int64_t* col = rank ? taps[size_t(rank - 1)].idx.data() : nullptr;
  parallel_range(rows, inner * 2, [&](int64_t lo, int64_t hi) {
    int64_t prev_off = -1;
    for (int64_t row = lo; row < hi; ++row) {
      int64_t rem = row, off = 0;
      for (int64_t d = rank - 1; d-- > 0;) {
        off += taps[size_t(d)].idx[rem % out[d]] * in_str[d];
        rem /= out[d];
      }
      char* drow = dst + row * inner * esize;
      if (off == prev_off) {
        std::memcpy(drow, drow - inner * esize, size_t(inner * esize));
        continue;
      }
      prev_off = off;
      const char* srow = src + off * esize;
      if (!rank) std::memcpy(drow, srow, size_t(esize));
      else if (esize == 4)
        for (int64_t o = 0; o < inner; ++o) std::memcpy(drow + o * 4, srow + col[o] * 4, 4);
      else
        for (int64_t o = 0; o < inner; ++o) std::memcpy(drow + o * esize, srow + col[o] * esize, size_t(esize));
    }
  });
}

// Float, resized over the last two dimensions only: per plane, each needed input row is
// resized along the width once, then each output row is the weighted sum of a few of them.
void resize_planes(const Tensor& x, Tensor& y, const std::vector<Taps>& taps) {
  const Shape& in = x.shape();
  const Shape& out = y.shape();
  const size_t rank = in.size();
  const Taps& th = taps[rank - 2];
  const Taps& tw = taps[rank - 1];
  const int64_t ih = in[rank - 2], iw = in[rank - 1], oh = out[rank - 2], ow = out[rank - 1];
  const int64_t planes = oh && ow ? y.numel() / (oh * ow) : 0;
  const float* src = x.data<float>();
  float* dst = y.data<float>();
  parallel_range(planes, (ih + oh) * ow * 4, [&](int64_t lo, int64_t hi) {
    std::vector<float> wide(size_t(ih * ow));
    for (int64_t p = lo; p < hi; ++p) {
      const float* sp = src + p * ih * iw;
      for (int64_t r = 0; r < ih; ++r) {
        float* wr = wide.data() + r * ow;
        for (int64_t o = 0; o < ow; ++o) {
          float acc = 0.f;
          for (int64_t k = tw.start[o]; k < tw.start[o + 1]; ++k) acc += tw.w[k] * sp[r * iw + tw.idx[k]];
          wr[o] = acc;
        }
      }
      float* dp = dst + p * oh * ow;
      for (int64_t o = 0; o < oh; ++o) {
        float* drow = dp + o * ow;
        std::fill(drow, drow + ow, 0.f);
        for (int64_t k = th.start[o]; k < th.start[o + 1]; ++k) {
          const float w = th.w[k];
          const float* wr = wide.data() + th.idx[k] * ow;
#pragma omp simd
          for (int64_t q = 0; q < ow; ++q) drow[q] += w * wr[q];
        }
      }
    }
  });
}

void compute_resize(OpContext& c) {
  const Node& n = c.node;
  const Tensor& x = c.in(0);
  const std::vector<Taps> taps = resize_taps(n, x.shape(), c.inputs);
  const float ext = n.attr_float("extrapolation_value", 0.f);
  Tensor& y = c.out(0);
  if (y.numel() == 0) return;
  bool single = true, outer_identity = true, inside = true;
  for (size_t d = 0; d < taps.size(); ++d) {
    single = single && taps[d].single();
    if (d + 2 < taps.size()) outer_identity = outer_identity && taps[d].identity();
    for (int64_t i : taps[d].idx) inside = inside && i >= 0;
  }
  if (inside && single) return resize_nearest(x, y, taps);
  if (inside && outer_identity && taps.size() >= 2 && x.dtype() == DType::Float32) return resize_planes(x, y, taps);
  switch (x.dtype()) {
    case DType::Float32: return resize_typed<float>(n, x, y, taps, ext);
    case DType::UInt8: return resize_typed<uint8_t>(n, x, y, taps, ext);
    case DType::Int8: return resize_typed<int8_t>(n, x, y, taps, ext);
    case DType::Int32: return resize_typed<int32_t>(n, x, y, taps, ext);
    case DType::Int64: return resize_typed<int64_t>(n, x, y, taps, ext);
    default: throw Error("input type " + dtype_name(x.dtype()) + " is not supported");
  }
}

}  // namespace

bool ResizeTaps::single() const { return idx.size() + 1 == start.size(); }

bool ResizeTaps::identity() const {
  for (size_t o = 0; o + 1 < start.size(); ++o) {
    float own = 0.f;
    for (int64_t k = start[o]; k < start[o + 1]; ++k) {
      if (idx[size_t(k)] == int64_t(o)) own += w[size_t(k)];
      else if (w[size_t(k)] != 0.f) return false;
    }
    if (own != 1.f) return false;
  }
  return true;
}

bool resizes_height_and_width_only(const std::vector<ResizeTaps>& taps) {
  if (taps.size() != 4 || !taps[0].identity() || !taps[1].identity()) return false;
  for (const ResizeTaps& t : taps)
    for (int64_t i : t.idx)
      if (i < 0) return false;
  return true;
}

std::vector<ResizeTaps> resize_taps(const Node& n, const Shape& x, const std::vector<const Tensor*>& inputs) {
  auto input = [&](size_t i) { return i < inputs.size() ? inputs[i] : nullptr; };
  ResizePlan p = resize_plan(n, x, [&](size_t i, const char*) { return input(i); });
  const size_t rank = x.size();
  std::vector<float> roi;
  if (!legacy(n) && input(1) && input(1)->numel() > 0) {
    if (input(1)->dtype() != DType::Float32 || size_t(input(1)->numel()) != 2 * rank)
      throw Error(n.describe() + ": roi must be float32 with " + std::to_string(2 * rank) + " entries");
    roi.assign(input(1)->data<float>(), input(1)->data<float>() + 2 * rank);
  }
  std::vector<ResizeTaps> taps;
  for (size_t d = 0; d < rank; ++d)
    taps.push_back(taps_for(n, x[d], p.out[d], p.scale[d], roi.empty() ? 0.f : roi[d], roi.empty() ? 1.f : roi[d + rank]));
  return taps;
}

void register_resize_ops(OpRegistry& r) {
  // Upsample and Resize-10: scales at 1; Resize 11+: roi at 1 (not a shape, bound too: it is
  // a small parameter tensor), scales at 2, sizes at 3.
  r.add(with_shape_inputs(OpDef{"", "Resize", infer_resize, compute_resize}, {1, 2, 3}));
  r.add(with_shape_inputs(OpDef{"", "Upsample", infer_resize, compute_resize}, {1}));
}

}  // namespace fb
