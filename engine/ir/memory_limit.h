// A guard against hostile or absurd shapes: an allocation larger than this machine's
// physical memory is refused up front with an error naming what asked for it. Without it,
// Linux overcommit lets a multi-terabyte malloc "succeed" and the first write kills the process.
#pragma once
#include <cstddef>
#include <string>

#include "engine/ir/shape.h"

namespace fb {

size_t physical_memory_bytes();

// Throws Error("<what> needs N bytes, more than this machine's memory (M bytes)").
void check_allocation(size_t bytes, const std::string& what);

// Bytes of a tensor of `shape` with `element_size`-byte elements; throws Error naming the
// shape when the count overflows 64 bits.
size_t checked_tensor_bytes(const Shape& shape, size_t element_size);

}  // namespace fb
