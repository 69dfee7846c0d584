// Pad (constant, reflect, edge; negative pads crop). From opset 11 the pads and the
// constant value are inputs, before that attributes. Any element type: elements move as
// bytes, so only the constant's bytes need the element type.
#include <algorithm>
#include <cstring>

#include "engine/ops/nn_common.h"
#include "engine/ops/pad.h"

namespace fb {

namespace {

std::vector<int64_t> pads_of(const Node& n, int64_t rank, const Tensor* pads_input) {
  std::vector<int64_t> pads = (n.opset != 0 && n.opset < 11) ? n.attr_ints("pads") : (pads_input ? pads_input->as_int64_vector()
                                                                                                   : std::vector<int64_t>{});
  if (int64_t(pads.size()) != 2 * rank)
    throw Error(n.describe() + ": pads has " + std::to_string(pads.size()) + " entries, expected " + std::to_string(2 * rank));
  return pads;
}

std::string pad_mode(const Node& n) {
  std::string m = n.attr_string("mode", "constant");
  if (m != "constant" && m != "reflect" && m != "edge") throw Error(n.describe() + ": unsupported mode '" + m + "'");
  return m;
}

std::vector<ValueInfo> infer_pad(const ShapeContext& c) {
  const ValueInfo& x = c.in(0);
  if (dtype_size(x.dtype) == 0) throw Error(c.node.describe() + ": input type " + dtype_name(x.dtype) + " is not supported");
  const int64_t rank = int64_t(x.shape.size());
  const bool old = c.node.opset != 0 && c.node.opset < 11;
  std::vector<int64_t> pads = pads_of(c.node, rank, old ? nullptr : &c.constant(1, "pads"));
  const std::string mode = pad_mode(c.node);
  Shape out = x.shape;
  for (int64_t d = 0; d < rank; ++d) {
    out[d] += pads[d] + pads[d + rank];
    if (out[d] < 0) throw Error(c.node.describe() + ": pads crop dimension " + std::to_string(d) + " below zero");
    if (mode == "reflect" && (pads[d] >= x.shape[d] || pads[d + rank] >= x.shape[d]) && (pads[d] > 0 || pads[d + rank] > 0))
      throw Error(c.node.describe() + ": reflect pads must be smaller than the dimension (" + std::to_string(x.shape[d]) + ")");
    if (mode != "constant" && x.shape[d] == 0 && out[d] > 0)
      throw Error(c.node.describe() + ": cannot " + mode + "-pad an empty dimension");
  }
  return {ValueInfo{x.dtype, out, true}};
}


void compute_pad(OpContext& c) {
  const Tensor& x = c.in(0);
  const int64_t rank = x.rank();
  const bool old = c.node.opset != 0 && c.node.opset < 11;
  std::vector<int64_t> pads = pads_of(c.node, rank, old ? nullptr : &c.in(1));
  const std::string mode = pad_mode(c.node);
  Tensor& y = c.out(0);
  const size_t es = dtype_size(x.dtype());
  // The constant as the element's bytes.
  std::vector<std::byte> value(es, std::byte{0});
  if (old) {
    const float v = c.node.attr_float("value", 0.f);
    if (x.dtype() == DType::Float32) std::memcpy(value.data(), &v, es);
  } else if (c.has_input(2) && c.in(2).numel() > 0) {
    if (c.in(2).dtype() != x.dtype()) throw Error("constant_value must have the input's type");
    std::memcpy(value.data(), c.in(2).raw(), es);
  }
  const Shape& out = y.shape();
  std::vector<std::vector<int64_t>> map(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d)
    for (int64_t o = 0; o < out[d]; ++o) map[d].push_back(pad_source_index(o, pads[d], x.shape()[d], mode));
  const auto in_str = shape_strides(x.shape());
  const auto* src = static_cast<const std::byte*>(x.raw());
  auto* dst = static_cast<std::byte*>(y.raw());
  const int64_t inner = rank ? out[rank - 1] : 1;
  const int64_t rows = inner ? y.numel() / inner : 0;
  const bool zero = std::all_of(value.begin(), value.end(), [](std::byte b) { return b == std::byte{0}; });
  auto fill = [&](std::byte* o, int64_t count) {
    if (zero) std::memset(o, 0, size_t(count) * es);
    else
      for (int64_t w = 0; w < count; ++w) std::memcpy(o + w * es, value.data(), es);
  };
  // In constant mode a row's input elements are one run: [run_begin, run_end) of the
  // output, read from run_begin - pads_before on (elements moved one by one ran at 4 GB/s).
  const int64_t before = rank ? pads[size_t(rank - 1)] : 0;
  const int64_t run_begin = std::clamp<int64_t>(before, 0, inner);
  const int64_t run_end = std::clamp<int64_t>(before + (rank ? x.shape()[rank - 1] : 1), run_begin, inner);
  const bool runs = mode == "constant" && rank > 0;
  parallel_range(rows, inner, [&](int64_t lo, int64_t hi) {
    for (int64_t row = lo; row < hi; ++row) {
      int64_t rem = row, off = 0;
      bool constant = false;
      for (int64_t d = rank - 1; d-- > 0;) {
        const int64_t i = map[d][rem % out[d]];
        rem /= out[d];
        if (i < 0) constant = true;
        else off += i * in_str[d];
      }
      std::byte* o = dst + size_t(row * inner) * es;
      if (constant) {
        fill(o, inner);
      } else if (runs) {
        fill(o, run_begin);
        std::memcpy(o + run_begin * es, src + size_t(off + run_begin - before) * es, size_t(run_end - run_begin) * es);
        fill(o + run_end * es, inner - run_end);
      } else {
        for (int64_t w = 0; w < inner; ++w) {
          const int64_t i = rank ? map[rank - 1][w] : 0;
          if (i < 0) std::memcpy(o + w * es, value.data(), es);
          else std::memcpy(o + w * es, src + size_t(off + i) * es, es);
        }
      }
    }
  });
}

}  // namespace

int64_t pad_source_index(int64_t o, int64_t before, int64_t n, const std::string& mode) {
  int64_t i = o - before;
  if (i >= 0 && i < n) return i;
  if (mode == "constant") return -1;
  if (mode == "edge") return std::clamp<int64_t>(i, 0, n - 1);
  if (n == 1) return 0;
  const int64_t period = 2 * (n - 1);  // reflect without repeating the edge
  i = ((i % period) + period) % period;
  return i < n ? i : period - i;
}

// pads and axes decide the shape; constant_value (2) does not.
void register_pad_ops(OpRegistry& r) { r.add(with_shape_inputs(OpDef{"", "Pad", infer_pad, compute_pad}, {1, 3})); }

}  // namespace fb
