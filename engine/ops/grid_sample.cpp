// GridSample (opset 16): samples a 4-D input at normalized grid locations, bilinear,
// nearest or bicubic, with zeros, border or reflection padding, following PyTorch's
// grid_sample (which the ONNX operator was defined from).
#include <cmath>

#include "engine/ops/nn_common.h"

namespace fb {

namespace {

enum class Padding { Zeros, Border, Reflection };

std::vector<ValueInfo> infer_grid_sample(const ShapeContext& c) {
  const ValueInfo& x = c.in(0);
  const ValueInfo& g = c.in(1);
  require_float(c.node, x.dtype, "input X");
  require_float(c.node, g.dtype, "grid");
  if (x.shape.size() != 4) throw Error(c.node.describe() + ": X must be 4-D, got " + shape_str(x.shape));
  if (g.shape.size() != 4 || g.shape[0] != x.shape[0] || g.shape[3] != 2)
    throw Error(c.node.describe() + ": grid must be [N, H_out, W_out, 2], got " + shape_str(g.shape));
  const std::string mode = c.node.attr_string("mode", "bilinear"), pad = c.node.attr_string("padding_mode", "zeros");
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic") throw Error(c.node.describe() + ": unsupported mode '" + mode + "'");
  if (pad != "zeros" && pad != "border" && pad != "reflection")
    throw Error(c.node.describe() + ": unsupported padding_mode '" + pad + "'");
  return {ValueInfo{DType::Float32, {x.shape[0], x.shape[1], g.shape[1], g.shape[2]}, true}};
}

float reflect(float v, float twice_low, float twice_high) {
  if (twice_low == twice_high) return 0.f;
  const float lo = twice_low / 2, span = (twice_high - twice_low) / 2;
  v = std::fabs(v - lo);
  const float extra = std::fmod(v, span);
  const int flips = int(std::floor(v / span));
  return flips % 2 == 0 ? extra + lo : span - extra + lo;
}

// Applies border/reflection padding to a source coordinate.
float pad_coord(float v, int64_t size, Padding pad, bool align) {
  if (pad == Padding::Border) return std::clamp(v, 0.f, float(size - 1));
  if (pad == Padding::Reflection) {
    v = align ? reflect(v, 0.f, 2.f * float(size - 1)) : reflect(v, -1.f, 2.f * float(size) - 1.f);
    return std::clamp(v, 0.f, float(size - 1));
  }
  return v;
}

float cubic_weight(float t, int k) {
  const float a = -0.75f;
  const float d = std::fabs(k == 0 ? t + 1 : k == 1 ? t : k == 2 ? 1 - t : 2 - t);
  return d <= 1 ? ((a + 2) * d - (a + 3)) * d * d + 1 : ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
}

void compute_grid_sample(OpContext& c) {
  const Tensor& x = c.in(0);
  const Tensor& grid = c.in(1);
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t Ho = grid.shape()[1], Wo = grid.shape()[2];
  const std::string mode = c.node.attr_string("mode", "bilinear"), ps = c.node.attr_string("padding_mode", "zeros");
  const Padding pad = ps == "border" ? Padding::Border : ps == "reflection" ? Padding::Reflection : Padding::Zeros;
  const bool align = c.node.attr_int("align_corners", 0) != 0;
  const float* in = x.data<float>();
  const float* gp = grid.data<float>();
  float* out = c.out(0).data<float>();
  auto unnormalize = [&](float v, int64_t size) { return align ? (v + 1) / 2 * float(size - 1) : ((v + 1) * float(size) - 1) / 2; };
  parallel_range(N * C, Ho * Wo * 16, [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      const int64_t b = p / C;
      const float* plane = in + p * H * W;
      // Pixel value with zero padding outside the image.
      auto at = [&](int64_t yy, int64_t xx) { return (yy < 0 || yy >= H || xx < 0 || xx >= W) ? 0.f : plane[yy * W + xx]; };
      for (int64_t i = 0; i < Ho; ++i)
        for (int64_t j = 0; j < Wo; ++j) {
          const float* g = gp + ((b * Ho + i) * Wo + j) * 2;
          float ix = unnormalize(g[0], W), iy = unnormalize(g[1], H);
          float v;
          if (mode == "bicubic") {
            // Taps are padded one by one, as PyTorch's bounded reads do.
            const float fx = std::floor(ix), fy = std::floor(iy), tx = ix - fx, ty = iy - fy;
            v = 0;
            for (int ky = 0; ky < 4; ++ky) {
              float row = 0;
              for (int kx = 0; kx < 4; ++kx) {
                float sx = pad_coord(fx - 1 + float(kx), W, pad, align), sy = pad_coord(fy - 1 + float(ky), H, pad, align);
                row += cubic_weight(tx, kx) * at(int64_t(sy), int64_t(sx));
              }
              v += cubic_weight(ty, ky) * row;
            }
          } else {
            ix = pad_coord(ix, W, pad, align);
            iy = pad_coord(iy, H, pad, align);
            if (mode == "nearest") {
              v = at(int64_t(std::nearbyint(iy)), int64_t(std::nearbyint(ix)));
            } else {
              const float fx = std::floor(ix), fy = std::floor(iy), lx = ix - fx, ly = iy - fy;
              const int64_t x0 = int64_t(fx), y0 = int64_t(fy);
              v = at(y0, x0) * (1 - lx) * (1 - ly) + at(y0, x0 + 1) * lx * (1 - ly) + at(y0 + 1, x0) * (1 - lx) * ly +
                  at(y0 + 1, x0 + 1) * lx * ly;
            }
          }
          out[(p * Ho + i) * Wo + j] = v;
        }
    }
  });
}

}  // namespace

void register_grid_sample_ops(OpRegistry& r) { r.add(OpDef{"", "GridSample", infer_grid_sample, compute_grid_sample}); }

}  // namespace fb
