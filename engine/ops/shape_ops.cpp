// Ops that move or reinterpret data without arithmetic: Reshape, Flatten, Squeeze,
// Unsqueeze, Identity, Dropout (inference), Transpose, Concat, Gather, Shape, Constant,
// Slice. The reinterpreting ones are marked alias_input0, so the engine aliases
// their output to their input instead of copying.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>

#include "engine/ops/op_registry.h"
#include "engine/ops/strided_copy.h"

namespace fb {

namespace {

void copy_input0(OpContext& c) {
  if (c.out(0).raw() != c.in(0).raw()) std::memcpy(c.out(0).raw(), c.in(0).raw(), c.in(0).nbytes());
}

// ---- Reshape ---------------------------------------------------------------------------
std::vector<ValueInfo> infer_reshape(const ShapeContext& c) {
  const ValueInfo& x = c.in(0);
  std::vector<int64_t> target = c.constant(1, "shape").as_int64_vector();
  const bool allowzero = c.node.attr_int("allowzero", 0) != 0;
  int64_t known = 1, infer_at = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && !allowzero) {
      if (i >= x.shape.size()) throw Error("shape entry " + std::to_string(i) + " is 0 but the input has rank " + std::to_string(x.shape.size()));
      target[i] = x.shape[i];
    }
    if (target[i] == -1) {
      if (infer_at >= 0) throw Error("more than one -1 in the target shape");
      infer_at = int64_t(i);
    } else if (target[i] < 0) {
      throw Error("invalid target shape entry " + std::to_string(target[i]));
    } else if (__builtin_mul_overflow(known, target[i], &known)) {  // a hostile shape: never wrap around to a match
      throw Error("cannot reshape " + shape_str(x.shape) + " to " + shape_str(target) + ": its element count overflows 64 bits");
    }
  }
  const int64_t total = shape_numel(x.shape);
  if (infer_at >= 0) {
    if (known == 0 || total % known) throw Error("cannot reshape " + shape_str(x.shape) + " to " + shape_str(target));
    target[infer_at] = total / known;
  } else if (known != total) {
    throw Error("cannot reshape " + shape_str(x.shape) + " to " + shape_str(target));
  }
  return {ValueInfo{x.dtype, target, true}};
}

// ---- Flatten ---------------------------------------------------------------------------
std::vector<ValueInfo> infer_flatten(const ShapeContext& c) {
  const ValueInfo& x = c.in(0);
  const int64_t rank = int64_t(x.shape.size());
  int64_t axis = c.node.attr_int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) throw Error("axis out of range");
  int64_t a = 1, b = 1;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? a : b) *= x.shape[d];
  return {ValueInfo{x.dtype, {a, b}, true}};
}

// ---- Squeeze / Unsqueeze: axes from the attribute (opset < 13) or input 1 ----------------
std::vector<int64_t> axes_of(const ShapeContext& c) {
  if (c.has_input(1)) return c.constant(1, "axes").as_int64_vector();
  return c.node.attr_ints("axes");
}

std::vector<ValueInfo> infer_squeeze(const ShapeContext& c) {
  const ValueInfo& x = c.in(0);
  const int64_t rank = int64_t(x.shape.size());
  std::vector<int64_t> axes = axes_of(c);
  std::vector<bool> drop(rank, false);
  if (axes.empty()) {
    for (int64_t d = 0; d < rank; ++d) drop[d] = x.shape[d] == 1;
  } else {
    for (int64_t a : axes) {
      int64_t d = normalize_axis(a, rank);
      if (x.shape[d] != 1) throw Error("cannot squeeze axis " + std::to_string(a) + " of size " + std::to_string(x.shape[d]));
      drop[d] = true;
    }
  }
  Shape out;
  for (int64_t d = 0; d < rank; ++d)
    if (!drop[d]) out.push_back(x.shape[d]);
  return {ValueInfo{x.dtype, out, true}};
}

std::vector<ValueInfo> infer_unsqueeze(const ShapeContext& c) {
  const ValueInfo& x = c.in(0);
  std::vector<int64_t> axes = axes_of(c);
  const int64_t out_rank = int64_t(x.shape.size() + axes.size());
  std::vector<bool> inserted(out_rank, false);
  for (int64_t a : axes) {
    int64_t d = normalize_axis(a, out_rank);
    if (inserted[d]) throw Error("axis " + std::to_string(a) + " repeated");
    inserted[d] = true;
  }
  Shape out;
  size_t j = 0;
  for (int64_t d = 0; d < out_rank; ++d) out.push_back(inserted[d] ? 1 : x.shape[j++]);
  return {ValueInfo{x.dtype, out, true}};
}

std::vector<ValueInfo> infer_identity(const ShapeContext& c) { return {ValueInfo{c.in(0).dtype, c.in(0).shape, true}}; }

std::vector<ValueInfo> infer_dropout(const ShapeContext& c) {
  std::vector<ValueInfo> r{ValueInfo{c.in(0).dtype, c.in(0).shape, true}};
  if (c.node.outputs.size() > 1) r.push_back(ValueInfo{DType::Bool, c.in(0).shape, true});
  return r;
}

// Inference Dropout is the identity with an all-true mask. Training mode (input 2, opset
// 12+) with a non-zero ratio would need random numbers no test can reproduce: an Error.
void compute_dropout(OpContext& c) {
  if (c.has_input(2) && c.in(2).scalar_as_double() != 0.0) {
    const double ratio = c.has_input(1) ? c.in(1).scalar_as_double() : 0.5;
    if (ratio != 0.0) throw Error("training-mode Dropout (random) is not supported");
  }
  copy_input0(c);
  if (c.outputs.size() > 1 && c.outputs[1]) std::memset(c.out(1).raw(), 1, c.out(1).nbytes());  // mask: all kept
}

// ---- Transpose ---------------------------------------------------------------------------
std::vector<int64_t> perm_of(const Node& n, int64_t rank) {
  std::vector<int64_t> perm = n.attr_ints("perm");
  if (perm.empty())
    for (int64_t d = rank; d-- > 0;) perm.push_back(d);
  if (int64_t(perm.size()) != rank) throw Error("perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(rank));
  std::vector<bool> seen(rank, false);
  for (int64_t& p : perm) {
    p = normalize_axis(p, rank);
    if (seen[p]) throw Error("perm repeats axis " + std::to_string(p));
    seen[p] = true;
  }
  return perm;
}

std::vector<ValueInfo> infer_transpose(const ShapeContext& c) {
  const ValueInfo& x = c.in(0);
  auto perm = perm_of(c.node, int64_t(x.shape.size()));
  Shape out;
  for (int64_t p : perm) out.push_back(x.shape[p]);
  return {ValueInfo{x.dtype, out, true}};
}

// fusebench.ChannelsLastView(x) with attribute shape: a channels-last tensor's bytes read
// as the plain tensor of that shape, as the layout pass leaves a Transpose [N, C, d...] →
// [N, d..., C] of one, or ViT's patch flattening, Reshape [N, C, H·W] then Transpose to
// [N, H·W, C] (engine/passes/conv_layout_propagation.cpp): the bytes are already in the
// output's order, so the engine aliases them.
std::vector<ValueInfo> infer_channels_last_view(const ShapeContext& c) {
  const ValueInfo& x = c.in(0);
  const Shape out = c.node.attr_ints("shape");
  if (shape_numel(out) != shape_numel(x.shape))
    throw Error("shape " + shape_str(out) + " does not hold the input's " + std::to_string(shape_numel(x.shape)) + " elements");
  return {ValueInfo{x.dtype, out, true}};
}

void compute_transpose(OpContext& c) {
  const Tensor& x = c.in(0);
  const int64_t rank = x.rank();
  auto perm = perm_of(c.node, rank);
  auto in_strides = shape_strides(x.shape());
  std::vector<int64_t> src_stride(rank);  // input stride for each output dim
  for (int64_t d = 0; d < rank; ++d) src_stride[d] = in_strides[perm[d]];
  copy_strided(x.raw(), src_stride, c.out(0).shape(), dtype_size(x.dtype()), c.out(0).raw());
}

// ---- Concat -------------------------------------------------------------------------------
std::vector<ValueInfo> infer_concat(const ShapeContext& c) {
  const ValueInfo& first = c.in(0);
  const int64_t rank = int64_t(first.shape.size());
  const int64_t axis = normalize_axis(c.node.attr_int("axis", 0), rank);
  Shape out = first.shape;
  out[axis] = 0;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const ValueInfo& v = c.in(i);
    if (int64_t(v.shape.size()) != rank || v.dtype != first.dtype) throw Error("inputs differ in rank or type");
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && v.shape[d] != first.shape[d]) throw Error("input " + std::to_string(i) + " has shape " + shape_str(v.shape) + ", expected " + shape_str(first.shape) + " outside axis " + std::to_string(axis));
    out[axis] += v.shape[axis];
  }
  return {ValueInfo{first.dtype, out, true}};
}

void compute_concat(OpContext& c) {
  Tensor& out = c.out(0);
  const int64_t rank = out.rank();
  const int64_t axis = normalize_axis(c.node.attr_int("axis", 0), rank);
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= out.shape()[d];
  const size_t es = dtype_size(out.dtype());
  const size_t out_row = size_t(out.numel() / std::max<int64_t>(outer, 1)) * es;
  auto* o = static_cast<std::byte*>(out.raw());
  size_t col = 0;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const Tensor& t = c.in(i);
    const size_t in_row = size_t(t.numel() / std::max<int64_t>(outer, 1)) * es;
    const auto* src = static_cast<const std::byte*>(t.raw());
    for (int64_t r = 0; r < outer; ++r) std::memcpy(o + r * out_row + col, src + r * in_row, in_row);
    col += in_row;
  }
}

// ---- Gather (axis) -------------------------------------------------------------------------
std::vector<ValueInfo> infer_gather(const ShapeContext& c) {
  const ValueInfo& x = c.in(0);
  const ValueInfo& idx = c.in(1);
  const int64_t axis = normalize_axis(c.node.attr_int("axis", 0), int64_t(x.shape.size()));
  Shape out(x.shape.begin(), x.shape.begin() + axis);
  out.insert(out.end(), idx.shape.begin(), idx.shape.end());
  out.insert(out.end(), x.shape.begin() + axis + 1, x.shape.end());
  return {ValueInfo{x.dtype, out, true}};
}

void compute_gather(OpContext& c) {
  const Tensor& x = c.in(0);
  std::vector<int64_t> idx = c.in(1).as_int64_vector();
  const int64_t axis = normalize_axis(c.node.attr_int("axis", 0), x.rank());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape()[d];
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.shape()[d];
  const int64_t dim = x.shape()[axis];
  const size_t es = dtype_size(x.dtype()), block = size_t(inner) * es;
  const auto* src = static_cast<const std::byte*>(x.raw());
  auto* dst = static_cast<std::byte*>(c.out(0).raw());
  for (int64_t& i : idx) {
    if (i < -dim || i >= dim) throw Error("index " + std::to_string(i) + " is out of range for axis of size " + std::to_string(dim));
    if (i < 0) i += dim;
  }
  for (int64_t o = 0; o < outer; ++o)
    for (size_t j = 0; j < idx.size(); ++j)
      std::memcpy(dst + (o * idx.size() + j) * block, src + (o * dim + idx[j]) * block, block);
}

// ---- Shape, Constant -----------------------------------------------------------------
std::vector<ValueInfo> infer_shape_op(const ShapeContext& c) {
  const int64_t rank = int64_t(c.in(0).shape.size());
  int64_t start = c.node.attr_int("start", 0), end = c.node.attr_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  return {ValueInfo{DType::Int64, {std::max<int64_t>(0, end - start)}, true}};
}

void compute_shape_op(OpContext& c) {
  const Shape& s = c.in(0).shape();
  const int64_t rank = int64_t(s.size());
  int64_t start = c.node.attr_int("start", 0);
  if (start < 0) start += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  int64_t* o = c.out(0).data<int64_t>();
  for (int64_t i = 0; i < c.out(0).numel(); ++i) o[i] = s[start + i];
}

// Constant's value in any of its attribute forms (value, value_float(s), value_int(s)),
Tensor constant_value(const Node& n) {
  if (const Tensor* t = n.has_attr("value") ? n.attr_tensor("value") : nullptr) return *t;
  if (n.has_attr("value_float")) {
    Tensor t(DType::Float32, {});
    t.data<float>()[0] = n.attr_float("value_float", 0.f);
    return t;
  }
  if (n.has_attr("value_int")) {
    Tensor t(DType::Int64, {});
    t.data<int64_t>()[0] = n.attr_int("value_int", 0);
    return t;
  }
  if (n.has_attr("value_floats")) {
    std::vector<float> v = n.attr_floats("value_floats");
    Tensor t(DType::Float32, {int64_t(v.size())});
    std::copy(v.begin(), v.end(), t.data<float>());
    return t;
  }
  if (n.has_attr("value_ints")) {
    std::vector<int64_t> v = n.attr_ints("value_ints");
    Tensor t(DType::Int64, {int64_t(v.size())});
    std::copy(v.begin(), v.end(), t.data<int64_t>());
    return t;
  }
  for (const char* k : {"value_string", "value_strings", "sparse_value"})
    if (n.has_attr(k)) throw Error(std::string("Constant with attribute '") + k + "' is not supported");
  throw Error("Constant has no value attribute");
}

std::vector<ValueInfo> infer_constant(const ShapeContext& c) {
  const Tensor t = constant_value(c.node);
  return {ValueInfo{t.dtype(), t.shape(), true}};
}

void compute_constant(OpContext& c) {
  const Tensor t = constant_value(c.node);
  if (t.nbytes()) std::memcpy(c.out(0).raw(), t.raw(), t.nbytes());
}

// ---- Slice (opset >= 10: starts, ends, axes, steps as inputs) --------------------------------
struct SliceParams { Shape out; std::vector<int64_t> start, step; };

SliceParams slice_params(const Shape& in, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                         std::vector<int64_t> axes, std::vector<int64_t> steps) {
  const int64_t rank = int64_t(in.size());
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    throw Error("starts, ends, axes and steps differ in length");
  SliceParams p{in, std::vector<int64_t>(rank, 0), std::vector<int64_t>(rank, 1)};
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t d = normalize_axis(axes[i], rank), dim = in[d], step = steps[i];
    if (step == 0) throw Error("slice step is 0");
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      p.out[d] = e > s ? (e - s + step - 1) / step : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      p.out[d] = s > e ? (s - e - step - 1) / -step : 0;
    }
    p.start[d] = s;
    p.step[d] = step;
  }
  return p;
}

std::vector<int64_t> optional_ints(const ShapeContext& c, size_t i, const char* what) {
  return c.has_input(i) ? c.constant(i, what).as_int64_vector() : std::vector<int64_t>{};
}

SliceParams slice_params_for(const ShapeContext& c) {
  if (c.node.opset != 0 && c.node.opset < 10)
    return slice_params(c.in(0).shape, c.node.attr_ints("starts"), c.node.attr_ints("ends"), c.node.attr_ints("axes"), {});
  return slice_params(c.in(0).shape, c.constant(1, "starts").as_int64_vector(), c.constant(2, "ends").as_int64_vector(),
                      optional_ints(c, 3, "axes"), optional_ints(c, 4, "steps"));
}

std::vector<ValueInfo> infer_slice(const ShapeContext& c) { return {ValueInfo{c.in(0).dtype, slice_params_for(c).out, true}}; }

void compute_slice(OpContext& c) {
  std::vector<ValueInfo> infos;
  ShapeContext sc{c.node, {}, c.inputs};
  for (const Tensor* t : c.inputs) infos.push_back(t ? ValueInfo{t->dtype(), t->shape(), true} : ValueInfo{});
  for (size_t i = 0; i < c.inputs.size(); ++i) sc.inputs.push_back(c.inputs[i] ? &infos[i] : nullptr);
  SliceParams p = slice_params_for(sc);
  const Tensor& x = c.in(0);
  const int64_t rank = x.rank();
  const auto in_strides = shape_strides(x.shape());
  const size_t es = dtype_size(x.dtype());
  const auto* in = static_cast<const std::byte*>(x.raw());
  auto* out = static_cast<std::byte*>(c.out(0).raw());
  const int64_t n = c.out(0).numel();
  if (n == 0) return;
  if (rank == 0) return std::memcpy(out, in, es), void();
  // Output rows along the last axis: one memcpy per row where that axis steps by 1 (a
  // fused QKV projection sliced into Q, K and V copies 256-float rows), in parallel.
  const int64_t inner = p.out[size_t(rank - 1)], rows = n / inner, step = p.step[size_t(rank - 1)];
  const int64_t first = p.start[size_t(rank - 1)] * in_strides[size_t(rank - 1)];
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, rows, std::max<int64_t>(1, 16384 / inner)), [&](const tbb::blocked_range<int64_t>& r) {
    for (int64_t row = r.begin(); row < r.end(); ++row) {
      int64_t off = first;
      for (int64_t d = rank - 2, rest = row; d >= 0; --d) {
        off += (p.start[size_t(d)] + rest % p.out[size_t(d)] * p.step[size_t(d)]) * in_strides[size_t(d)];
        rest /= p.out[size_t(d)];
      }
      std::byte* dst = out + size_t(row * inner) * es;
      const std::byte* src = in + size_t(off) * es;
      if (step == 1) {
        std::memcpy(dst, src, size_t(inner) * es);
        continue;
      }
      for (int64_t j = 0; j < inner; ++j) std::memcpy(dst + size_t(j) * es, src + j * step * int64_t(es), es);  // step may be < 0
    }
  });
}

}  // namespace

void register_shape_ops(OpRegistry& r) {
  r.add(with_shape_inputs(OpDef{"", "Reshape", infer_reshape, copy_input0, false, true}, {1}));
  r.add(OpDef{"", "Flatten", infer_flatten, copy_input0, false, true});
  r.add(with_shape_inputs(OpDef{"", "Squeeze", infer_squeeze, copy_input0, false, true}, {1}));  // axes (opset 13)
  r.add(with_shape_inputs(OpDef{"", "Unsqueeze", infer_unsqueeze, copy_input0, false, true}, {1}));
  r.add(OpDef{"", "Identity", infer_identity, copy_input0, false, true});
  r.add(OpDef{"", "Dropout", infer_dropout, compute_dropout});
  r.add(OpDef{"", "Transpose", infer_transpose, compute_transpose});
  r.add(OpDef{"fusebench", "ChannelsLastView", infer_channels_last_view, copy_input0, false, true});
  r.add(OpDef{"", "Concat", infer_concat, compute_concat});
  r.add(OpDef{"", "Gather", infer_gather, compute_gather});
  r.add(OpDef{"", "Shape", infer_shape_op, compute_shape_op});
  r.add(OpDef{"", "Constant", infer_constant, compute_constant});
  r.add(with_shape_inputs(OpDef{"", "Slice", infer_slice, compute_slice}, {1, 2, 3, 4}));  // starts, ends, axes, steps
}

}  // namespace fb
