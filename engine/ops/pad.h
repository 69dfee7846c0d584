// Pad's index rule, shared by the op's kernel (pad.cpp) and the CUDA backend's table of
// source indices (engine/backend/cuda/cuda_data_movement_layers.cpp).
#pragma once
#include <cstdint>
#include <string>

namespace fb {

// The input index output index `o` reads along a dim of `n` elements with `before` padded
// in front ("constant", "edge" or "reflect"), or -1 where the constant goes.
int64_t pad_source_index(int64_t o, int64_t before, int64_t n, const std::string& mode);

}  // namespace fb
