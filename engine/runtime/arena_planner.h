// Activation memory planning: given each buffer's size and the interval of layers during
// which it is live, assigns byte offsets so that buffers live at the same time never
// overlap. Greedy by size (largest first, lowest fitting offset), as TensorRT-style
// planners do; within a few percent of optimal on transformer and CNN graphs.
#pragma once
#include <cstddef>
#include <vector>

namespace fb {

struct BufferLife {
  size_t bytes;
  int first;  // index of the producing layer
  int last;   // index of the last consuming layer (inclusive)
};

// Offsets (64-byte aligned) per buffer, and the total arena size.
std::vector<size_t> plan_arena(const std::vector<BufferLife>& buffers, size_t* total_bytes);

}  // namespace fb
