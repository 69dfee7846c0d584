// Resize's per-dimension sampling (engine/ops/resize.cpp), shared with the channels-last
// Resize layer (engine/backend/cpu/channels_last_layers.cpp).
#pragma once
#include <cstdint>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/ir/tensor.h"

namespace fb {

// One dimension's sampling: output index o reads input indices idx[start[o] .. start[o+1])
// with weights w (idx -1: outside the roi, the output is extrapolation_value).
struct ResizeTaps {
  std::vector<int64_t> start;
  std::vector<int64_t> idx;
  std::vector<float> w;
  // Every output index reads exactly one input index, with weight 1 (nearest).
  bool single() const;
  // Output index o reads input index o alone (other taps weigh 0): not resized.
  bool identity() const;
};

// The taps of every dimension of a Resize or Upsample node whose input X has shape `x`,
// given its inputs (X's own entry is not read; then roi, scales, sizes as the opset has
// them, nullptr where omitted). Bad inputs throw Error naming the node.
std::vector<ResizeTaps> resize_taps(const Node& n, const Shape& x, const std::vector<const Tensor*>& inputs);

// Whether only the last two of four dimensions are resized, every tap inside the input
// (no tf_crop_and_resize extrapolation): an image resize, which channels-last can run.
bool resizes_height_and_width_only(const std::vector<ResizeTaps>& taps);

}  // namespace fb
