// Conv, fusebench.FusedConv (Conv with residual and activation) and ConvTranspose: shapes,
// attributes and in-place rule. Their kernels are a backend's (oneDNN's on the CPU:
// engine/backend/cpu/conv.h), bound to these rows from above (engine/ops/bound_kernels.h).
#include <algorithm>

#include "engine/ops/bound_kernels.h"
#include "engine/ops/conv_shapes.h"
#include "engine/ops/fused_conv.h"
#include "engine/ops/op_registry.h"

namespace fb {

ConvShapes conv_shapes(const Node& node, const Shape& x, const Shape& w, const Shape* b) {
  require_rank_at_least(node, x, 3, "input X");
  if (x.size() > 5) throw Error(node.describe() + ": Conv over " + std::to_string(x.size() - 2) + " spatial dimensions is not supported (at most 3)");
  if (w.size() != x.size())
    throw Error(node.describe() + ": weights W " + shape_str(w) + " must have the rank of X " + shape_str(x));
  ConvShapes s;
  s.n = x[0];
  s.c = x[1];
  s.m = w[0];
  s.group = node.attr_int("group", 1);
  if (s.group <= 0 || s.c % s.group != 0 || s.m % s.group != 0)
    throw Error(node.describe() + ": group " + std::to_string(s.group) + " must divide the input channels (" +
                std::to_string(s.c) + ") and the output channels (" + std::to_string(s.m) + ")");
  if (w[1] * s.group != s.c)
    throw Error(node.describe() + ": weights W " + shape_str(w) + " expect " + std::to_string(w[1] * s.group) +
                " input channels, X " + shape_str(x) + " has " + std::to_string(s.c));
  if (b && (b->size() != 1 || (*b)[0] != s.m))
    throw Error(node.describe() + ": bias B " + shape_str(*b) + " must be [" + std::to_string(s.m) + "]");
  s.geo = window_geometry(node, Shape(x.begin() + 2, x.end()), Shape(w.begin() + 2, w.end()), false);
  if (Shape(w.begin() + 2, w.end()) != s.geo.kernel)
    throw Error(node.describe() + ": kernel_shape does not match the weights " + shape_str(w));
  s.out = {s.n, s.m};
  s.out.insert(s.out.end(), s.geo.out.begin(), s.geo.out.end());
  return s;
}

DeconvShapes deconv_shapes(const Node& node, const Shape& x, const Shape& w, const Shape* b) {
  require_rank_at_least(node, x, 3, "input X");
  if (x.size() > 5) throw Error(node.describe() + ": ConvTranspose over more than 3 spatial dimensions is not supported");
  if (w.size() != x.size())
    throw Error(node.describe() + ": weights W " + shape_str(w) + " must have the rank of X " + shape_str(x));
  const size_t nd = x.size() - 2;
  DeconvShapes s;
  s.n = x[0];
  s.c = x[1];
  s.group = node.attr_int("group", 1);
  if (s.group <= 0 || s.c % s.group != 0)
    throw Error(node.describe() + ": group " + std::to_string(s.group) + " must divide the input channels (" + std::to_string(s.c) + ")");
  if (w[0] != s.c)
    throw Error(node.describe() + ": weights W " + shape_str(w) + " expect " + std::to_string(w[0]) + " input channels, X " +
                shape_str(x) + " has " + std::to_string(s.c));
  s.m = w[1] * s.group;
  if (b && (b->size() != 1 || (*b)[0] != s.m))
    throw Error(node.describe() + ": bias B " + shape_str(*b) + " must be [" + std::to_string(s.m) + "]");
  s.kernel = node.has_attr("kernel_shape") ? node.attr_ints("kernel_shape") : std::vector<int64_t>(w.begin() + 2, w.end());
  if (s.kernel != std::vector<int64_t>(w.begin() + 2, w.end()))
    throw Error(node.describe() + ": kernel_shape does not match the weights " + shape_str(w));
  s.stride = spatial_attr(node, "strides", nd, 1);
  s.dilation = spatial_attr(node, "dilations", nd, 1);
  s.out_pad = spatial_attr(node, "output_padding", nd, 0);
  std::vector<int64_t> pads = node.attr_ints("pads", std::vector<int64_t>(2 * nd, 0));
  if (pads.size() != 2 * nd) throw Error(node.describe() + ": pads must have " + std::to_string(2 * nd) + " entries");
  s.pad_begin.assign(pads.begin(), pads.begin() + nd);
  s.pad_end.assign(pads.begin() + nd, pads.end());
  const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
    throw Error(node.describe() + ": unsupported auto_pad '" + auto_pad + "'");
  std::vector<int64_t> out_shape = node.attr_ints("output_shape");
  if (out_shape.size() == nd + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  if (!out_shape.empty() && out_shape.size() != nd)
    throw Error(node.describe() + ": output_shape must have " + std::to_string(nd) + " entries");
  if (auto_pad == "VALID") std::fill(s.pad_begin.begin(), s.pad_begin.end(), 0), std::fill(s.pad_end.begin(), s.pad_end.end(), 0);
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  s.out = {s.n, s.m};
  for (size_t d = 0; d < nd; ++d) {
    if (s.stride[d] <= 0 || s.dilation[d] <= 0 || s.kernel[d] <= 0)
      throw Error(node.describe() + ": kernel, strides and dilations must be positive");
    if (s.out_pad[d] < 0 || (s.out_pad[d] >= s.stride[d] && s.out_pad[d] >= s.dilation[d]))
      throw Error(node.describe() + ": output_padding must be smaller than the stride or the dilation");
    const int64_t full = s.stride[d] * (x[d + 2] - 1) + s.out_pad[d] + (s.kernel[d] - 1) * s.dilation[d] + 1;
    if (!out_shape.empty() || same) {
      const int64_t target = out_shape.empty() ? x[d + 2] * s.stride[d] : out_shape[d];
      const int64_t total = full - target;
      if (target <= 0) throw Error(node.describe() + ": output_shape must be positive");
      if (total < 0) {
        // A larger output_shape than the operation yields extends the far end (the
        // onnx reference fills it as output_padding would): a negative end pad.
        s.pad_begin[d] = 0;
        s.pad_end[d] = total;
      } else {
        // SAME_UPPER puts the extra padding at the end (the onnx reference implementation's rule).
        s.pad_begin[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
        s.pad_end[d] = total - s.pad_begin[d];
      }
    }
    if (s.pad_begin[d] < 0 || (s.pad_end[d] < 0 && out_shape.empty()))
      throw Error(node.describe() + ": negative pads are not supported");
    const int64_t o = full - s.pad_begin[d] - s.pad_end[d];
    if (o <= 0) throw Error(node.describe() + ": the output would be empty");
    s.out.push_back(o);
  }
  return s;
}

namespace {

std::vector<ValueInfo> infer_conv(const ShapeContext& c) {
  require_float(c.node, c.in(0).dtype, "input X");
  require_float(c.node, c.in(1).dtype, "weights W");
  const Shape* b = c.has_input(2) ? &c.in(2).shape : nullptr;
  Shape out = conv_shapes(c.node, c.in(0).shape, c.in(1).shape, b).out;
  if (c.has_input(3) && c.in(3).shape != out)
    throw Error(c.node.describe() + ": residual " + shape_str(c.in(3).shape) + " must have the output's shape " + shape_str(out));
  return {ValueInfo{DType::Float32, out, true}};
}

std::vector<ValueInfo> infer_conv_transpose(const ShapeContext& c) {
  require_float(c.node, c.in(0).dtype, "input X");
  require_float(c.node, c.in(1).dtype, "weights W");
  const Shape* b = c.has_input(2) ? &c.in(2).shape : nullptr;
  return {ValueInfo{DType::Float32, deconv_shapes(c.node, c.in(0).shape, c.in(1).shape, b).out, true}};
}

// The residual a FusedConv sums may give its bytes to the output when both keep one
// layout: run() then sums it where it lies instead of copying it into the output first.
int fused_conv_in_place_input(const Node& n) {
  if (!conv_has_residual(n)) return -1;
  const ConvLayouts l = conv_layouts_of(n);
  return l.residual == l.y ? 3 : -1;
}

}  // namespace

void register_conv_ops(OpRegistry& r) {
  r.add(weighted_as(OpDef{"", "Conv", infer_conv, compute_with_bound_kernel}, WeightedForm::kConv));
  OpDef fused_conv = weighted_as(OpDef{"fusebench", "FusedConv", infer_conv, compute_with_bound_kernel}, WeightedForm::kConv);
  fused_conv.in_place_input = fused_conv_in_place_input;
  r.add(fused_conv);
  r.add(OpDef{"", "ConvTranspose", infer_conv_transpose, compute_with_bound_kernel});
}

}  // namespace fb
