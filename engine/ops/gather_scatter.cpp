// Index-driven gathers and scatters: GatherElements, GatherND (batch_dims),
// ScatterElements (and its deprecated name Scatter) and ScatterND, with the reduction
// attribute (none, add, mul, max, min). Every index is range-checked (negative ones count
// from the end) before use: a bad index is an Error naming the node, never a stray read.
#include <algorithm>
#include <cstring>

#include "engine/ops/typed_kernels.h"

namespace fb {

namespace {

int64_t checked_index(int64_t i, int64_t dim) {
  if (i < -dim || i >= dim)
    throw Error("index " + std::to_string(i) + " is out of range for an axis of size " + std::to_string(dim));
  return i < 0 ? i + dim : i;
}

// Checks every index against an axis of size `dim` in one pass (an Error naming the first
// bad one), so that the loops using them need no branch: wrapped(i) then adds the size
// to negative ones.
void check_indices(const int64_t* idx, size_t n, int64_t dim) {
  int64_t lo = 0, hi = 0;
  for (size_t i = 0; i < n; ++i) lo = std::min(lo, idx[i]), hi = std::max(hi, idx[i]);
  if (n && (lo < -dim || hi >= dim))
    for (size_t i = 0; i < n; ++i) checked_index(idx[i], dim);
}
inline int64_t wrapped(int64_t i, int64_t dim) { return i + (i < 0 ? dim : 0); }

// A tensor's indices as int64: read in place when they are int64 already (a gather or
// scatter over millions of elements otherwise spends as long copying them as using them).
class IndexValues {
 public:
  explicit IndexValues(const Tensor& t) {
    if (t.dtype() != DType::Int64 && t.dtype() != DType::Int32)
      throw Error("indices must be int32 or int64, got " + dtype_name(t.dtype()));
    if (t.dtype() == DType::Int32) converted_ = t.as_int64_vector();
    data_ = t.dtype() == DType::Int64 ? t.data<int64_t>() : converted_.data();
    size_ = size_t(t.numel());
  }
  int64_t operator[](size_t i) const { return data_[i]; }
  const int64_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  std::vector<int64_t> converted_;
  const int64_t* data_ = nullptr;
  size_t size_ = 0;
};

// Calls f(i, base, count, step) for each run of a tensor shaped `idx_shape` along its last
// dimension: its elements i .. i+count-1 have, in a tensor of the same rank with strides
// `data_strides`, the flat offsets base + j * step of the same coordinates but with the
// `axis` coordinate 0 (the caller adds its own). Offsets are carried from one run to the
// next, not recomputed by division, and a run is one tight loop in the caller.
template <typename F>
void walk_axis_runs(const Shape& idx_shape, const std::vector<int64_t>& data_strides, int64_t axis, F f) {
  const size_t rank = idx_shape.size();
  const int64_t n = shape_numel(idx_shape);
  if (n == 0) return;
  if (rank == 0) return f(int64_t(0), int64_t(0), int64_t(1), int64_t(0));
  const int64_t inner = idx_shape[rank - 1];
  const int64_t inner_step = int64_t(rank - 1) == axis ? 0 : data_strides[rank - 1];
  std::vector<int64_t> coord(rank - 1, 0);
  int64_t base = 0;
  for (int64_t i = 0; i < n; i += inner) {
    f(i, base, inner, inner_step);
    for (size_t d = rank - 1; d-- > 0;) {
      const int64_t step = int64_t(d) == axis ? 0 : data_strides[d];
      if (++coord[d] < idx_shape[d]) {
        base += step;
        break;
      }
      base -= (idx_shape[d] - 1) * step;
      coord[d] = 0;
    }
  }
}

// Calls f(U{}) with an unsigned type of `bytes` bytes, for copying elements of any dtype.
template <typename F>
void visit_element_bytes(size_t bytes, F f) {
  switch (bytes) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    case 8: return f(uint64_t{});
  }
  throw Error("elements of " + std::to_string(bytes) + " bytes are not supported");
}

// GatherElements/ScatterElements: indices of the data's rank, no longer than the data in any
// dimension but `axis` (PyTorch's rule; a longer one would reach past the data's rows).
void check_elements_indices(const Shape& data, const Shape& idx, int64_t axis) {
  if (data.size() != idx.size()) throw Error("data and indices must have the same rank");
  for (size_t d = 0; d < data.size(); ++d)
    if (int64_t(d) != axis && data[d] >= 0 && idx[d] > data[d])
      throw Error("indices " + shape_str(idx) + " are longer than the data " + shape_str(data) + " in dimension " + std::to_string(d));
}

// ---- GatherElements ----------------------------------------------------------------------------
std::vector<ValueInfo> infer_gather_elements(const ShapeContext& c) {
  const ValueInfo &x = c.in(0), &idx = c.in(1);
  check_elements_indices(x.shape, idx.shape, normalize_axis(c.node.attr_int("axis", 0), int64_t(x.shape.size())));
  return {ValueInfo{x.dtype, idx.shape, true}};
}

void compute_gather_elements(OpContext& c) {
  const Tensor& x = c.in(0);
  const IndexValues idx(c.in(1));
  const int64_t axis = normalize_axis(c.node.attr_int("axis", 0), x.rank());
  const std::vector<int64_t> strides = shape_strides(x.shape());
  const int64_t dim = x.shape()[axis], axis_stride = strides[size_t(axis)];
  check_indices(idx.data(), idx.size(), dim);
  visit_element_bytes(dtype_size(x.dtype()), [&](auto tag) {
    using U = decltype(tag);
    const U* src = static_cast<const U*>(x.raw());
    U* dst = static_cast<U*>(c.out(0).raw());
    walk_axis_runs(c.in(1).shape(), strides, axis, [&](int64_t i, int64_t base, int64_t count, int64_t step) {
      for (int64_t j = 0; j < count; ++j) dst[i + j] = src[base + j * step + wrapped(idx[size_t(i + j)], dim) * axis_stride];
    });
  });
}

// ---- GatherND ----------------------------------------------------------------------------------
std::vector<ValueInfo> infer_gather_nd(const ShapeContext& c) {
  const ValueInfo &x = c.in(0), &idx = c.in(1);
  const int64_t b = c.node.attr_int("batch_dims", 0);
  const int64_t r = int64_t(x.shape.size()), q = int64_t(idx.shape.size());
  if (q < 1 || b < 0 || b >= std::min(r, q)) throw Error("batch_dims " + std::to_string(b) + " does not fit the ranks");
  const int64_t k = idx.shape.back();
  if (k < 1 || k > r - b) throw Error("index tuples of length " + std::to_string(k) + " do not fit data of rank " + std::to_string(r));
  for (int64_t d = 0; d < b; ++d)
    if (x.shape[d] != idx.shape[d]) throw Error("batch dimensions of data and indices differ");
  Shape out(idx.shape.begin(), idx.shape.end() - 1);
  out.insert(out.end(), x.shape.begin() + b + k, x.shape.end());
  return {ValueInfo{x.dtype, out, true}};
}

void compute_gather_nd(OpContext& c) {
  const Tensor& x = c.in(0);
  const IndexValues idx(c.in(1));
  const Shape& xs = x.shape();
  const Shape& is = c.in(1).shape();
  const int64_t b = c.node.attr_int("batch_dims", 0), k = is.back();
  int64_t batches = 1;
  for (int64_t d = 0; d < b; ++d) batches *= xs[d];
  const auto strides = shape_strides(xs);
  const int64_t batch_stride = b ? strides[b - 1] : 0;
  int64_t slice = 1;  // elements per gathered slice
  for (size_t d = size_t(b + k); d < xs.size(); ++d) slice *= xs[d];
  const int64_t tuples = int64_t(idx.size()) / k, per_batch = batches ? tuples / batches : 0;
  const size_t es = dtype_size(x.dtype()), bytes = size_t(slice) * es;
  const auto* src = static_cast<const std::byte*>(x.raw());
  auto* dst = static_cast<std::byte*>(c.out(0).raw());
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = per_batch ? (t / per_batch) * batch_stride : 0;
    for (int64_t j = 0; j < k; ++j) off += checked_index(idx[t * k + j], xs[b + j]) * strides[b + j];
    std::memcpy(dst + size_t(t) * bytes, src + size_t(off) * es, bytes);
  }
}

// ---- Scatter reductions --------------------------------------------------------------------------
enum class Reduction { None, Add, Mul, Max, Min };

Reduction reduction_of(const Node& n) {
  const std::string r = n.attr_string("reduction", "none");
  if (r == "none") return Reduction::None;
  if (r == "add") return Reduction::Add;
  if (r == "mul") return Reduction::Mul;
  if (r == "max") return Reduction::Max;
  if (r == "min") return Reduction::Min;
  throw Error("unknown reduction '" + r + "'");
}

template <typename T>
void combine(T& dst, T v, Reduction r) {
  switch (r) {
    case Reduction::None: dst = v; break;
    case Reduction::Add: dst = T(dst + v); break;
    case Reduction::Mul: dst = T(dst * v); break;
    case Reduction::Max: dst = std::max(dst, v); break;
    case Reduction::Min: dst = std::min(dst, v); break;
  }
}

// ---- ScatterElements ------------------------------------------------------------------------------
std::vector<ValueInfo> infer_scatter_elements(const ShapeContext& c) {
  const ValueInfo &x = c.in(0), &idx = c.in(1), &upd = c.in(2);
  if (idx.shape != upd.shape) throw Error("indices " + shape_str(idx.shape) + " and updates " + shape_str(upd.shape) + " differ");
  if (x.dtype != upd.dtype) throw Error("data and updates types differ");
  check_elements_indices(x.shape, idx.shape, normalize_axis(c.node.attr_int("axis", 0), int64_t(x.shape.size())));
  return same_as_input0(c);
}

void compute_scatter_elements(OpContext& c) {
  if (run_widened(c, compute_scatter_elements)) return;
  const Tensor &x = c.in(0), &upd = c.in(2);
  const IndexValues idx(c.in(1));
  const int64_t axis = normalize_axis(c.node.attr_int("axis", 0), x.rank());
  const Reduction red = reduction_of(c.node);
  const std::vector<int64_t> strides = shape_strides(x.shape());
  std::memcpy(c.out(0).raw(), x.raw(), x.nbytes());
  const int64_t dim = x.shape()[axis], axis_stride = strides[size_t(axis)];
  check_indices(idx.data(), idx.size(), dim);
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* o = c.out(0).data<T>();
    const T* u = upd.data<T>();
    walk_axis_runs(c.in(1).shape(), strides, axis, [&](int64_t i, int64_t base, int64_t count, int64_t step) {
      if (red == Reduction::None)  // the common case, kept free of combine's switch
        for (int64_t j = 0; j < count; ++j) o[base + j * step + wrapped(idx[size_t(i + j)], dim) * axis_stride] = u[i + j];
      else
        for (int64_t j = 0; j < count; ++j) combine(o[base + j * step + wrapped(idx[size_t(i + j)], dim) * axis_stride], u[i + j], red);
    });
  });
}

// ---- ScatterND ------------------------------------------------------------------------------------
std::vector<ValueInfo> infer_scatter_nd(const ShapeContext& c) {
  const ValueInfo &x = c.in(0), &idx = c.in(1), &upd = c.in(2);
  if (idx.shape.empty()) throw Error("indices must have rank >= 1");
  const int64_t k = idx.shape.back();
  if (k < 1 || k > int64_t(x.shape.size())) throw Error("index tuples of length " + std::to_string(k) + " do not fit the data");
  Shape expect(idx.shape.begin(), idx.shape.end() - 1);
  expect.insert(expect.end(), x.shape.begin() + k, x.shape.end());
  if (upd.shape != expect) throw Error("updates must have shape " + shape_str(expect) + ", got " + shape_str(upd.shape));
  if (x.dtype != upd.dtype) throw Error("data and updates types differ");
  return same_as_input0(c);
}

void compute_scatter_nd(OpContext& c) {
  if (run_widened(c, compute_scatter_nd)) return;
  const Tensor &x = c.in(0), &upd = c.in(2);
  const IndexValues idx(c.in(1));
  const int64_t k = c.in(1).shape().back();
  const Reduction red = reduction_of(c.node);
  const auto strides = shape_strides(x.shape());
  int64_t slice = 1;
  for (size_t d = size_t(k); d < x.shape().size(); ++d) slice *= x.shape()[d];
  std::memcpy(c.out(0).raw(), x.raw(), x.nbytes());
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* o = c.out(0).data<T>();
    const T* u = upd.data<T>();
    for (int64_t t = 0, tuples = int64_t(idx.size()) / k; t < tuples; ++t) {
      int64_t off = 0;
      for (int64_t j = 0; j < k; ++j) off += checked_index(idx[t * k + j], x.shape()[j]) * strides[j];
      for (int64_t e = 0; e < slice; ++e) combine(o[off + e], u[t * slice + e], red);
    }
  });
}

}  // namespace

void register_gather_scatter_ops(OpRegistry& r) {
  r.add(OpDef{"", "GatherElements", infer_gather_elements, compute_gather_elements});
  r.add(OpDef{"", "GatherND", infer_gather_nd, compute_gather_nd});
  r.add(OpDef{"", "ScatterElements", infer_scatter_elements, compute_scatter_elements});
  r.add(OpDef{"", "Scatter", infer_scatter_elements, compute_scatter_elements});
  r.add(OpDef{"", "ScatterND", infer_scatter_nd, compute_scatter_nd});
}

}  // namespace fb
