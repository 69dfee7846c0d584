// DepthToSpace (DCR and CRD modes) and SpaceToDepth: block rearrangements between the
// channel dimension and the two spatial ones of an [N, C, H, W] tensor.
#include <cstring>

#include "engine/ops/nn_common.h"

namespace fb {

namespace {

int64_t block_of(const Node& n) {
  const int64_t b = n.attr_int("blocksize", 0);
  if (b <= 0) throw Error(n.describe() + ": attribute 'blocksize' must be positive");
  return b;
}

std::vector<ValueInfo> infer_depth_to_space(const ShapeContext& c) {
  const ValueInfo& x = c.in(0);
  const int64_t b = block_of(c.node);
  if (x.shape.size() != 4) throw Error(c.node.describe() + ": input must be 4-D, got " + shape_str(x.shape));
  if (dtype_size(x.dtype) == 0) throw Error(c.node.describe() + ": input type " + dtype_name(x.dtype) + " is not supported");
  const std::string mode = c.node.attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") throw Error(c.node.describe() + ": unsupported mode '" + mode + "'");
  if (x.shape[1] % (b * b)) throw Error(c.node.describe() + ": channels (" + std::to_string(x.shape[1]) + ") must divide by blocksize^2");
  return {ValueInfo{x.dtype, {x.shape[0], x.shape[1] / (b * b), x.shape[2] * b, x.shape[3] * b}, true}};
}

std::vector<ValueInfo> infer_space_to_depth(const ShapeContext& c) {
  const ValueInfo& x = c.in(0);
  const int64_t b = block_of(c.node);
  if (x.shape.size() != 4) throw Error(c.node.describe() + ": input must be 4-D, got " + shape_str(x.shape));
  if (dtype_size(x.dtype) == 0) throw Error(c.node.describe() + ": input type " + dtype_name(x.dtype) + " is not supported");
  if (x.shape[2] % b || x.shape[3] % b) throw Error(c.node.describe() + ": height and width must divide by blocksize");
  return {ValueInfo{x.dtype, {x.shape[0], x.shape[1] * b * b, x.shape[2] / b, x.shape[3] / b}, true}};
}

// Walks the space side [N, Cs, H*b, W*b] and copies each element to or from its depth-side
// position [N, Cs*b*b, H, W].
void rearrange(OpContext& c, bool to_space) {
  const Tensor& x = c.in(0);
  Tensor& y = c.out(0);
  const int64_t b = block_of(c.node);
  const Shape& space = to_space ? y.shape() : x.shape();
  const Shape& depth = to_space ? x.shape() : y.shape();
  const bool crd = to_space && c.node.attr_string("mode", "DCR") == "CRD";
  const int64_t n = space[0], cs = space[1], hs = space[2], ws = space[3], cd = depth[1], hd = depth[2], wd = depth[3];
  const size_t es = dtype_size(x.dtype());
  const auto* src = static_cast<const std::byte*>(x.raw());
  auto* dst = static_cast<std::byte*>(y.raw());
  for (int64_t in = 0; in < n; ++in)
    for (int64_t ch = 0; ch < cs; ++ch)
      for (int64_t h = 0; h < hs; ++h)
        for (int64_t w = 0; w < ws; ++w) {
          const int64_t i = h % b, j = w % b;
          const int64_t dc = crd ? ch * b * b + i * b + j : (i * b + j) * cs + ch;
          const int64_t s_off = ((in * cs + ch) * hs + h) * ws + w;
          const int64_t d_off = ((in * cd + dc) * hd + h / b) * wd + w / b;
          if (to_space) std::memcpy(dst + s_off * es, src + d_off * es, es);
          else std::memcpy(dst + d_off * es, src + s_off * es, es);
        }
}

void compute_depth_to_space(OpContext& c) { rearrange(c, true); }
void compute_space_to_depth(OpContext& c) { rearrange(c, false); }

}  // namespace

void register_space_depth_ops(OpRegistry& r) {
  r.add(OpDef{"", "DepthToSpace", infer_depth_to_space, compute_depth_to_space});
  r.add(OpDef{"", "SpaceToDepth", infer_space_to_depth, compute_space_to_depth});
}

}  // namespace fb
