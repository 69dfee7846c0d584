// Group normalization, the kernel InstanceNormalization (one channel per group) and the
// engine's fused fusebench.GroupNorm share: x [N, C, ...] is split into `groups` blocks of
// C / groups channels per sample; each block is normalized by its own mean and variance,
// then scaled per group (InstanceNormalization's scale and B), per channel (nn.GroupNorm's
// weight and bias, which PyTorch's export applies as a Mul and an Add), and optionally
// passed through SiLU, x · sigmoid(x), in the same pass.
#pragma once
#include <cstdint>

namespace fb {

struct GroupNormArgs {
  int64_t batch = 0, channels = 0, groups = 1, inner = 0;  // x is [batch, channels, inner]
  float epsilon = 1e-5f;
  const float* group_scale = nullptr;    // [groups], or nullptr for 1
  const float* group_bias = nullptr;     // [groups], or nullptr for 0
  const float* channel_scale = nullptr;  // [channels], or nullptr for 1
  const float* channel_bias = nullptr;   // [channels], or nullptr for 0
  bool silu = false;
};

// y may be x (each block is read before it is written).
void group_norm(const float* x, float* y, const GroupNormArgs& args);

}  // namespace fb
