// The ops between channels-last convolutions, reading and writing NHWC (GroupNorm: any
// channels-last rank) so the convolutions around them need no reorder
// (engine/passes/conv_layout_propagation.cpp marks them with x_layout / y_layout):
// MaxPool, squeeze-and-excitation's GlobalAveragePool and channel gate x · s (s [N,C,1,1]
// or [1,C,1,1]), Concat and Split over channels, the same-shape Add, Resize of height and
// width, fusebench.ChannelShuffle, ChannelAffine and GroupNorm. (A Transpose that moves
// channels last, reading a channels-last tensor, is a view: fusebench.ChannelsLastView.)
#pragma once
#include <memory>

#include "engine/backend/backend.h"

namespace fb {

// A layer for a GlobalAveragePool with x_layout, or one of the other ops above with
// x_layout and y_layout (both "channels_last"); nullptr for any other node.
std::unique_ptr<Layer> make_channels_last_layer(const LayerRequest& request);

}  // namespace fb
