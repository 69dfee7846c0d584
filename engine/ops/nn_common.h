// Helpers shared by the neural-network kernels (conv, pool, normalization, resize...):
// input checks that throw fb::Error naming the node, and the sliding-window geometry
// (kernel, strides, dilations, pads, auto_pad, ceil_mode) that Conv and the pools share.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "engine/ops/op_registry.h"

namespace fb {

// Throws Error naming the node unless `dtype` is float32.
void require_float(const Node& n, DType dtype, const char* what);
// Throws Error naming the node unless the rank is at least `min_rank`.
void require_rank_at_least(const Node& n, const Shape& s, size_t min_rank, const char* what);

// The window of one N-D sliding op over the spatial dims of an [N, C, spatial...] input.
struct WindowGeometry {
  Shape in, kernel, out;                  // spatial sizes
  std::vector<int64_t> stride, dilation;  // per spatial dim
  std::vector<int64_t> pad_begin, pad_end;
  int64_t spatial() const { return int64_t(in.size()); }
  int64_t effective_kernel(size_t d) const { return (kernel[d] - 1) * dilation[d] + 1; }
};

// Resolves kernel_shape (or `kernel` when the attribute is absent), strides, dilations,
// pads and auto_pad for a convolution or pool; `ceil_mode` rounds the output size up
// (pools). Bad attributes throw Error naming the node.
WindowGeometry window_geometry(const Node& n, const Shape& in_spatial, const Shape& kernel, bool ceil_mode);

// Attribute `key` as a per-spatial-dim vector (default `def` in every dim), checked for length.
std::vector<int64_t> spatial_attr(const Node& n, const char* key, size_t dims, int64_t def);

// Run `f(i)` for i in [0, n), in parallel when n * cost is large enough to be worth it.
void parallel_range(int64_t n, int64_t cost_per_item, const std::function<void(int64_t, int64_t)>& f);

}  // namespace fb
