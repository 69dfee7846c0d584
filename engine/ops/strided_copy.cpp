#include "engine/ops/strided_copy.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>

namespace fb {

void copy_strided(const void* src, const std::vector<int64_t>& src_stride, const Shape& out_shape, size_t elem_size,
                  void* dst) {
  const int64_t rank = int64_t(out_shape.size());
  const auto* in = static_cast<const std::byte*>(src);
  auto* out = static_cast<std::byte*>(dst);
  const int64_t inner = rank ? out_shape[rank - 1] : 1;
  const int64_t rows = inner ? shape_numel(out_shape) / inner : 0;
  const int64_t inner_stride = rank ? src_stride[rank - 1] : 1;
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(inner, 1))),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      for (int64_t row = r.begin(); row < r.end(); ++row) {
                        int64_t rem = row, off = 0;
                        for (int64_t d = rank - 1; d-- > 0;) {
                          off += (rem % out_shape[d]) * src_stride[d];
                          rem /= out_shape[d];
                        }
                        std::byte* o = out + size_t(row * inner) * elem_size;
                        if (inner_stride == 1) {
                          std::memcpy(o, in + size_t(off) * elem_size, size_t(inner) * elem_size);
                        } else if (elem_size == 4) {
                          const float* s = reinterpret_cast<const float*>(in) + off;
                          float* of = reinterpret_cast<float*>(o);
                          for (int64_t i = 0; i < inner; ++i) of[i] = s[i * inner_stride];
                        } else {
                          for (int64_t i = 0; i < inner; ++i)
                            std::memcpy(o + size_t(i) * elem_size, in + size_t(off + i * inner_stride) * elem_size, elem_size);
                        }
                      }
                    });
}

}  // namespace fb
