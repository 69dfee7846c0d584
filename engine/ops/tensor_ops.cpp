// Ops that cut, replicate or mask whole tensors: Split, Expand, Tile, Trilu. They move
// elements by size (any element type), never by value.
#include <cstring>

#include "engine/ops/typed_kernels.h"

namespace fb {

namespace {

// ---- Split: sizes from the attribute (opset < 13) or input 1, else equal parts ---------------
std::vector<int64_t> split_sizes(const Node& n, const Tensor* split_input, int64_t dim, size_t outputs) {
  std::vector<int64_t> sizes;
  if (split_input) sizes = split_input->as_int64_vector();
  else if (n.has_attr("split")) sizes = n.attr_ints("split");
  if (sizes.empty()) {
    const int64_t parts = n.attr_int("num_outputs", int64_t(outputs));
    if (parts <= 0) throw Error("cannot split into " + std::to_string(parts) + " parts");
    // Opset 18's num_outputs allows a smaller last part; otherwise the parts must be equal.
    if (!n.has_attr("num_outputs") && dim % parts)
      throw Error("axis of size " + std::to_string(dim) + " does not split into " + std::to_string(parts) + " equal parts");
    const int64_t chunk = (dim + parts - 1) / parts;
    for (int64_t i = 0, left = dim; i < parts; ++i, left -= chunk) sizes.push_back(std::max<int64_t>(0, std::min(chunk, left)));
  }
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) throw Error("negative split size " + std::to_string(s));
    total += s;
  }
  if (total != dim) throw Error("split sizes sum to " + std::to_string(total) + ", the axis has " + std::to_string(dim));
  if (sizes.size() != outputs)
    throw Error(std::to_string(sizes.size()) + " split sizes for " + std::to_string(outputs) + " outputs");
  return sizes;
}

std::vector<ValueInfo> infer_split(const ShapeContext& c) {
  const ValueInfo& x = c.in(0);
  const int64_t axis = normalize_axis(c.node.attr_int("axis", 0), int64_t(x.shape.size()));
  const Tensor* split = c.has_input(1) ? &c.constant(1, "split") : nullptr;
  std::vector<ValueInfo> r;
  for (int64_t s : split_sizes(c.node, split, x.shape[axis], c.node.outputs.size())) {
    Shape sh = x.shape;
    sh[axis] = s;
    r.push_back(ValueInfo{x.dtype, sh, true});
  }
  return r;
}

void compute_split(OpContext& c) {
  const Tensor& x = c.in(0);
  const int64_t axis = normalize_axis(c.node.attr_int("axis", 0), x.rank());
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape()[d];
  const size_t in_row = outer ? x.nbytes() / size_t(outer) : 0;
  const auto* src = static_cast<const std::byte*>(x.raw());
  size_t col = 0;
  for (size_t k = 0; k < c.outputs.size(); ++k) {
    if (!c.outputs[k]) continue;
    Tensor& o = c.out(k);
    const size_t out_row = outer ? o.nbytes() / size_t(outer) : 0;
    auto* dst = static_cast<std::byte*>(o.raw());
    for (int64_t r = 0; r < outer; ++r) std::memcpy(dst + r * out_row, src + r * in_row + col, out_row);
    col += out_row;
  }
}

// ---- Expand: bidirectional broadcast of the input to a shape --------------------------------
std::vector<ValueInfo> infer_expand(const ShapeContext& c) {
  const Shape target = c.constant(1, "shape").as_int64_vector();
  return {ValueInfo{c.in(0).dtype, broadcast_shapes(c.in(0).shape, target), true}};
}

template <typename W>
void broadcast_words(const Tensor& in, Tensor& out) {
  BroadcastPlan plan(out.shape(), {in.shape()});
  const W* pi = static_cast<const W*>(in.raw());
  W* po = static_cast<W*>(out.raw());
  const int64_t inner = plan.inner(), s = plan.inner_stride(0);
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, plan.rows(), parallel_grain(inner)),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      for (int64_t row = r.begin(); row < r.end(); ++row) {
                        const W* ri = pi + plan.row_offset(0, row);
                        W* ro = po + row * inner;
                        for (int64_t i = 0; i < inner; ++i) ro[i] = ri[i * s];
                      }
                    });
}

void compute_expand(OpContext& c) {
  switch (dtype_size(c.in(0).dtype())) {
    case 1: return broadcast_words<uint8_t>(c.in(0), c.out(0));
    case 2: return broadcast_words<uint16_t>(c.in(0), c.out(0));
    case 4: return broadcast_words<uint32_t>(c.in(0), c.out(0));
    case 8: return broadcast_words<uint64_t>(c.in(0), c.out(0));
    default: throw Error("element type " + dtype_name(c.in(0).dtype()) + " is not supported");
  }
}

// ---- Tile -----------------------------------------------------------------------------------
std::vector<ValueInfo> infer_tile(const ShapeContext& c) {
  const ValueInfo& x = c.in(0);
  const std::vector<int64_t> reps = c.constant(1, "repeats").as_int64_vector();
  if (reps.size() != x.shape.size())
    throw Error(std::to_string(reps.size()) + " repeats for an input of rank " + std::to_string(x.shape.size()));
  Shape out = x.shape;
  for (size_t d = 0; d < out.size(); ++d) {
    if (reps[d] < 0) throw Error("negative repeat " + std::to_string(reps[d]));
    out[d] *= reps[d];
  }
  return {ValueInfo{x.dtype, out, true}};
}

void compute_tile(OpContext& c) {
  const Tensor& x = c.in(0);
  Tensor& out = c.out(0);
  const Shape& is = x.shape();
  const Shape& os = out.shape();
  const int64_t rank = x.rank();
  const auto in_strides = shape_strides(is);
  const size_t es = dtype_size(x.dtype());
  const auto* src = static_cast<const std::byte*>(x.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  const int64_t inner = rank ? os[rank - 1] : 1;
  const int64_t rows = inner ? out.numel() / inner : 0;
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, rows, parallel_grain(inner)), [&](const tbb::blocked_range<int64_t>& r) {
    for (int64_t row = r.begin(); row < r.end(); ++row) {
      int64_t rem = row, off = 0;
      for (int64_t d = rank - 1; d-- > 0;) {
        off += (rem % os[d]) % is[d] * in_strides[d];
        rem /= os[d];
      }
      std::byte* o = dst + size_t(row * inner) * es;
      const int64_t w = rank ? is[rank - 1] : 1;
      for (int64_t i = 0; i < inner; i += w) std::memcpy(o + size_t(i) * es, src + size_t(off) * es, size_t(w) * es);
    }
  });
}

// ---- Trilu: keep the upper (j - i >= k) or lower (j - i <= k) triangle of the last two dims --
std::vector<ValueInfo> infer_trilu(const ShapeContext& c) {
  if (c.in(0).shape.size() < 2) throw Error("input must have rank >= 2, got " + shape_str(c.in(0).shape));
  return same_as_input0(c);
}

void compute_trilu(OpContext& c) {
  const Tensor& x = c.in(0);
  const int64_t k = c.has_input(1) ? int64_t(c.in(1).as_int64_vector().at(0)) : 0;
  const bool upper = c.node.attr_int("upper", 1) != 0;
  const int64_t rows = x.shape()[x.rank() - 2], cols = x.shape()[x.rank() - 1];
  const int64_t mats = rows != 0 && cols != 0 ? x.numel() / (rows * cols) : 0;
  const size_t es = dtype_size(x.dtype());
  const auto* src = static_cast<const std::byte*>(x.raw());
  auto* dst = static_cast<std::byte*>(c.out(0).raw());
  for (int64_t m = 0; m < mats; ++m)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        const size_t off = size_t((m * rows + i) * cols + j) * es;
        const bool keep = upper ? j - i >= k : j - i <= k;
        if (keep) std::memcpy(dst + off, src + off, es);
        else std::memset(dst + off, 0, es);
      }
}

}  // namespace

void register_tensor_ops(OpRegistry& r) {
  r.add(with_shape_inputs(OpDef{"", "Split", infer_split, compute_split}, {1}));  // split (opset 13)
  r.add(with_shape_inputs(OpDef{"", "Expand", infer_expand, compute_expand}, {1}));
  r.add(with_shape_inputs(OpDef{"", "Tile", infer_tile, compute_tile}, {1}));
  r.add(OpDef{"", "Trilu", infer_trilu, compute_trilu});
}

}  // namespace fb
