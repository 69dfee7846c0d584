// A dense copy that reads its source through strides: Transpose's kernel, and Einsum's
// permutes of its operands into and out of a batched matrix product.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/ir/tensor.h"

namespace fb {

// dst (dense, out_shape) = src read with src_stride[d] elements per step of output dim d.
// elem_size is the element's size in bytes; rows run in parallel with oneTBB.
void copy_strided(const void* src, const std::vector<int64_t>& src_stride, const Shape& out_shape, size_t elem_size,
                  void* dst);

}  // namespace fb
