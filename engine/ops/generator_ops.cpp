// Ops that make a tensor from parameters rather than from an input's elements: Range,
// ConstantOfShape, Size, OneHot, EyeLike. Where the output shape depends on input values
// that are not build-time constants, shape inference says so (shape_known = false) and
// the kernel sizes the output itself.
#include <cmath>
#include <cstring>

#include "engine/ops/typed_kernels.h"

namespace fb {

namespace {

// ---- Range ------------------------------------------------------------------------------------
int64_t range_count(const Tensor& start, const Tensor& limit, const Tensor& delta) {
  const double s = start.scalar_as_double(), l = limit.scalar_as_double(), d = delta.scalar_as_double();
  if (d == 0) throw Error("delta is 0");
  const double n = std::ceil((l - s) / d);
  if (n > double(int64_t(1) << 40)) throw Error("Range would have " + std::to_string(n) + " elements");
  return std::max<int64_t>(0, int64_t(n));
}

std::vector<ValueInfo> infer_range(const ShapeContext& c) {
  const DType t = c.in(0).dtype;
  if (c.in(1).dtype != t || c.in(2).dtype != t) throw Error("start, limit and delta must have one type");
  const Tensor *s = c.constant_or_null(0), *l = c.constant_or_null(1), *d = c.constant_or_null(2);
  if (!s || !l || !d) return {ValueInfo{t, {}, false}};
  return {ValueInfo{t, {range_count(*s, *l, *d)}, true}};
}

void compute_range(OpContext& c) {
  const int64_t n = range_count(c.in(0), c.in(1), c.in(2));
  if (!c.out(0).defined()) c.out(0) = Tensor::empty(c.in(0).dtype(), {n});
  visit_dtype(c.in(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      throw Error("Range on bool is not supported");
    } else {
      // start + i * delta, as the ONNX definition's loop accumulates it.
      const T start = c.in(0).data<T>()[0], delta = c.in(2).data<T>()[0];
      T* o = c.out(0).data<T>();
      T v = start;
      for (int64_t i = 0; i < n; ++i, v = T(v + delta)) o[i] = v;
    }
  });
}

// ---- ConstantOfShape ----------------------------------------------------------------------------
Tensor fill_value(const Node& n) {
  if (const Tensor* v = n.has_attr("value") ? n.attr_tensor("value") : nullptr) {
    if (v->numel() != 1) throw Error("value must hold one element, it holds " + std::to_string(v->numel()));
    return *v;
  }
  return Tensor(DType::Float32, {1});  // default: float32 zero
}

Shape shape_from(const Tensor& t) {
  Shape s = t.as_int64_vector();
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0) throw Error("negative dimension in shape " + shape_str(s));
    if (d && n > (int64_t(1) << 40) / d) throw Error("shape " + shape_str(s) + " is too large");
    n *= d;
  }
  return s;
}

std::vector<ValueInfo> infer_constant_of_shape(const ShapeContext& c) {
  const DType t = fill_value(c.node).dtype();
  const Tensor* s = c.constant_or_null(0);
  if (!s) return {ValueInfo{t, {}, false}};
  return {ValueInfo{t, shape_from(*s), true}};
}

// One element, then the filled part copied over the rest, doubling each time (an element
// at a time ran at under 1 GB/s).
void fill_bytes(Tensor& out, const void* value) {
  const size_t es = dtype_size(out.dtype()), total = size_t(out.numel()) * es;
  auto* d = static_cast<std::byte*>(out.raw());
  if (total == 0) return;
  std::memcpy(d, value, es);
  for (size_t done = es; done < total; done *= 2) std::memcpy(d + done, d, std::min(done, total - done));
}

void compute_constant_of_shape(OpContext& c) {
  const Tensor v = fill_value(c.node);
  if (!c.out(0).defined()) c.out(0) = Tensor::empty(v.dtype(), shape_from(c.in(0)));
  fill_bytes(c.out(0), v.raw());
}

// ---- Size -----------------------------------------------------------------------------------------
std::vector<ValueInfo> infer_size(const ShapeContext& c) { return {ValueInfo{DType::Int64, {}, true}}; }
void compute_size(OpContext& c) { c.out(0).data<int64_t>()[0] = c.in(0).numel(); }

// ---- OneHot: indices, depth, values = [off, on]; the one-hot axis is inserted at `axis` ----------
int64_t onehot_depth(const Tensor& depth) {
  const double d = depth.scalar_as_double();
  if (d < 1 || d > double(int64_t(1) << 32)) throw Error("depth " + std::to_string(d) + " is out of range");
  return int64_t(d);
}

std::vector<ValueInfo> infer_onehot(const ShapeContext& c) {
  const ValueInfo &idx = c.in(0), &values = c.in(2);
  if (shape_numel(values.shape) != 2) throw Error("values must hold two elements [off, on]");
  const int64_t out_rank = int64_t(idx.shape.size()) + 1;
  const int64_t axis = normalize_axis(c.node.attr_int("axis", -1), out_rank);
  const Tensor* depth = c.constant_or_null(1);
  if (!depth) return {ValueInfo{values.dtype, {}, false}};
  Shape out = idx.shape;
  out.insert(out.begin() + axis, onehot_depth(*depth));
  return {ValueInfo{values.dtype, out, true}};
}

void compute_onehot(OpContext& c) {
  const Tensor& idx_t = c.in(0);
  const int64_t depth = onehot_depth(c.in(1));
  const Tensor& values = c.in(2);
  const int64_t out_rank = idx_t.rank() + 1;
  const int64_t axis = normalize_axis(c.node.attr_int("axis", -1), out_rank);
  if (!c.out(0).defined()) {
    Shape s = idx_t.shape();
    s.insert(s.begin() + axis, depth);
    c.out(0) = Tensor::empty(values.dtype(), s);
  }
  Tensor& out = c.out(0);
  const size_t es = dtype_size(values.dtype());
  const auto* vals = static_cast<const std::byte*>(values.raw());
  fill_bytes(out, vals);  // "off" everywhere first
  // Indices may be any numeric type; they are read as doubles and truncated.
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= idx_t.shape()[d];
  for (int64_t d = axis; d < idx_t.rank(); ++d) inner *= idx_t.shape()[d];
  auto* o = static_cast<std::byte*>(out.raw());
  visit_dtype(idx_t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* ix = idx_t.data<T>();
    for (int64_t a = 0; a < outer; ++a)
      for (int64_t b = 0; b < inner; ++b) {
        int64_t i = int64_t(double(ix[a * inner + b]));
        if (i < 0) i += depth;
        if (i < 0 || i >= depth) continue;  // out of range: the whole row stays "off"
        std::memcpy(o + size_t((a * depth + i) * inner + b) * es, vals + es, es);
      }
  });
}

// ---- EyeLike --------------------------------------------------------------------------------------
std::vector<ValueInfo> infer_eyelike(const ShapeContext& c) {
  if (c.in(0).shape.size() != 2) throw Error("input must be 2-D, got " + shape_str(c.in(0).shape));
  const DType t = c.node.has_attr("dtype") ? static_cast<DType>(c.node.attr_int("dtype", 1)) : c.in(0).dtype;
  if (dtype_size(t) == 0) throw Error("dtype " + dtype_name(t) + " is not supported");
  return {ValueInfo{t, c.in(0).shape, true}};
}

void compute_eyelike(OpContext& c) {
  Tensor& out = c.out(0);
  std::memset(out.raw(), 0, out.nbytes());
  const int64_t k = c.node.attr_int("k", 0), rows = out.shape()[0], cols = out.shape()[1];
  visit_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* o = out.data<T>();
    for (int64_t i = 0; i < rows; ++i)
      if (i + k >= 0 && i + k < cols) o[i * cols + i + k] = T(1);
  });
}

}  // namespace

void register_generator_ops(OpRegistry& r) {
  r.add(with_shape_inputs(OpDef{"", "Range", infer_range, compute_range}, {0, 1, 2}));
  r.add(with_shape_inputs(OpDef{"", "ConstantOfShape", infer_constant_of_shape, compute_constant_of_shape}, {0}));
  r.add(OpDef{"", "Size", infer_size, compute_size});
  r.add(with_shape_inputs(OpDef{"", "OneHot", infer_onehot, compute_onehot}, {1}));  // depth
  r.add(OpDef{"", "EyeLike", infer_eyelike, compute_eyelike});
}

}  // namespace fb
