// Group normalization, the kernel InstanceNormalization (one channel per group) and the
// engine's fused fusebench.GroupNorm share: x [N, C, ...] is split into `groups` blocks of
// C / groups channels per sample; each block is normalized by its own mean and variance,
// then scaled per group (InstanceNormalization's scale and B), per channel (nn.GroupNorm's
// weight and bias, which PyTorch's export applies as a Mul and an Add), and optionally
// passed through SiLU, x · sigmoid(x) (a diffusion ResBlock), or GELU (wav2vec2's feature
// encoder), in the same pass.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/ir/graph.h"

namespace fb {

enum class GroupNormActivation { None, Silu, Gelu };
// The fused node's attribute activation: "", "silu" or "gelu"; an Error naming the node otherwise.
GroupNormActivation group_norm_activation(const Node& n);

struct GroupNormArgs {
  int64_t batch = 0, channels = 0, groups = 1, inner = 0;  // x is [batch, channels, inner]
  float epsilon = 1e-5f;
  const float* group_scale = nullptr;    // [groups], or nullptr for 1
  const float* group_bias = nullptr;     // [groups], or nullptr for 0
  const float* channel_scale = nullptr;  // [channels], or nullptr for 1
  const float* channel_bias = nullptr;   // [channels], or nullptr for 0
  GroupNormActivation activation = GroupNormActivation::None;
};

// A fusebench.GroupNorm node's arguments, from its attributes and inputs (x and the four
// optional parameters; nullptr where omitted).
GroupNormArgs group_norm_args(const Node& node, const std::vector<const Tensor*>& inputs);

// The plain kernel sums in float over runs this long and adds the runs' sums in double; the
// channels-last kernel's float sums are shorter (at most 1024 pixels of a channel, then one
// group's channels). The length bounds the rounding error of a group's statistics relative
// to its spread (the tests derive their tolerance from it).
constexpr int64_t kGroupNormSumBlock = 4096;

// x and y plain ([batch, channels, inner]); y may be x (each block is read before it is written).
void group_norm(const float* x, float* y, const GroupNormArgs& args);
// x and y channels-last ([batch, inner, channels], the conv-layout pass's layout); y may be x.
void group_norm_channels_last(const float* x, float* y, const GroupNormArgs& args);

}  // namespace fb
