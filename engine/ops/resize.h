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
  // Output index o reads input index o alone: the dimension is not resized.
  bool identity() const;
};

// The taps of every dimension of a Resize or Upsample node reading `inputs` (X, then roi,
// scales, sizes as the opset has them). Bad inputs throw Error naming the node.
std::vector<ResizeTaps> resize_taps(const Node& n, const std::vector<const Tensor*>& inputs);

}  // namespace fb
