// fusebench.FusedConv's attributes beyond Conv's, as the passes write them and every
// backend reads them: its activation (engine/ops/fused_activation.h), an optional
// residual, and where its tensors keep their bytes.
#pragma once

#include "engine/ir/graph.h"

namespace fb {

// Conv, or the fusebench.FusedConv the fusion passes make of one (a convolution either way).
bool is_convolution(const Node& n);

// Where a convolution's activations keep their bytes: ONNX's plain layout (NCHW) or
// channels-last (NHWC). The conv-layout pass marks FusedConv nodes whose tensors flow only
// between convolutions, and the ops between them, with "x_layout", "residual_layout",
// "y_layout" = "channels_last" where the build's backend runs that node channels-last
// (Backend::runs_channels_last); a backend answering no never sees them. Shapes stay
// logical (NCHW); only the bytes are permuted.
inline constexpr const char* kChannelsLast = "channels_last";
struct ConvLayouts {
  bool x = false, residual = false, y = false;  // true: channels-last
};
// Error naming the node for a layout other than channels_last.
ConvLayouts conv_layouts_of(const Node& n);
// Whether layout attribute `key` ("x_layout", "residual_layout", "y_layout") of any node
// says channels_last; the same Error for another value.
bool layout_is_channels_last(const Node& n, const char* key);

// Host copies between the two layouts of an [N, C, d...] tensor of any dtype (rank 3 to 5):
// channels-last bytes under the logical shape as plain ones (a capture of a channels-last
// layer's output), and plain ones as channels-last ([K, C, kh, kw] weights as [K, kh, kw, C]).
Tensor channels_last_to_plain(const Tensor& t);
Tensor plain_to_channels_last(const Tensor& t);

// fusebench.FusedConv's optional input 3: a tensor of the output's shape added to the
// convolution before the activation (a residual Add folded in).
bool conv_has_residual(const Node& n);

// Which operand of a Mul is the gated tensor x ([N,C,H,W], the output's shape) when the
// other is a channel gate s ([N,C,1,1] or [1,C,1,1]), as squeeze-and-excitation writes
// it; -1 when the Mul is not such a gate.
int channel_gate_operand(const Shape& a, const Shape& b, const Shape& out);

}  // namespace fb
