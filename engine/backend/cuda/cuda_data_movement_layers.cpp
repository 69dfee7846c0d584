// The CUDA layers of the data-movement ops: Transpose, Concat, Split, Slice, Expand, Tile,
// fusebench.ChannelShuffle, DepthToSpace, SpaceToDepth and Dropout are strided copies; Gather,
// GatherElements, Pad, Trilu and Resize/Upsample have kernels of their own; Shape, Size,
// Constant, ConstantOfShape and Range (layers only where nothing folded them: fusion level
// none) are values computed at build time. Attributes, opset rules and defaults follow the
// CPU definitions in engine/ops/ (shape_ops, tensor_ops, gather_scatter, pad, space_depth,
// fused_ops, resize, generator_ops); output shapes are final, so only what the shapes do not
// say (offsets, steps, pads, index tables) is worked out here, once, at construction.
#include <algorithm>
#include <cstring>

#include "engine/backend/cuda/cuda_layer_table.h"
#include "engine/backend/cuda/data_movement_kernels.h"
#include "engine/ops/half_float.h"
#include "engine/ops/pad.h"
#include "engine/ops/resize.h"

namespace fb::cuda {

namespace {

PrecisionSet moves_bytes(const Node&) { return {Precision::FP32, Precision::FP16, Precision::BF16}; }

const Tensor& input(const LayerRequest& r, size_t i) {
  if (i >= r.inputs.size() || !r.inputs[i]) throw Error("input " + std::to_string(i) + " is missing");
  return *r.inputs[i];
}
Tensor& output(const LayerRequest& r, size_t i) {
  if (i >= r.outputs.size() || !r.outputs[i]) throw Error("output " + std::to_string(i) + " is missing");
  return *r.outputs[i];
}
// The host copy of input i, which must be an initializer (a value the layer needs at build time).
const Tensor* host_constant_or_null(const LayerRequest& r, size_t i) {
  return i < r.host_constants.size() ? r.host_constants[i] : nullptr;
}
const Tensor& host_constant(const LayerRequest& r, size_t i, const char* what) {
  if (const Tensor* t = host_constant_or_null(r, i)) return *t;
  throw Error(std::string("the CUDA layer needs input ") + std::to_string(i) + " (" + what + ") as a build-time constant");
}
bool has_input(const LayerRequest& r, size_t i) { return i < r.inputs.size() && r.inputs[i] != nullptr; }

std::vector<int64_t> byte_offsets(const std::vector<int64_t>& strides, size_t elem) {
  std::vector<int64_t> b;
  for (int64_t s : strides) b.push_back(s * int64_t(elem));
  return b;
}


// ---- strided copies ---------------------------------------------------------------------------
// One box copied from one tensor into another, at byte offsets into each.
struct CopyPiece {
  const Tensor* src;
  int64_t src_offset;
  Tensor* dst;
  int64_t dst_offset;
  StridedCopy copy;
};

class CopyLayer : public CudaLayer {
 public:
  CopyLayer(const CudaContext& ctx, std::string kernel, std::vector<CopyPiece> pieces)
      : CudaLayer(ctx), kernel_(std::move(kernel)), pieces_(std::move(pieces)) {}
  void run() override {
    // raw() is read here, not at construction: the engine rebinds graph inputs per run.
    for (const CopyPiece& p : pieces_)
      launch_strided_copy(p.copy, static_cast<const char*>(p.src->raw()) + p.src_offset,
                          static_cast<char*>(p.dst->raw()) + p.dst_offset, ctx_.stream);
  }
  std::string kernel() const override { return kernel_; }

 private:
  std::string kernel_;
  std::vector<CopyPiece> pieces_;
};

// out (dense) = x read through `src_stride` (elements per step of each output dim), from `offset` elements in.
CopyPiece read_through(const Tensor& x, Tensor& out, const std::vector<int64_t>& dims, const std::vector<int64_t>& src_stride,
                       int64_t offset = 0) {
  const size_t es = dtype_size(x.dtype());
  return {&x, offset * int64_t(es), &out, 0, strided_copy(dims, src_stride, shape_strides(dims), es)};
}

std::unique_ptr<Layer> copy_layer(const CudaContext& ctx, const char* kernel, std::vector<CopyPiece> pieces) {
  return std::make_unique<CopyLayer>(ctx, kernel, std::move(pieces));
}

// Transpose: perm (default: reversed dims) as engine/ops/shape_ops.cpp's perm_of.
std::unique_ptr<Layer> make_transpose(const LayerRequest& r, const CudaContext& ctx) {
  const Tensor& x = input(r, 0);
  Tensor& out = output(r, 0);
  const int64_t rank = x.rank();
  std::vector<int64_t> perm = r.node.attr_ints("perm");
  if (perm.empty())
    for (int64_t d = rank; d-- > 0;) perm.push_back(d);
  if (int64_t(perm.size()) != rank) throw Error("perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(rank));
  const std::vector<int64_t> in_strides = shape_strides(x.shape());
  std::vector<int64_t> src_stride;
  for (int64_t p : perm) src_stride.push_back(in_strides[size_t(normalize_axis(p, rank))]);
  return copy_layer(ctx, "cuda.transpose", {read_through(x, out, out.shape(), src_stride)});
}

// Concat: each input into its place along axis, one copy each.
std::unique_ptr<Layer> make_concat(const LayerRequest& r, const CudaContext& ctx) {
  Tensor& out = output(r, 0);
  const int64_t axis = normalize_axis(r.node.attr_int("axis", 0), out.rank());
  const size_t es = dtype_size(out.dtype());
  const std::vector<int64_t> out_strides = shape_strides(out.shape());
  std::vector<CopyPiece> pieces;
  int64_t at = 0;
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    const Tensor& x = input(r, i);
    pieces.push_back({&x, 0, &out, at * out_strides[size_t(axis)] * int64_t(es),
                      strided_copy(x.shape(), shape_strides(x.shape()), out_strides, es)});
    at += x.shape()[size_t(axis)];
  }
  return copy_layer(ctx, "cuda.concat", std::move(pieces));
}

// Split: each output from its place along axis (the sizes are the outputs' own).
std::unique_ptr<Layer> make_split(const LayerRequest& r, const CudaContext& ctx) {
  const Tensor& x = input(r, 0);
  const int64_t axis = normalize_axis(r.node.attr_int("axis", 0), x.rank());
  const std::vector<int64_t> in_strides = shape_strides(x.shape());
  std::vector<CopyPiece> pieces;
  int64_t at = 0;
  for (size_t k = 0; k < r.outputs.size(); ++k) {
    Tensor& out = output(r, k);
    pieces.push_back(read_through(x, out, out.shape(), in_strides, at * in_strides[size_t(axis)]));
    at += out.shape()[size_t(axis)];
  }
  return copy_layer(ctx, "cuda.split", std::move(pieces));
}

// Slice: per dim the first input index and the step (negative steps walk backwards), clamped
// as engine/ops/shape_ops.cpp's slice_params; opset < 10 takes attributes instead of inputs.
std::unique_ptr<Layer> make_slice(const LayerRequest& r, const CudaContext& ctx) {
  const Tensor& x = input(r, 0);
  Tensor& out = output(r, 0);
  const int64_t rank = x.rank();
  const bool old = r.node.opset != 0 && r.node.opset < 10;
  auto ints = [&](size_t i, const char* what) {
    return has_input(r, i) ? host_constant(r, i, what).as_int64_vector() : std::vector<int64_t>{};
  };
  const std::vector<int64_t> starts = old ? r.node.attr_ints("starts") : ints(1, "starts");
  const std::vector<int64_t> ends = old ? r.node.attr_ints("ends") : ints(2, "ends");
  std::vector<int64_t> axes = old ? r.node.attr_ints("axes") : ints(3, "axes");
  std::vector<int64_t> steps = old ? std::vector<int64_t>{} : ints(4, "steps");
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    throw Error("starts, ends, axes and steps differ in length");
  const std::vector<int64_t> in_strides = shape_strides(x.shape());
  std::vector<int64_t> src_stride = in_strides;
  int64_t offset = 0;
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t d = normalize_axis(axes[i], rank), dim = x.shape()[size_t(d)], step = steps[i];
    if (step == 0) throw Error("slice step is 0");
    int64_t s = starts[i] < 0 ? starts[i] + dim : starts[i];
    s = step > 0 ? std::clamp<int64_t>(s, 0, dim) : std::clamp<int64_t>(s, 0, dim - 1);
    offset += s * in_strides[size_t(d)];
    src_stride[size_t(d)] = step * in_strides[size_t(d)];
  }
  return copy_layer(ctx, "cuda.slice", {read_through(x, out, out.shape(), src_stride, offset)});
}

// Expand: the input's dims aligned right; a dim of 1 under a larger one is read with stride 0.
std::unique_ptr<Layer> make_expand(const LayerRequest& r, const CudaContext& ctx) {
  const Tensor& x = input(r, 0);
  Tensor& out = output(r, 0);
  const std::vector<int64_t> in_strides = shape_strides(x.shape());
  const int64_t lead = out.rank() - x.rank();
  std::vector<int64_t> src_stride(size_t(out.rank()), 0);
  for (int64_t d = 0; d < x.rank(); ++d)
    if (x.shape()[size_t(d)] != 1) src_stride[size_t(lead + d)] = in_strides[size_t(d)];
  return copy_layer(ctx, "cuda.expand", {read_through(x, out, out.shape(), src_stride)});
}

// Tile: output dim d seen as [repeats, input dim d]; the repeat dim reads with stride 0.
std::unique_ptr<Layer> make_tile(const LayerRequest& r, const CudaContext& ctx) {
  const Tensor& x = input(r, 0);
  Tensor& out = output(r, 0);
  const std::vector<int64_t> in_strides = shape_strides(x.shape()), out_strides = shape_strides(out.shape());
  std::vector<int64_t> dims, src, dst;
  for (size_t d = 0; d < size_t(x.rank()); ++d) {
    const int64_t n = x.shape()[d], reps = n ? out.shape()[d] / n : 0;
    dims.insert(dims.end(), {reps, n});
    src.insert(src.end(), {0, in_strides[d]});
    dst.insert(dst.end(), {n * out_strides[d], out_strides[d]});
  }
  const size_t es = dtype_size(x.dtype());
  return copy_layer(ctx, "cuda.tile", {{&x, 0, &out, 0, strided_copy(dims, src, dst, es)}});
}

// ChannelShuffle: output channel k * groups + j is input channel j * (C / groups) + k, so
// the output walks [N, C / groups, groups, H·W] over the input's strides; channels-last
// (x_layout and y_layout), each pixel's channels are shuffled: [N·H·W, C / groups, groups].
std::unique_ptr<Layer> make_channel_shuffle(const LayerRequest& r, const CudaContext& ctx) {
  const Tensor& x = input(r, 0);
  Tensor& out = output(r, 0);
  const Shape& s = x.shape();
  const int64_t groups = r.node.attr_int("groups", 1);
  if (s.size() != 4 || groups < 1 || s[1] % groups) throw Error("ChannelShuffle takes [N, C, H, W] with C divisible by groups");
  const int64_t hw = s[2] * s[3], per_group = s[1] / groups;
  if (r.node.has_attr("y_layout"))
    return copy_layer(ctx, "cuda.channel_shuffle nhwc→nhwc",
                      {read_through(x, out, {s[0] * hw, per_group, groups}, {s[1], 1, per_group})});
  return copy_layer(ctx, "cuda.channel_shuffle",
                    {read_through(x, out, {s[0], per_group, groups, hw}, {s[1] * hw, hw, per_group * hw, 1})});
}

int64_t blocksize(const Node& n) {
  const int64_t b = n.attr_int("blocksize", 0);
  if (b <= 0) throw Error("attribute 'blocksize' must be positive");
  return b;
}

// DepthToSpace: the output [N, Cs, H·b, W·b] walked as [N, Cs, H, b, W, b] (n, c, h, i, w, j)
// reads depth channel (i·b + j)·Cs + c (DCR) or c·b·b + i·b + j (CRD) of the input [N, C, H, W].
std::unique_ptr<Layer> make_depth_to_space(const LayerRequest& r, const CudaContext& ctx) {
  const Tensor& x = input(r, 0);
  Tensor& out = output(r, 0);
  const int64_t b = blocksize(r.node), n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  const int64_t cs = c / (b * b), plane = h * w;
  const bool crd = r.node.attr_string("mode", "DCR") == "CRD";
  const std::vector<int64_t> channel = crd ? std::vector<int64_t>{b * b * plane, b * plane, plane}   // c, i, j
                                           : std::vector<int64_t>{plane, b * cs * plane, cs * plane};
  return copy_layer(ctx, "cuda.depth_to_space",
                    {read_through(x, out, {n, cs, h, b, w, b}, {c * plane, channel[0], w, channel[1], 1, channel[2]})});
}

// SpaceToDepth: the output [N, C·b·b, Hd, Wd] walked as [N, b, b, C, Hd, Wd] (n, i, j, c, h, w)
// reads input [N, C, Hd·b, Wd·b] at (n, c, h·b + i, w·b + j) (depth channel (i·b + j)·C + c).
std::unique_ptr<Layer> make_space_to_depth(const LayerRequest& r, const CudaContext& ctx) {
  const Tensor& x = input(r, 0);
  Tensor& out = output(r, 0);
  const int64_t b = blocksize(r.node), n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  return copy_layer(ctx, "cuda.space_to_depth",
                    {read_through(x, out, {n, b, b, c, h / b, w / b}, {c * h * w, w, 1, h * w, b * w, b})});
}

// Inference Dropout: the input copied, the mask (output 1) all true. Training mode with a
// non-zero ratio is an Error, as on the CPU; here it must be known at build time.
class DropoutLayer : public CopyLayer {
 public:
  DropoutLayer(const CudaContext& ctx, std::vector<CopyPiece> copy, Tensor* mask)
      : CopyLayer(ctx, "cuda.copy", std::move(copy)), mask_(mask) {}
  void run() override {
    CopyLayer::run();
    if (mask_ && mask_->nbytes()) FB_CUDA(cudaMemsetAsync(mask_->raw(), 1, mask_->nbytes(), ctx_.stream));
  }

 private:
  Tensor* mask_;
};

std::unique_ptr<Layer> make_dropout(const LayerRequest& r, const CudaContext& ctx) {
  if (has_input(r, 2) && host_constant(r, 2, "training_mode").scalar_as_double() != 0.0) {
    const double ratio = has_input(r, 1) ? host_constant(r, 1, "ratio").scalar_as_double() : 0.5;
    if (ratio != 0.0) throw Error("training-mode Dropout (random) is not supported");
  }
  const Tensor& x = input(r, 0);
  Tensor& out = output(r, 0);
  Tensor* mask = r.outputs.size() > 1 ? r.outputs[1] : nullptr;
  return std::make_unique<DropoutLayer>(ctx, std::vector<CopyPiece>{read_through(x, out, x.shape(), shape_strides(x.shape()))},
                                        mask);
}

// ---- one kernel on x, a second input and out --------------------------------------------------
using Tables = std::vector<std::shared_ptr<const DeviceMemory>>;  // what a layer keeps alive

// Tables concatenated into one device allocation made at build time; at(i) is table i's address.
template <typename T>
class DeviceTables {
 public:
  explicit DeviceTables(const std::vector<std::vector<T>>& tables) {
    std::vector<T> all;
    for (const std::vector<T>& t : tables) {
      offsets_.push_back(all.size());
      all.insert(all.end(), t.begin(), t.end());
    }
    memory_ = std::make_shared<DeviceMemory>(all.data(), all.size() * sizeof(T));
  }
  const T* at(size_t i) const { return static_cast<const T*>(memory_->data()) + offsets_[i]; }
  std::shared_ptr<const DeviceMemory> memory() const { return memory_; }

 private:
  std::vector<size_t> offsets_;
  std::shared_ptr<DeviceMemory> memory_;
};

// A layer that runs one launch function with arguments fixed at build time on x, an optional
// second input (indices, Pad's constant_value, Trilu's k: null where absent or folded into the
// arguments) and out, keeping alive the device tables its arguments point into.
template <typename Args>
class KernelLayer : public CudaLayer {
 public:
  using Launch = void (*)(const Args&, const void* x, const void* aux, void* out, cudaStream_t);
  KernelLayer(const CudaContext& ctx, const char* name, Launch launch, Args args, const Tensor* x, const Tensor* aux, Tensor* out,
              Tables tables)
      : CudaLayer(ctx), name_(name), launch_(launch), args_(args), x_(x), aux_(aux), out_(out), tables_(std::move(tables)) {}
  void run() override { launch_(args_, x_->raw(), aux_ ? aux_->raw() : nullptr, out_->raw(), ctx_.stream); }
  std::string kernel() const override { return name_; }

 private:
  const char* name_;
  Launch launch_;
  Args args_;
  const Tensor* x_;
  const Tensor* aux_;
  Tensor* out_;
  Tables tables_;
};

template <typename Args>
std::unique_ptr<Layer> kernel_layer(const CudaContext& ctx, const char* name, typename KernelLayer<Args>::Launch launch, Args args,
                                    const Tensor* x, const Tensor* aux, Tensor* out, Tables tables = {}) {
  return std::make_unique<KernelLayer<Args>>(ctx, name, launch, args, x, aux, out, std::move(tables));
}

void check_rank(const Tensor& x) {
  if (x.rank() > kMaxDims) throw Error("rank " + std::to_string(x.rank()) + " is beyond the CUDA kernels' " + std::to_string(kMaxDims));
}

// A gather through per-dim index tables (-1: the fill value) from x into out.
std::unique_ptr<Layer> table_gather_layer(const CudaContext& ctx, const char* name, const std::vector<std::vector<int64_t>>& idx,
                                          uint64_t fill_bits, const Tensor& x, const Tensor* fill, Tensor& out) {
  check_rank(x);
  const DeviceTables<int64_t> tables(idx);
  TableGatherArgs a;
  a.rank = int(x.rank());
  a.elem_bytes = int64_t(dtype_size(x.dtype()));
  a.fill_bits = fill_bits;
  const std::vector<int64_t> strides = shape_strides(x.shape());
  for (int d = 0; d < a.rank; ++d) {
    a.out_dims[d] = out.shape()[size_t(d)];
    a.in_stride[d] = strides[size_t(d)];
    a.idx[d] = tables.at(size_t(d));
  }
  return kernel_layer(ctx, name, launch_table_gather, a, &x, fill, &out, {tables.memory()});
}

// ---- gathers ----------------------------------------------------------------------------------
bool int32_indices(const Tensor& indices) {
  if (indices.dtype() != DType::Int64 && indices.dtype() != DType::Int32)
    throw Error("indices must be int32 or int64, got " + dtype_name(indices.dtype()));
  return indices.dtype() == DType::Int32;
}

// Constant indices are range-checked at build time (an Error naming the bad one, as the CPU
// kernels raise); indices computed at run time cannot be, and out-of-range ones read zeros.
void check_constant_indices(const LayerRequest& r, int64_t dim) {
  const Tensor* idx = host_constant_or_null(r, 1);
  if (!idx) return;
  for (int64_t i : idx->as_int64_vector())
    if (i < -dim || i >= dim) throw Error("index " + std::to_string(i) + " is out of range for an axis of size " + std::to_string(dim));
}

std::unique_ptr<Layer> make_gather(const LayerRequest& r, const CudaContext& ctx) {
  const Tensor& x = input(r, 0);
  const Tensor& indices = input(r, 1);
  const int64_t axis = normalize_axis(r.node.attr_int("axis", 0), x.rank());
  GatherArgs a;
  a.outer = 1;
  int64_t inner = 1;
  for (int64_t d = 0; d < axis; ++d) a.outer *= x.shape()[size_t(d)];
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.shape()[size_t(d)];
  a.dim = x.shape()[size_t(axis)];
  a.count = indices.numel();
  a.inner_bytes = inner * int64_t(dtype_size(x.dtype()));
  a.int32_indices = int32_indices(indices);
  check_constant_indices(r, a.dim);
  return kernel_layer(ctx, "cuda.gather", launch_gather, a, &x, &indices, &output(r, 0));
}

std::unique_ptr<Layer> make_gather_elements(const LayerRequest& r, const CudaContext& ctx) {
  const Tensor& x = input(r, 0);
  const Tensor& indices = input(r, 1);
  check_rank(x);
  GatherElementsArgs a;
  a.rank = int(x.rank());
  a.axis = int(normalize_axis(r.node.attr_int("axis", 0), x.rank()));
  a.elem_bytes = int64_t(dtype_size(x.dtype()));
  a.dim = x.shape()[size_t(a.axis)];
  a.int32_indices = int32_indices(indices);
  const std::vector<int64_t> strides = shape_strides(x.shape());
  for (int d = 0; d < a.rank; ++d) a.dims[d] = indices.shape()[size_t(d)], a.x_stride[d] = strides[size_t(d)];
  check_constant_indices(r, a.dim);
  return kernel_layer(ctx, "cuda.gather_elements", launch_gather_elements, a, &x, &indices, &output(r, 0));
}

// ---- Pad --------------------------------------------------------------------------------------

// From opset 11 pads and constant_value are inputs, before that attributes (engine/ops/pad.cpp).
std::unique_ptr<Layer> make_pad(const LayerRequest& r, const CudaContext& ctx) {
  const Tensor& x = input(r, 0);
  Tensor& out = output(r, 0);
  const int64_t rank = x.rank();
  const bool old = r.node.opset != 0 && r.node.opset < 11;
  const std::vector<int64_t> pads = old ? r.node.attr_ints("pads") : host_constant(r, 1, "pads").as_int64_vector();
  if (int64_t(pads.size()) != 2 * rank)
    throw Error("pads has " + std::to_string(pads.size()) + " entries, expected " + std::to_string(2 * rank));
  const std::string mode = r.node.attr_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge") throw Error("unsupported mode '" + mode + "'");
  std::vector<std::vector<int64_t>> idx(static_cast<size_t>(rank));
  for (size_t d = 0; d < size_t(rank); ++d)
    for (int64_t o = 0; o < out.shape()[d]; ++o) idx[d].push_back(pad_source_index(o, pads[d], x.shape()[d], mode));
  uint64_t bits = 0;
  const Tensor* value = nullptr;  // constant_value computed at run time
  if (old) {
    const float v = r.node.attr_float("value", 0.f);
    if (x.dtype() == DType::Float32) std::memcpy(&bits, &v, sizeof v);  // other types pad with zeros, as on the CPU
  } else if (has_input(r, 2) && input(r, 2).numel() > 0) {
    if (input(r, 2).dtype() != x.dtype()) throw Error("constant_value must have the input's type");
    if (const Tensor* host = host_constant_or_null(r, 2)) std::memcpy(&bits, host->raw(), dtype_size(x.dtype()));
    else value = &input(r, 2);
  }
  return table_gather_layer(ctx, "cuda.pad", idx, bits, x, value, out);
}

// ---- Trilu ------------------------------------------------------------------------------------
std::unique_ptr<Layer> make_trilu(const LayerRequest& r, const CudaContext& ctx) {
  const Tensor& x = input(r, 0);
  if (x.rank() < 2) throw Error("input must have rank >= 2, got " + shape_str(x.shape()));
  TriluArgs a;
  a.rows = x.shape()[size_t(x.rank() - 2)];
  a.cols = x.shape()[size_t(x.rank() - 1)];
  a.mats = a.rows && a.cols ? x.numel() / (a.rows * a.cols) : 0;
  a.elem_bytes = int64_t(dtype_size(x.dtype()));
  a.upper = r.node.attr_int("upper", 1) != 0;
  const Tensor* k = nullptr;
  if (has_input(r, 1)) {
    if (const Tensor* host = host_constant_or_null(r, 1)) a.k = host->as_int64_vector().at(0);
    else if (input(r, 1).dtype() == DType::Int64) k = &input(r, 1);
    else throw Error("k must be int64, got " + dtype_name(input(r, 1).dtype()));
  }
  return kernel_layer(ctx, "cuda.trilu", launch_trilu, a, &x, k, &output(r, 0));
}

// ---- Resize -----------------------------------------------------------------------------------
// The extrapolation value's bytes in dtype `t` (nearest moves elements by size).
uint64_t value_bits(float v, DType t) {
  uint64_t bits = 0;
  auto put = [&](auto x) { std::memcpy(&bits, &x, sizeof x); };
  switch (t) {
    case DType::Float32: put(v); break;
    case DType::Float16: put(float_to_half(v)); break;
    case DType::BFloat16: put(float_to_bfloat16(v)); break;
    case DType::UInt8: put(uint8_t(v)); break;
    case DType::Int8: put(int8_t(v)); break;
    case DType::Int32: put(int32_t(v)); break;
    case DType::Int64: put(int64_t(v)); break;
    default: throw Error("extrapolation into " + dtype_name(t) + " is not supported");
  }
  return bits;
}

// Linear and cubic: every dim's taps in device memory, those of weight 0 left out (a dim
// linear does not resize keeps one tap of its two, so a 4-D image walks 4 taps, not 16).
std::unique_ptr<Layer> weighted_resize_layer(const CudaContext& ctx, const std::vector<ResizeTaps>& taps, const Tensor& x, Tensor& out,
                                             float extrapolation) {
  std::vector<std::vector<int64_t>> ints;  // per dim: start, then idx
  std::vector<std::vector<float>> weights;
  for (const ResizeTaps& t : taps) {
    std::vector<int64_t> start{0}, idx;
    std::vector<float> w;
    for (size_t o = 0; o + 1 < t.start.size(); ++o) {
      for (int64_t k = t.start[o]; k < t.start[o + 1]; ++k) {
        const bool last_chance = k + 1 == t.start[o + 1] && int64_t(idx.size()) == start.back();  // keep one at least
        if (t.w[size_t(k)] != 0.f || last_chance) {
          idx.push_back(t.idx[size_t(k)]);
          w.push_back(t.w[size_t(k)]);
        }
      }
      start.push_back(int64_t(idx.size()));
    }
    ints.push_back(std::move(start));
    ints.push_back(std::move(idx));
    weights.push_back(std::move(w));
  }
  const DeviceTables<int64_t> int_tables(ints);
  const DeviceTables<float> weight_tables(weights);
  ResizeArgs a;
  a.rank = int(taps.size());
  a.elem = elem_of(x);
  a.extrapolation = extrapolation;
  const std::vector<int64_t> strides = shape_strides(x.shape());
  for (int d = 0; d < a.rank; ++d) {
    a.out_dims[d] = out.shape()[size_t(d)];
    a.in_stride[d] = strides[size_t(d)];
    a.start[d] = int_tables.at(size_t(2 * d));
    a.idx[d] = int_tables.at(size_t(2 * d + 1));
    a.w[d] = weight_tables.at(size_t(d));
  }
  auto launch = [](const ResizeArgs& args, const void* in, const void*, void* o, cudaStream_t s) { launch_resize(args, in, o, s); };
  return kernel_layer<ResizeArgs>(ctx, "cuda.resize", launch, a, &x, nullptr, &out, {int_tables.memory(), weight_tables.memory()});
}

// Every mode and coordinate transformation the CPU's resize_taps takes (it raises Errors
// naming the node for the others); roi, scales and sizes must be build-time constants.
std::unique_ptr<Layer> make_resize(const LayerRequest& r, const CudaContext& ctx) {
  const Tensor& x = input(r, 0);
  Tensor& out = output(r, 0);
  check_rank(x);
  static const char* const names[] = {"X", "roi or scales", "scales", "sizes"};
  std::vector<const Tensor*> params(r.inputs.size(), nullptr);
  for (size_t i = 1; i < r.inputs.size(); ++i)
    if (has_input(r, i)) params[i] = &host_constant(r, i, names[std::min<size_t>(i, 3)]);
  const std::vector<ResizeTaps> taps = resize_taps(r.node, x.shape(), params);
  const float extrapolation = r.node.attr_float("extrapolation_value", 0.f);
  bool single = true;
  for (const ResizeTaps& t : taps) single = single && t.single();
  if (!single) return weighted_resize_layer(ctx, taps, x, out, extrapolation);
  // Nearest: one tap per output index, start[o] == o, so the taps' indices are the table.
  std::vector<std::vector<int64_t>> idx;
  for (const ResizeTaps& t : taps) idx.push_back(t.idx);
  return table_gather_layer(ctx, "cuda.resize_nearest", idx, value_bits(extrapolation, x.dtype()), x, nullptr, out);
}

// ---- values known at build time ---------------------------------------------------------------
// Shape, Size, Constant, ConstantOfShape, Range: constant folding takes them at every fusion
// level but none; there they are layers whose output is computed once on the host and copied
// from the layer's own device memory each run.
class ConstantLayer : public CudaLayer {
 public:
  ConstantLayer(const CudaContext& ctx, const Tensor& value, Tensor* out)
      : CudaLayer(ctx), value_(value.raw(), value.nbytes()), out_(out) {
    if (value.dtype() != out->dtype() || value.shape() != out->shape())
      throw Error("value " + dtype_name(value.dtype()) + shape_str(value.shape()) + " does not fit the output " +
                  dtype_name(out->dtype()) + shape_str(out->shape()));
  }
  void run() override {
    if (out_->nbytes())
      FB_CUDA(cudaMemcpyAsync(out_->raw(), value_.data(), out_->nbytes(), cudaMemcpyDeviceToDevice, ctx_.stream));
  }
  std::string kernel() const override { return "cuda.constant"; }

 private:
  DeviceMemory value_;
  Tensor* out_;
};

// Shape and Size read only the input's (final) shape.
std::unique_ptr<Layer> make_shape(const LayerRequest& r, const CudaContext& ctx) {
  const Shape& s = input(r, 0).shape();
  Tensor& out = output(r, 0);
  Tensor value(DType::Int64, out.shape());
  int64_t* v = value.data<int64_t>();
  if (r.node.op_type == "Size") {
    v[0] = shape_numel(s);
  } else {
    const int64_t rank = int64_t(s.size());
    int64_t start = r.node.attr_int("start", 0);
    start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
    for (int64_t i = 0; i < value.numel(); ++i) v[i] = s[size_t(start + i)];
  }
  return std::make_unique<ConstantLayer>(ctx, value, &out);
}

// Constant, ConstantOfShape and Range from their op's own kernel, on the inputs' host copies.
std::unique_ptr<Layer> make_evaluated(const LayerRequest& r, const CudaContext& ctx) {
  std::vector<const Tensor*> inputs;
  for (size_t i = 0; i < r.inputs.size(); ++i) inputs.push_back(has_input(r, i) ? &host_constant(r, i, "a generator's parameter") : nullptr);
  const std::vector<Tensor> values = evaluate_node(r.node, inputs, r.ops);
  return std::make_unique<ConstantLayer>(ctx, values.at(0), &output(r, 0));
}

// Errors name the node (those of shared code, such as resize_taps, already do).
template <std::unique_ptr<Layer> (*Make)(const LayerRequest&, const CudaContext&)>
std::unique_ptr<Layer> named(const LayerRequest& r, const CudaContext& ctx) {
  try {
    return Make(r, ctx);
  } catch (const Error& e) {
    const std::string who = r.node.describe();
    const std::string what = e.what();
    throw Error(what.rfind(who, 0) == 0 ? what : who + ": " + what);
  }
}

bool resizes_all_dims(const Node& n) { return !n.has_attr("axes"); }

}  // namespace

void add_data_movement_rows(std::vector<CudaOpRow>& rows) {
  rows.insert(rows.end(), {
      {"", "Transpose", moves_bytes, named<make_transpose>},
      {"", "Concat", moves_bytes, named<plain_or_on_views<make_concat>>, over_channels},
      {"", "Split", moves_bytes, named<plain_or_on_views<make_split>>, over_channels},
      {"", "Slice", moves_bytes, named<make_slice>},
      {"", "Expand", moves_bytes, named<make_expand>},
      {"", "Tile", moves_bytes, named<make_tile>},
      {"fusebench", "ChannelShuffle", moves_bytes, named<make_channel_shuffle>, always_channels_last},
      {"", "DepthToSpace", moves_bytes, named<make_depth_to_space>},
      {"", "SpaceToDepth", moves_bytes, named<make_space_to_depth>},
      {"", "Dropout", moves_bytes, named<make_dropout>},
      {"", "Gather", moves_bytes, named<make_gather>},
      {"", "GatherElements", moves_bytes, named<make_gather_elements>},
      {"", "Pad", moves_bytes, named<make_pad>},
      {"", "Trilu", moves_bytes, named<make_trilu>},
      // Of height and width (the conv-layout pass asks of no other), without opset 18's axes.
      {"", "Resize", moves_bytes, named<plain_or_on_views<make_resize>>, resizes_all_dims},
      {"", "Upsample", moves_bytes, named<make_resize>},
      {"", "Shape", moves_bytes, named<make_shape>},
      {"", "Size", moves_bytes, named<make_shape>},
      {"", "Constant", moves_bytes, named<make_evaluated>},
      {"", "ConstantOfShape", moves_bytes, named<make_evaluated>},
      {"", "Range", moves_bytes, named<make_evaluated>},
  });
}

}  // namespace fb::cuda
