// Convolution shapes from a node's attributes (strides, pads, dilations, group, auto_pad,
// output_padding, output_shape), shared by the ops' shape inference (conv_ops.cpp) and
// the backends' kernels.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/ops/nn_common.h"

namespace fb {

struct ConvShapes {
  int64_t n, c, m, group;
  WindowGeometry geo;
  Shape out;
};

// Checks X, W and the bias against the attributes (Errors name the node) and works out
// the output.
ConvShapes conv_shapes(const Node& node, const Shape& x, const Shape& w, const Shape* b);

struct DeconvShapes {
  int64_t n, c, m, group;
  std::vector<int64_t> kernel, stride, dilation, pad_begin, pad_end, out_pad;
  Shape out;
};

// The same for ConvTranspose: pads worked out from auto_pad and output_shape; an
// output_shape beyond what the operation yields shows as a negative end pad.
DeconvShapes deconv_shapes(const Node& node, const Shape& x, const Shape& w, const Shape* b);

}  // namespace fb
