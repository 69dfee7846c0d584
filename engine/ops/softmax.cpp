// Softmax and LogSoftmax. From opset 13 they normalize along one axis (default -1);
// before that the input is coerced to 2-D at `axis` (default 1) and normalized per row.
#include <tbb/parallel_for.h>

#include <cmath>

#include "engine/ops/fast_math.h"
#include "engine/ops/half_float.h"
#include "engine/ops/op_registry.h"
#include "engine/ops/softmax_row.h"

namespace fb {

namespace {

std::vector<ValueInfo> infer_softmax(const ShapeContext& c) {
  if (c.in(0).dtype != DType::Float32) throw Error("input type " + dtype_name(c.in(0).dtype) + " is not supported");
  return {ValueInfo{c.in(0).dtype, c.in(0).shape, true}};
}

// Normalizes `len` contiguous elements (the common last-axis case), vectorized.
void softmax_contiguous(const float* in, float* out, int64_t len, bool log) {
  const float mx = softmax_row_max(in, len);
  if (!log) return scale_row(out, len, 1.f / softmax_exp_row(in, out, len, mx));
  float sum = 0.f;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < len; ++i) sum += softmax_exp(in[i] - mx);
  const float lse = mx + std::log(sum);
#pragma omp simd
  for (int64_t i = 0; i < len; ++i) out[i] = in[i] - lse;
}

// Normalizes `len` elements at stride `stride` starting at in/out. softmax_exp, as in the
// contiguous case: a masked (-1e4, -inf) term is exactly 0, never a denormal.
void softmax_run(const float* in, float* out, int64_t len, int64_t stride, bool log) {
  if (stride == 1) return softmax_contiguous(in, out, len, log);
  float mx = -INFINITY;
  for (int64_t i = 0; i < len; ++i) mx = std::max(mx, in[i * stride]);
  float sum = 0.f;
  if (log) {
    for (int64_t i = 0; i < len; ++i) sum += softmax_exp(in[i * stride] - mx);
    const float lse = std::log(sum);
    for (int64_t i = 0; i < len; ++i) out[i * stride] = in[i * stride] - mx - lse;
    return;
  }
  for (int64_t i = 0; i < len; ++i) {
    float e = softmax_exp(in[i * stride] - mx);
    out[i * stride] = e;
    sum += e;
  }
  const float inv = 1.f / sum;
  for (int64_t i = 0; i < len; ++i) out[i * stride] *= inv;
}

void compute_softmax(OpContext& c) {
  const Tensor& x = c.in(0);
  const Shape& s = x.shape();
  const int64_t rank = x.rank();
  const bool log = c.node.op_type == "LogSoftmax";
  int64_t outer = 1, len = 1, inner = 1;
  if (rank == 0) {
    len = 1;
  } else if (c.node.opset >= 13 || c.node.opset == 0) {
    int64_t axis = normalize_axis(c.node.attr_int("axis", -1), rank);
    for (int64_t d = 0; d < rank; ++d) (d < axis ? outer : d == axis ? len : inner) *= s[d];
  } else {
    int64_t axis = normalize_axis(c.node.attr_int("axis", 1), rank);
    for (int64_t d = 0; d < rank; ++d) (d < axis ? outer : len) *= s[d];
  }
  if (is_half_type(x.dtype())) {
    // A bf16/fp16 layer's softmax over rows (the engine takes it only over the innermost
    // axis): a row at a time through float32 buffers that stay in L1, so the layer moves
    // 16-bit tensors and computes in float32.
    if (inner != 1 || c.out(0).dtype() != x.dtype()) throw Error("a 16-bit softmax runs over contiguous rows of one type");
    const auto* in = static_cast<const uint16_t*>(x.raw());
    auto* out = static_cast<uint16_t*>(c.out(0).raw());
    const DType t = x.dtype();
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, outer, std::max<int64_t>(1, 4096 / std::max<int64_t>(len, 1))),
                      [&](const tbb::blocked_range<int64_t>& r) {
                        std::vector<float> buf(size_t(2 * len));
                        for (int64_t row = r.begin(); row < r.end(); ++row) {
                          widen_16(t, in + row * len, buf.data(), len);
                          softmax_contiguous(buf.data(), buf.data() + len, len, log);
                          narrow_16(t, buf.data() + len, out + row * len, len);
                        }
                      });
    return;
  }
  const float* in = x.data<float>();
  float* out = c.out(0).data<float>();
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, outer * inner, std::max<int64_t>(1, 4096 / std::max<int64_t>(len, 1))),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      for (int64_t idx = r.begin(); idx < r.end(); ++idx) {
                        int64_t o = idx / inner, i = idx % inner;
                        softmax_run(in + o * len * inner + i, out + o * len * inner + i, len, inner, log);
                      }
                    });
}

}  // namespace

void register_softmax_ops(OpRegistry& r) {
  r.add(OpDef{"", "Softmax", infer_softmax, compute_softmax});
  r.add(OpDef{"", "LogSoftmax", infer_softmax, compute_softmax});
}

}  // namespace fb
