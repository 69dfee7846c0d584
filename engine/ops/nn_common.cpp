// The window geometry and input checks shared by the neural-network kernels.
// ONNX's output-size rules live here once, so Conv, the pools and LpPool agree.
#include "engine/ops/nn_common.h"

#include <tbb/parallel_for.h>

namespace fb {

void require_float(const Node& n, DType dtype, const char* what) {
  if (dtype != DType::Float32)
    throw Error(n.describe() + ": " + what + " of type " + dtype_name(dtype) + " is not supported (float32 only)");
}

void require_rank_at_least(const Node& n, const Shape& s, size_t min_rank, const char* what) {
  if (s.size() < min_rank)
    throw Error(n.describe() + ": " + what + " must have rank >= " + std::to_string(min_rank) + ", got " + shape_str(s));
}

std::vector<int64_t> spatial_attr(const Node& n, const char* key, size_t dims, int64_t def) {
  std::vector<int64_t> v = n.attr_ints(key, std::vector<int64_t>(dims, def));
  if (v.size() != dims)
    throw Error(n.describe() + ": attribute '" + key + "' has " + std::to_string(v.size()) + " entries for " +
                std::to_string(dims) + " spatial dimensions");
  return v;
}

WindowGeometry window_geometry(const Node& n, const Shape& in_spatial, const Shape& kernel, bool ceil_mode) {
  const size_t nd = in_spatial.size();
  WindowGeometry g;
  g.in = in_spatial;
  g.kernel = n.has_attr("kernel_shape") ? n.attr_ints("kernel_shape") : kernel;
  if (g.kernel.size() != nd)
    throw Error(n.describe() + ": kernel_shape has " + std::to_string(g.kernel.size()) + " entries for " +
                std::to_string(nd) + " spatial dimensions");
  g.stride = spatial_attr(n, "strides", nd, 1);
  g.dilation = spatial_attr(n, "dilations", nd, 1);
  for (size_t d = 0; d < nd; ++d) {
    if (g.kernel[d] <= 0 || g.stride[d] <= 0 || g.dilation[d] <= 0)
      throw Error(n.describe() + ": kernel, strides and dilations must be positive");
  }
  const std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  g.pad_begin.assign(nd, 0);
  g.pad_end.assign(nd, 0);
  g.out.assign(nd, 0);
  if (auto_pad == "NOTSET") {
    std::vector<int64_t> pads = n.attr_ints("pads", std::vector<int64_t>(2 * nd, 0));
    if (pads.size() != 2 * nd)
      throw Error(n.describe() + ": pads has " + std::to_string(pads.size()) + " entries, expected " + std::to_string(2 * nd));
    for (size_t d = 0; d < nd; ++d) {
      g.pad_begin[d] = pads[d];
      g.pad_end[d] = pads[d + nd];
      if (pads[d] < 0 || pads[d + nd] < 0) throw Error(n.describe() + ": negative pads are not supported");
    }
  } else if (auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") {
    throw Error(n.describe() + ": unsupported auto_pad '" + auto_pad + "'");
  }
  for (size_t d = 0; d < nd; ++d) {
    const int64_t ek = g.effective_kernel(d), s = g.stride[d], in = g.in[d];
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      g.out[d] = (in + s - 1) / s;
      const int64_t total = std::max<int64_t>(0, (g.out[d] - 1) * s + ek - in);
      const int64_t small = total / 2;
      g.pad_begin[d] = auto_pad == "SAME_UPPER" ? small : total - small;
      g.pad_end[d] = total - g.pad_begin[d];
      continue;
    }
    const int64_t span = in + g.pad_begin[d] + g.pad_end[d] - ek;
    if (span < 0)
      throw Error(n.describe() + ": the kernel (" + std::to_string(ek) + " with dilation) is larger than the padded input (" +
                  std::to_string(in + g.pad_begin[d] + g.pad_end[d]) + ") in spatial dimension " + std::to_string(d));
    if (ceil_mode) {
      g.out[d] = (span + s - 1) / s + 1;
      // The last window must start inside the input or its leading padding (as PyTorch does).
      if ((g.out[d] - 1) * s >= in + g.pad_begin[d]) --g.out[d];
    } else {
      g.out[d] = span / s + 1;
    }
  }
  return g;
}

void parallel_range(int64_t n, int64_t cost_per_item, const std::function<void(int64_t, int64_t)>& f) {
  if (n <= 0) return;
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(cost_per_item, 1));
  if (n <= grain) return f(0, n);
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, grain),
                    [&](const tbb::blocked_range<int64_t>& r) { f(r.begin(), r.end()); });
}

}  // namespace fb
