// Numpy-style broadcasting as a loop plan. Adjacent dimensions that broadcast the same
// way in every input are merged first, so [B,S,H] + [H] runs as rows of H with one
// contiguous inner loop; each input then has an inner stride of 0 (broadcast) or 1.
#pragma once
#include <vector>

#include "engine/ir/shape.h"

namespace fb {

class BroadcastPlan {
 public:
  BroadcastPlan(const Shape& out, const std::vector<Shape>& inputs);

  int64_t rows() const { return rows_; }
  int64_t inner() const { return inner_; }
  // Inner-loop stride (0 or 1) of input i.
  int64_t inner_stride(size_t i) const { return inner_stride_[i]; }
  // Element offset of row `row` in input i.
  int64_t row_offset(size_t i, int64_t row) const;

 private:
  Shape outer_;                              // merged dims except the innermost
  std::vector<std::vector<int64_t>> strides_;  // per input, per outer dim
  std::vector<int64_t> inner_stride_;
  int64_t rows_ = 1, inner_ = 1;
};

}  // namespace fb
