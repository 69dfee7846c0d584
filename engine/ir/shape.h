// Static tensor shapes and the small helpers every op needs (element counts, strides,
// axis normalization, numpy broadcasting).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace fb {

using Shape = std::vector<int64_t>;

int64_t shape_numel(const Shape& s);
std::vector<int64_t> shape_strides(const Shape& s);  // row-major, in elements
std::string shape_str(const Shape& s);               // "[2,3,4]"
// Maps a possibly negative axis into [0, rank); throws fb::Error when out of range.
int64_t normalize_axis(int64_t axis, int64_t rank);
// Numpy multidirectional broadcast of two shapes; throws fb::Error when incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b);

}  // namespace fb
