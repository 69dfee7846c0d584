// Small tensors written out by hand in tests, and their elements read back.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "engine/ir/tensor.h"

namespace fb::test {

template <typename T>
Tensor make(Shape shape, std::vector<T> values) {
  Tensor t(dtype_of<T>(), shape);
  EXPECT_EQ(int64_t(values.size()), t.numel());
  std::copy(values.begin(), values.end(), t.data<T>());
  return t;
}

template <typename T>
std::vector<T> values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

}  // namespace fb::test
