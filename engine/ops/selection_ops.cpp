// Ops whose output size depends on the data: NonZero, Compress and Unique. Their shape
// inference reports shape_known = false (a static-shape engine cannot plan them unless
// folded at build time); the kernels size and assign the outputs themselves.
#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>

#include "engine/ops/typed_kernels.h"

namespace fb {

namespace {

// ---- NonZero: [rank, count] int64 coordinates of the non-zero elements, row-major order ------
std::vector<ValueInfo> infer_nonzero(const ShapeContext& c) { return {ValueInfo{DType::Int64, {}, false}}; }

void compute_nonzero(OpContext& c) {
  if (run_widened(c, compute_nonzero)) return;
  const Tensor& x = c.in(0);
  std::vector<int64_t> hits;
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = x.data<T>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i)
      if (p[i] != T(0)) hits.push_back(i);
  });
  const int64_t rank = x.rank(), count = int64_t(hits.size());
  c.out(0) = Tensor::empty(DType::Int64, {rank, count});
  int64_t* o = c.out(0).data<int64_t>();
  const auto strides = shape_strides(x.shape());
  for (int64_t j = 0; j < count; ++j)
    for (int64_t d = 0; d < rank; ++d) o[d * count + j] = hits[j] / strides[d] % x.shape()[d];
}

// ---- Compress: the slices along `axis` (or elements of the flattened input) where the
// condition is true; a condition shorter than the axis drops the rest --------------------------
std::vector<ValueInfo> infer_compress(const ShapeContext& c) {
  if (c.in(1).dtype != DType::Bool) throw Error("condition must be bool");
  if (c.in(1).shape.size() != 1) throw Error("condition must be 1-D, got " + shape_str(c.in(1).shape));
  if (c.node.has_attr("axis")) normalize_axis(c.node.attr_int("axis", 0), int64_t(c.in(0).shape.size()));
  return {ValueInfo{c.in(0).dtype, {}, false}};
}

void compute_compress(OpContext& c) {
  const Tensor& x = c.in(0);
  const Tensor& cond = c.in(1);
  const bool* keep = cond.data<bool>();
  const bool has_axis = c.node.has_attr("axis");
  const int64_t axis = has_axis ? normalize_axis(c.node.attr_int("axis", 0), x.rank()) : 0;
  const Shape in_shape = has_axis ? x.shape() : Shape{x.numel()};
  const int64_t dim = in_shape[axis];
  if (cond.numel() > dim)
    throw Error("condition has " + std::to_string(cond.numel()) + " entries, the axis only " + std::to_string(dim));
  std::vector<int64_t> picked;
  for (int64_t i = 0; i < cond.numel(); ++i)
    if (keep[i]) picked.push_back(i);
  Shape out_shape = in_shape;
  out_shape[axis] = int64_t(picked.size());
  c.out(0) = Tensor::empty(x.dtype(), out_shape);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= in_shape[d];
  for (size_t d = size_t(axis) + 1; d < in_shape.size(); ++d) inner *= in_shape[d];
  const size_t es = dtype_size(x.dtype()), block = size_t(inner) * es;
  const auto* src = static_cast<const std::byte*>(x.raw());
  auto* dst = static_cast<std::byte*>(c.out(0).raw());
  for (int64_t o = 0; o < outer; ++o)
    for (size_t j = 0; j < picked.size(); ++j)
      std::memcpy(dst + (size_t(o) * picked.size() + j) * block, src + size_t(o * dim + picked[j]) * block, block);
}

// ---- Unique: distinct elements (or slices along `axis`), sorted or in first-seen order,
// with the index of each first occurrence, the inverse map, and the counts -----------------------
std::vector<ValueInfo> infer_unique(const ShapeContext& c) {
  if (c.node.has_attr("axis")) normalize_axis(c.node.attr_int("axis", 0), int64_t(c.in(0).shape.size()));
  std::vector<ValueInfo> r{ValueInfo{c.in(0).dtype, {}, false}};
  for (size_t i = 1; i < std::min<size_t>(4, c.node.outputs.size()); ++i) r.push_back(ValueInfo{DType::Int64, {}, false});
  return r;
}

template <typename T>
void unique_typed(OpContext& c) {
  const Tensor& x = c.in(0);
  const bool has_axis = c.node.has_attr("axis"), sorted = c.node.attr_int("sorted", 1) != 0;
  const int64_t axis = has_axis ? normalize_axis(c.node.attr_int("axis", 0), x.rank()) : 0;
  const Shape in_shape = has_axis ? x.shape() : Shape{x.numel()};
  const int64_t dim = in_shape[axis];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= in_shape[d];
  for (size_t d = size_t(axis) + 1; d < in_shape.size(); ++d) inner *= in_shape[d];
  // Slice s of the axis, as a flat vector of its outer*inner elements.
  const T* p = x.data<T>();
  std::vector<std::vector<T>> slices(static_cast<size_t>(dim));
  for (int64_t s = 0; s < dim; ++s)
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) slices[s].push_back(p[(o * dim + s) * inner + i]);
  // First occurrences in input order, then (optionally) sorted by value.
  std::vector<int64_t> firsts, slot(static_cast<size_t>(dim)), inverse(static_cast<size_t>(dim)), counts;
  std::map<std::vector<T>, int64_t> seen;  // slice -> its position in `firsts`
  for (int64_t s = 0; s < dim; ++s) {
    auto [it, fresh] = seen.emplace(slices[s], int64_t(firsts.size()));
    if (fresh) {
      firsts.push_back(s);
      counts.push_back(0);
    }
    slot[s] = it->second;
    ++counts[it->second];
  }
  std::vector<size_t> order(firsts.size());
  std::iota(order.begin(), order.end(), 0);
  if (sorted)
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return slices[firsts[a]] < slices[firsts[b]]; });
  std::vector<int64_t> rank_of(firsts.size());
  for (size_t r = 0; r < order.size(); ++r) rank_of[order[r]] = int64_t(r);
  for (int64_t s = 0; s < dim; ++s) inverse[s] = rank_of[slot[s]];
  const int64_t n = int64_t(firsts.size());
  Shape ys = in_shape;
  ys[axis] = n;
  c.out(0) = Tensor::empty(x.dtype(), ys);
  T* y = c.out(0).data<T>();
  for (int64_t r = 0; r < n; ++r) {
    const std::vector<T>& sl = slices[firsts[order[r]]];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) y[(o * n + r) * inner + i] = sl[o * inner + i];
  }
  auto put = [&](size_t k, const std::vector<int64_t>& v) {
    if (k >= c.outputs.size() || !c.outputs[k]) return;
    c.out(k) = Tensor::empty(DType::Int64, {int64_t(v.size())});
    std::copy(v.begin(), v.end(), c.out(k).data<int64_t>());
  };
  std::vector<int64_t> idx_out, cnt_out;
  for (size_t r = 0; r < order.size(); ++r) {
    idx_out.push_back(firsts[order[r]]);
    cnt_out.push_back(counts[order[r]]);
  }
  put(1, idx_out);
  put(2, inverse);
  put(3, cnt_out);
}

void compute_unique(OpContext& c) {
  visit_dtype(c.in(0).dtype(), [&](auto tag) { unique_typed<decltype(tag)>(c); });
}

}  // namespace

void register_selection_ops(OpRegistry& r) {
  r.add(OpDef{"", "NonZero", infer_nonzero, compute_nonzero});
  r.add(OpDef{"", "Compress", infer_compress, compute_compress});
  r.add(OpDef{"", "Unique", infer_unique, compute_unique});
}

}  // namespace fb
