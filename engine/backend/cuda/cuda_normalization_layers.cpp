// The CUDA backend's normalization rows: Softmax and LogSoftmax, the layer norms
// (fusebench.LayerNorm, fusebench.AddLayerNorm, ONNX LayerNormalization), the per-channel
// affines (BatchNormalization, fusebench.ChannelAffine), the group norms
// (InstanceNormalization, fusebench.GroupNorm), the reductions with the global pools
// (GlobalAveragePool is also what engine/passes/spatial_mean_pooling.cpp makes of a
// spatial ReduceMean) and the windowed pools. Attributes, opset rules and defaults are
// the CPU definitions' (engine/ops/); each layer resolves them once into the parameters of
// its kernel (normalization_kernels.h) and run() only launches it.
#include <algorithm>

#include "engine/backend/cuda/cuda_layer_table.h"
#include "engine/backend/cuda/normalization_kernels.h"
#include "engine/ops/fused_conv.h"
#include "engine/ops/group_norm.h"
#include "engine/ops/nn_common.h"

namespace fb::cuda {

namespace {

template <class P>
class KernelLayer final : public CudaLayer {
 public:
  using Launch = void (*)(const P&, cudaStream_t);
  KernelLayer(const CudaContext& ctx, const P& params, Launch launch, std::string kernel, double flops)
      : CudaLayer(ctx), params_(params), launch_(launch), kernel_(std::move(kernel)), flops_(flops) {}
  void run() override {
    launch_(params_, ctx_.stream);
    FB_CUDA(cudaGetLastError());
  }
  std::string kernel() const override { return kernel_; }
  double flops() const override { return flops_; }

 private:
  P params_;
  Launch launch_;
  std::string kernel_;
  double flops_;
};

template <class P>
std::unique_ptr<Layer> kernel_layer(const CudaContext& ctx, const P& p, void (*launch)(const P&, cudaStream_t),
                                    std::string kernel, double flops) {
  return std::make_unique<KernelLayer<P>>(ctx, p, launch, std::move(kernel), flops);
}

bool has_input(const LayerRequest& r, size_t i) { return i < r.inputs.size() && r.inputs[i]; }
bool has_output(const LayerRequest& r, size_t i) { return i < r.outputs.size() && r.outputs[i]; }

// Input i (the data tensor or a parameter) as a kernel reads it; absent: null. Float types
// only, or an Error naming the node.
DevTensor float_input(const LayerRequest& r, size_t i) {
  if (!has_input(r, i)) return {};
  const Tensor& t = *r.inputs[i];
  if (!dtype_is_float(t.dtype()) || t.dtype() == DType::Float64)
    throw Error(r.node.describe() + ": input " + std::to_string(i) + " of type " + dtype_name(t.dtype()) +
                " is not supported on CUDA (float32, float16, bfloat16)");
  return DevTensor{t.raw(), t.dtype()};
}

DevOutput float_output(const LayerRequest& r, size_t i) {
  if (!has_output(r, i)) return {};
  Tensor& t = *r.outputs[i];
  if (!dtype_is_float(t.dtype()) || t.dtype() == DType::Float64)
    throw Error(r.node.describe() + ": output " + std::to_string(i) + " of type " + dtype_name(t.dtype()) +
                " is not supported on CUDA (float32, float16, bfloat16)");
  return DevOutput{t.raw(), t.dtype()};
}

const Shape& input_shape(const LayerRequest& r) { return r.inputs.at(0)->shape(); }
double elements(const LayerRequest& r) { return double(r.inputs.at(0)->numel()); }

PrecisionSet any_float(const Node&) { return {Precision::FP32, Precision::FP16, Precision::BF16}; }

// ---- Softmax, LogSoftmax: one axis from opset 13, coerced to 2-D at `axis` before -------
std::unique_ptr<Layer> make_softmax(const LayerRequest& r, const CudaContext& ctx) {
  const Node& n = r.node;
  SoftmaxParams p;
  p.x = float_input(r, 0);
  p.y = float_output(r, 0);
  p.log = n.op_type == "LogSoftmax";
  const Shape& s = input_shape(r);
  const int64_t rank = int64_t(s.size());
  if (rank > 0) {
    const bool one_axis = n.opset >= 13 || n.opset == 0;
    const int64_t axis = normalize_axis(n.attr_int("axis", one_axis ? -1 : 1), rank);
    p.outer = p.len = p.inner = 1;
    for (int64_t d = 0; d < rank; ++d) (d < axis ? p.outer : d == axis || !one_axis ? p.len : p.inner) *= s[size_t(d)];
  }
  return kernel_layer(ctx, p, launch_softmax, p.log ? "cuda.logsoftmax" : "cuda.softmax", 5 * elements(r));
}

// ---- Layer norms ---------------------------------------------------------------------------
// fusebench.LayerNorm(x, gamma?, beta?) and AddLayerNorm(a, b, gamma?, beta?) -> y, sum?:
// over the last axis, attributes epsilon and rms (engine/ops/fused_ops.cpp).
std::unique_ptr<Layer> make_fused_layernorm(const LayerRequest& r, const CudaContext& ctx) {
  const Node& n = r.node;
  const bool add = n.op_type == "AddLayerNorm";
  const size_t first_affine = add ? 2 : 1;
  LayerNormParams p;
  p.a = float_input(r, 0);
  if (add) p.b = float_input(r, 1);
  p.gamma = float_input(r, first_affine);
  p.beta = float_input(r, first_affine + 1);
  p.y = float_output(r, 0);
  if (add) p.sum = float_output(r, 1);
  const Shape& s = input_shape(r);
  p.len = s.empty() ? 1 : s.back();
  p.rows = p.len ? r.inputs[0]->numel() / p.len : 0;
  p.epsilon = n.attr_float("epsilon", 1e-5f);
  p.rms = n.attr_int("rms", 0) != 0;
  return kernel_layer(ctx, p, launch_layernorm, add ? "cuda.add_layernorm" : p.rms ? "cuda.rmsnorm" : "cuda.layernorm",
                      8 * elements(r));
}

// ONNX LayerNormalization(X, Scale, B?) -> Y, Mean?, InvStdDev?: over the axes from `axis`
// on; a one-element Scale or B is broadcast (engine/ops/normalization.cpp).
std::unique_ptr<Layer> make_layer_normalization(const LayerRequest& r, const CudaContext& ctx) {
  const Node& n = r.node;
  const Shape& s = input_shape(r);
  const int64_t axis = normalize_axis(n.attr_int("axis", -1), int64_t(s.size()));
  LayerNormParams p;
  p.a = float_input(r, 0);
  p.gamma = float_input(r, 1);
  p.beta = float_input(r, 2);
  p.len = shape_numel(Shape(s.begin() + axis, s.end()));
  p.rows = p.len ? r.inputs[0]->numel() / p.len : 0;
  p.scalar_gamma = has_input(r, 1) && r.inputs[1]->numel() != p.len;
  p.scalar_beta = has_input(r, 2) && r.inputs[2]->numel() != p.len;
  p.y = float_output(r, 0);
  p.mean = float_output(r, 1);
  p.inv_std = float_output(r, 2);
  p.epsilon = n.attr_float("epsilon", 1e-5f);
  return kernel_layer(ctx, p, launch_layernorm, "cuda.layernorm", 8 * elements(r));
}

// ---- Per-channel affines -------------------------------------------------------------------
ChannelAffineParams channel_affine_params(const LayerRequest& r) {
  ChannelAffineParams p;
  p.x = float_input(r, 0);
  p.y = float_output(r, 0);
  const Shape& s = input_shape(r);
  if (s.size() < 2) throw Error(r.node.describe() + ": input must be [N, C, ...], not " + shape_str(s));
  p.channels = s[1];
  p.planes = s[0] * s[1];
  p.inner = p.planes ? r.inputs[0]->numel() / p.planes : 0;
  p.scale = float_input(r, 1);
  p.shift = float_input(r, 2);
  return p;
}

// BatchNormalization(X, scale, B, mean, var), inference form.
std::unique_ptr<Layer> make_batch_norm(const LayerRequest& r, const CudaContext& ctx) {
  const Node& n = r.node;
  if (n.attr_int("training_mode", 0) != 0) throw Error(n.describe() + ": training_mode=1 is unsupported (inference only)");
  ChannelAffineParams p = channel_affine_params(r);
  p.mean = float_input(r, 3);
  p.var = float_input(r, 4);
  p.epsilon = n.attr_float("epsilon", 1e-5f);
  return kernel_layer(ctx, p, launch_channel_affine, "cuda.batchnorm", 2 * elements(r));
}

// fusebench.ChannelAffine(x, scale, shift), activation "" or "relu".
std::unique_ptr<Layer> make_channel_affine(const LayerRequest& r, const CudaContext& ctx) {
  const Node& n = r.node;
  const std::string act = n.attr_string("activation", "");
  if (!act.empty() && act != "relu") throw Error(n.describe() + ": unknown activation '" + act + "'");
  ChannelAffineParams p = channel_affine_params(r);
  p.relu = act == "relu";
  const bool nhwc = layout_is_channels_last(n, "x_layout");  // and y_layout: [N, H, W, C] bytes
  if (nhwc) p.planes = r.inputs[0]->numel(), p.inner = 1;    // the channel is innermost
  return kernel_layer(ctx, p, launch_channel_affine,
                      std::string(p.relu ? "cuda.channel_affine[relu]" : "cuda.channel_affine") + (nhwc ? " nhwc→nhwc" : ""),
                      2 * elements(r));
}

// ---- Group norms ---------------------------------------------------------------------------
GroupNormParams group_norm_params(const LayerRequest& r, int64_t groups) {
  const Node& n = r.node;
  const Shape& s = input_shape(r);
  if (s.size() < 2) throw Error(n.describe() + ": input must be [N, C, ...], not " + shape_str(s));
  GroupNormParams p;
  p.x = float_input(r, 0);
  p.y = float_output(r, 0);
  p.batch = s[0];
  p.channels = s[1];
  p.groups = groups;
  if (groups < 1 || p.channels % groups != 0)
    throw Error(n.describe() + ": groups " + std::to_string(groups) + " must divide the " + std::to_string(p.channels) + " channels");
  p.inner = p.batch * p.channels != 0 ? r.inputs[0]->numel() / (p.batch * p.channels) : 0;
  p.epsilon = n.attr_float("epsilon", 1e-5f);
  return p;
}

// fusebench.GroupNorm(x, group_scale?, group_bias?, channel_scale?, channel_bias?), attributes
// groups, epsilon, activation (engine/ops/group_norm.cpp).
std::unique_ptr<Layer> make_group_norm(const LayerRequest& r, const CudaContext& ctx) {
  GroupNormParams p = group_norm_params(r, r.node.attr_int("groups", 1));
  p.group_scale = float_input(r, 1);
  p.group_bias = float_input(r, 2);
  p.channel_scale = float_input(r, 3);
  p.channel_bias = float_input(r, 4);
  switch (group_norm_activation(r.node)) {
    case GroupNormActivation::None: p.activation = GroupNormAct::None; break;
    case GroupNormActivation::Silu: p.activation = GroupNormAct::Silu; break;
    case GroupNormActivation::Gelu: p.activation = GroupNormAct::Gelu; break;
  }
  // x_layout and y_layout channels-last (the conv-layout pass marks both): [N, spatial, C] bytes.
  p.channels_last = layout_is_channels_last(r.node, "x_layout");
  const char* names[] = {"cuda.groupnorm", "cuda.groupnorm[silu]", "cuda.groupnorm[gelu]"};
  return kernel_layer(ctx, p, launch_group_norm, std::string(names[int(p.activation)]) + (p.channels_last ? " nhwc→nhwc" : ""),
                      8 * elements(r));
}

// InstanceNormalization(input, scale, B): one group per channel, scaled per group.
std::unique_ptr<Layer> make_instance_norm(const LayerRequest& r, const CudaContext& ctx) {
  const Shape& s = input_shape(r);
  GroupNormParams p = group_norm_params(r, s.size() >= 2 ? s[1] : 1);
  p.group_scale = float_input(r, 1);
  p.group_bias = float_input(r, 2);
  return kernel_layer(ctx, p, launch_group_norm, "cuda.instancenorm", 8 * elements(r));
}

// ---- Reductions and the global pools -----------------------------------------------------
// The dims of `shape` that `take` selects, neighbours merged where they are one run of
// memory, with their element strides, into dims/strides (at most kMaxDims).
int merged_dims(const Node& node, const Shape& shape, const std::vector<bool>& take, int64_t* dims, int64_t* strides) {
  const std::vector<int64_t> full = shape_strides(shape);
  std::vector<int64_t> d_out, s_out;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!take[d] || shape[d] == 1) continue;
    if (!d_out.empty() && s_out.back() == full[d] * shape[d]) {
      d_out.back() *= shape[d];
      s_out.back() = full[d];
    } else {
      d_out.push_back(shape[d]);
      s_out.push_back(full[d]);
    }
  }
  if (d_out.size() > size_t(kMaxDims))
    throw Error(node.describe() + ": a reduction over " + std::to_string(d_out.size()) + " separate dimensions (CUDA takes " +
                std::to_string(kMaxDims) + ")");
  std::copy(d_out.begin(), d_out.end(), dims);
  std::copy(s_out.begin(), s_out.end(), strides);
  return int(d_out.size());
}

// The reduction of x over `axes` (normalized) into output 0.
std::unique_ptr<Layer> reduce_layer(const LayerRequest& r, const CudaContext& ctx, ReduceKind kind,
                                    const std::vector<int64_t>& axes, std::string kernel) {
  ReduceParams p;
  p.x = float_input(r, 0);
  p.y = float_output(r, 0);
  p.kind = kind;
  const Shape& s = input_shape(r);
  std::vector<bool> reduced(s.size(), false);
  for (int64_t a : axes) reduced[size_t(a)] = true;
  std::vector<bool> kept(s.size());
  for (size_t d = 0; d < s.size(); ++d) kept[d] = !reduced[d];
  p.kept_rank = merged_dims(r.node, s, kept, p.kept_dims, p.kept_strides);
  p.reduced_rank = merged_dims(r.node, s, reduced, p.reduced_dims, p.reduced_strides);
  p.outputs = r.outputs.at(0)->numel();
  p.count = 1;
  for (int64_t a : axes) p.count *= s[size_t(a)];
  return kernel_layer(ctx, p, launch_reduce, std::move(kernel), elements(r));
}

// Reduce* (engine/ops/reduce.cpp): axes from input 1 when given (a constant here), else
// the attribute; none means all, or nothing with noop_with_empty_axes.
std::unique_ptr<Layer> make_reduce(const LayerRequest& r, const CudaContext& ctx) {
  const Node& n = r.node;
  static const std::pair<const char*, ReduceKind> kKinds[] = {
      {"ReduceMean", ReduceKind::Mean}, {"ReduceSum", ReduceKind::Sum}, {"ReduceMax", ReduceKind::Max},
      {"ReduceMin", ReduceKind::Min}, {"ReduceProd", ReduceKind::Prod}, {"ReduceL1", ReduceKind::L1},
      {"ReduceL2", ReduceKind::L2}, {"ReduceLogSum", ReduceKind::LogSum}, {"ReduceLogSumExp", ReduceKind::LogSumExp},
      {"ReduceSumSquare", ReduceKind::SumSquare}};
  ReduceKind kind = ReduceKind::Sum;
  for (const auto& [name, k] : kKinds)
    if (n.op_type == name) kind = k;
  std::vector<int64_t> axes = n.attr_ints("axes");
  if (has_input(r, 1)) {
    const Tensor* c = r.host_constants.size() > 1 ? r.host_constants[1] : nullptr;
    if (!c) throw Error(n.describe() + ": the axes input must be a constant on CUDA");
    axes = c->as_int64_vector();
  }
  const int64_t rank = int64_t(input_shape(r).size());
  const bool noop = axes.empty() && n.attr_int("noop_with_empty_axes", 0) != 0;
  if (noop) return reduce_layer(r, ctx, ReduceKind::Identity, {}, "cuda.reduce[" + n.op_type + ", noop]");
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  for (int64_t& a : axes) a = normalize_axis(a, rank);
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return reduce_layer(r, ctx, kind, axes, "cuda.reduce[" + n.op_type + "]");
}

// GlobalAveragePool, GlobalMaxPool: a reduction over the spatial axes. With x_layout
// channels-last (x's bytes [N, spatial, C]) each output (n, c) reduces the spatial
// positions C elements apart, neighbouring threads neighbouring channels; its [N, C, 1, 1]
// output is the same bytes in either layout.
std::unique_ptr<Layer> make_global_pool(const LayerRequest& r, const CudaContext& ctx) {
  const Node& n = r.node;
  const Shape& x = input_shape(r);
  require_rank_at_least(n, x, 3, "input X");
  const ReduceKind kind = n.op_type == "GlobalMaxPool" ? ReduceKind::Max : ReduceKind::Mean;
  if (layout_is_channels_last(n, "x_layout")) {
    ReduceParams p;
    p.x = float_input(r, 0);
    p.y = float_output(r, 0);
    p.kind = kind;
    const int64_t c = x[1], spatial = shape_numel(x) / std::max<int64_t>(x[0] * c, 1);
    p.kept_rank = 2, p.kept_dims[0] = x[0], p.kept_dims[1] = c, p.kept_strides[0] = spatial * c, p.kept_strides[1] = 1;
    p.reduced_rank = 1, p.reduced_dims[0] = spatial, p.reduced_strides[0] = c;
    p.outputs = x[0] * c;
    p.count = spatial;
    return kernel_layer(ctx, p, launch_reduce, "cuda.global_pool[" + n.op_type + "] nhwc", elements(r));
  }
  std::vector<int64_t> axes;
  for (int64_t d = 2; d < int64_t(x.size()); ++d) axes.push_back(d);
  return reduce_layer(r, ctx, kind, axes, "cuda.global_pool[" + n.op_type + "]");
}

// ---- Windowed pools: MaxPool (with Indices), AveragePool, LpPool, GlobalLpPool ------------
std::unique_ptr<Layer> make_pool(const LayerRequest& r, const CudaContext& ctx) {
  const Node& n = r.node;
  const Shape& x = input_shape(r);
  require_rank_at_least(n, x, 3, "input X");
  if (x.size() > 5) throw Error(n.describe() + ": pooling over more than 3 spatial dimensions is not supported");
  const Shape spatial(x.begin() + 2, x.end());
  const bool global = n.op_type == "GlobalLpPool";
  WindowGeometry g;
  if (global) {
    g.in = g.kernel = spatial;
    g.out.assign(spatial.size(), 1);
    g.stride.assign(spatial.size(), 1);
    g.dilation.assign(spatial.size(), 1);
    g.pad_begin.assign(spatial.size(), 0);
    g.pad_end.assign(spatial.size(), 0);
  } else {
    if (!n.has_attr("kernel_shape")) throw Error(n.describe() + ": attribute 'kernel_shape' is required");
    g = window_geometry(n, spatial, {}, n.attr_int("ceil_mode", 0) != 0);
  }
  PoolParams p;
  p.x = float_input(r, 0);
  p.y = float_output(r, 0);
  p.kind = n.op_type == "MaxPool" ? PoolKind::Max : n.op_type == "AveragePool" ? PoolKind::Average : PoolKind::Lp;
  p.planes = x[0] * x[1];
  p.spatial = int(spatial.size());
  const size_t off = 3 - spatial.size();  // leading unit dims
  for (size_t i = 0; i < spatial.size(); ++i) {
    p.in[off + i] = g.in[i];
    p.out[off + i] = g.out[i];
    p.k[off + i] = g.kernel[i];
    p.s[off + i] = g.stride[i];
    p.d[off + i] = g.dilation[i];
    p.pb[off + i] = g.pad_begin[i];
    p.pe[off + i] = g.pad_end[i];
  }
  p.count_include_pad = n.attr_int("count_include_pad", 0) != 0;
  // x_layout and y_layout channels-last (the conv-layout pass marks both): [N, spatial, C] bytes.
  p.channels_last = layout_is_channels_last(n, "x_layout");
  if (p.channels_last != layout_is_channels_last(n, "y_layout") || (p.channels_last && has_output(r, 1)))
    throw Error(n.describe() + ": a channels-last pool reads and writes channels-last, with no indices output");
  p.channels = x[1];
  if (p.kind == PoolKind::Lp) {
    p.p = n.attr_float("p", 2.f);
    if (p.p <= 0.f) throw Error(n.describe() + ": p must be positive");
  }
  if (has_output(r, 1)) {
    if (p.kind != PoolKind::Max || r.outputs[1]->dtype() != DType::Int64)
      throw Error(n.describe() + ": only MaxPool has a second output (int64 indices)");
    p.indices = static_cast<int64_t*>(r.outputs[1]->raw());
    p.column_major = n.attr_int("storage_order", 0) != 0;
  }
  const double window = double(p.k[0] * p.k[1] * p.k[2]);
  const std::string kernel = global                        ? "cuda.global_lppool"
                             : p.kind == PoolKind::Max     ? "cuda.maxpool"
                             : p.kind == PoolKind::Average ? "cuda.averagepool"
                                                           : "cuda.lppool";
  return kernel_layer(ctx, p, launch_pool, kernel + (p.channels_last ? " nhwc→nhwc" : ""),
                      double(r.outputs[0]->numel()) * window);
}

}  // namespace

void add_normalization_rows(std::vector<CudaOpRow>& rows) {
  rows.push_back({"", "Softmax", any_float, make_softmax});
  rows.push_back({"", "LogSoftmax", any_float, make_softmax});
  rows.push_back({"fusebench", "LayerNorm", any_float, make_fused_layernorm});
  rows.push_back({"fusebench", "AddLayerNorm", any_float, make_fused_layernorm});
  rows.push_back({"", "LayerNormalization", any_float, make_layer_normalization});
  rows.push_back({"", "BatchNormalization", any_float, make_batch_norm});
  rows.push_back({"fusebench", "ChannelAffine", any_float, make_channel_affine, always_channels_last});
  rows.push_back({"", "InstanceNormalization", any_float, make_instance_norm});
  rows.push_back({"fusebench", "GroupNorm", any_float, make_group_norm, always_channels_last});
  for (const char* op : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                         "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"})
    rows.push_back({"", op, any_float, make_reduce});
  rows.push_back({"", "GlobalAveragePool", any_float, make_global_pool, always_channels_last});
  rows.push_back({"", "GlobalMaxPool", any_float, make_global_pool});
  for (const char* op : {"MaxPool", "AveragePool"}) rows.push_back({"", op, any_float, make_pool, always_channels_last});
  for (const char* op : {"LpPool", "GlobalLpPool"}) rows.push_back({"", op, any_float, make_pool});
}

}  // namespace fb::cuda
