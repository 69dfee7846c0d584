// Conv and ConvTranspose (1-D to 3-D, groups, dilations, pads and auto_pad; defined in
// engine/ops/conv_ops.cpp) on oneDNN's
// convolution and deconvolution primitives. Weights may be runtime inputs, so the
// primitive is made per call; oneDNN's primitive cache makes the repeat cheap.
#include <oneapi/dnnl/dnnl.hpp>

#include <cstring>

#include "engine/backend/cpu/conv.h"
#include "engine/backend/cpu/dnnl_context.h"
#include "engine/backend/cpu/shared_weights.h"
#include "engine/ops/bound_kernels.h"
#include "engine/ops/conv_shapes.h"
#include "engine/ops/int8_quantize.h"

namespace fb {

using dnnl::memory;

namespace {

memory::dims dims_of(const Shape& s) { return memory::dims(s.begin(), s.end()); }

memory::format_tag plain_tag(size_t rank) {
  switch (rank) {
    case 3: return memory::format_tag::abc;
    case 4: return memory::format_tag::abcd;
    case 5: return memory::format_tag::abcde;
    case 6: return memory::format_tag::abcdef;
  }
  return memory::format_tag::undef;
}

// Where oneDNN's Winograd convolution (F(4x4, 3x3) or F(2x2, 3x3) on AVX-512) beats its
// direct kernels here, measured on this project's Xeon at 2 threads, reorders from and to
// channels-last counted (docs/fusion.md, "Winograd convolutions"): 3x3, stride 1, no dilation or
// groups, 48 or more channels in and out (16 in: 1.6x slower), and at least 14x14 outputs
// per image batch (a single 7x7 image: no faster). 1.4x to 2.1x faster above that.
bool winograd_pays(const ConvShapes& s, const Shape& w) {
  if (s.geo.spatial() != 2 || s.group != 1 || w.size() != 4 || w[2] != 3 || w[3] != 3) return false;
  for (size_t d = 0; d < 2; ++d)
    if (s.geo.stride[d] != 1 || s.geo.dilation[d] != 1) return false;
  return s.c >= 48 && s.m >= 48 && s.n * s.out[2] * s.out[3] >= 14 * 14;
}

memory::format_tag channels_last_tag(size_t rank) {
  switch (rank) {
    case 3: return memory::format_tag::acb;
    case 4: return memory::format_tag::acdb;
    case 5: return memory::format_tag::acdeb;
  }
  return memory::format_tag::undef;
}

memory::desc act_desc(const Shape& s, bool channels_last, memory::data_type type) {
  return memory::desc(dims_of(s), type, channels_last ? channels_last_tag(s.size()) : plain_tag(s.size()));
}

}  // namespace

struct ConvKernel::Impl {
  dnnl::convolution_forward prim;
  memory src, wei, bias, dst, res;         // the caller's buffers, in the node's layouts
  memory src_b, wei_b, dst_b;              // the primitive's layouts, where they differ
  dnnl::reorder src_in, wei_in, dst_out, res_in;
  bool src_blocked = false, wei_blocked = false, dst_blocked = false;
  bool weights_ready = false;              // constant weights: reordered once, on the first run
  bool constant_weights = false;
  // Constant float weights in another layout: reordered on the first run into a copy shared
  // with the layers that reorder the same constant alike (shared_weights.h).
  memory::desc shared_md;
  std::shared_ptr<const memory> shared_wei;
  bool has_bias = false, has_residual = false;
  bool int8 = false;
  std::vector<float> out_scales;           // int8: input scale · weight scale, per output channel
  std::vector<float> bias_scaled;          // int8: the bias in accumulator units
  float y_scale = 0;                       // int8 output (u8/s8 written by the epilogue): its step
  // With a tabled activation (int8 output): the output byte for each s8 byte of the
  // activation's input, which the primitive writes (engine/ops/int8_quantize.h).
  std::vector<uint8_t> activation_table;
  std::unordered_map<int, memory> args;
  double flops = 0;
  std::string description;
  memory::desc y_md;                       // y as the caller keeps it
  DType y_type = DType::Float32;
};

ConvKernel::ConvKernel(const Node& node, const Shape& x, const Shape& w, bool has_bias, bool constant_weights,
                       const float* int8_weights, bool bf16, bool may_use_winograd)
    : impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  im.constant_weights = constant_weights;
  im.int8 = node.has_attr("int8_input_amax");
  if (im.int8 && !int8_weights) throw Error(node.describe() + ": an int8 convolution needs its constant weights");
  const bool x_unsigned = node.attr_int("int8_input_unsigned", 0) != 0;
  const float x_scale = im.int8 ? int8_input_scale(node.attr_float("int8_input_amax", 0.f), x_unsigned) : 1.f;
  if (bf16 && (im.int8 || !constant_weights)) throw Error(node.describe() + ": a bf16 convolution needs float32 constant weights");
  // bf16: activations (x, y, the residual) in bf16, the weights packed to bf16 once.
  const memory::data_type act_type = bf16 ? memory::data_type::bf16 : memory::data_type::f32;
  im.y_type = bf16 ? DType::BFloat16 : DType::Float32;
  const memory::data_type src_type = !im.int8 ? act_type : x_unsigned ? memory::data_type::u8 : memory::data_type::s8;
  // An int8 convolution whose readers are all int8 layers writes their u8/s8 input itself
  // (engine/passes/int8_lowering.cpp): the float32 tensor and its Quantize layer are gone.
  const bool y_unsigned = node.attr_int("int8_output_unsigned", 0) != 0;
  if (im.int8 && node.has_attr("int8_output_amax")) {
    if (conv_has_residual(node)) throw Error(node.describe() + ": an int8 output cannot take a residual sum");
    im.y_scale = int8_input_scale(node.attr_float("int8_output_amax", 0.f), y_unsigned);
    im.y_type = y_unsigned ? DType::UInt8 : DType::Int8;
  }
  // The activation's input as s8, when a table maps it to the output after the primitive.
  const float table_input_amax = im.y_scale > 0 ? node.attr_float("int8_activation_input_amax", 0.f) : 0.f;
  const bool tabled = table_input_amax > 0 && is_tabled_activation(node.attr_string("activation", ""));
  const memory::data_type dst_type = im.y_scale == 0             ? act_type
                                     : y_unsigned && !tabled ? memory::data_type::u8
                                                             : memory::data_type::s8;
  const memory::data_type wei_type = im.int8 ? memory::data_type::s8 : act_type;
  Shape bshape{w.empty() ? 0 : w[0]};
  ConvShapes s = conv_shapes(node, x, w, has_bias ? &bshape : nullptr);
  output_ = s.out;
  im.has_bias = has_bias;
  im.has_residual = conv_has_residual(node);
  const FusedActivation act = fused_activation_of(node);
  const ConvLayouts layouts = conv_layouts_of(node);
  if (layouts.residual && !im.has_residual) throw Error(node.describe() + ": residual_layout without a residual input");
  const size_t nd = s.geo.in.size();
  auto& eng = dnnl_cpu_engine();
  memory::desc src_md = im.int8 ? memory::desc(dims_of(x), src_type, layouts.x ? channels_last_tag(x.size()) : plain_tag(x.size()))
                                : act_desc(x, layouts.x, act_type);
  im.y_md = act_desc(s.out, layouts.y, dst_type);
  memory::desc res_md = act_desc(s.out, layouts.residual, act_type);
  // ONNX's [M, C/G, k...] is oneDNN's [G, M/G, C/G, k...] with the same bytes.
  Shape wd = w;
  if (s.group > 1) {
    wd[0] = s.m / s.group;
    wd.insert(wd.begin(), s.group);
  }
  memory::desc w_md(dims_of(wd), memory::data_type::f32, plain_tag(wd.size()));
  memory::desc b_md({s.m}, memory::data_type::f32, memory::format_tag::a);
  memory::dims strides(s.geo.stride.begin(), s.geo.stride.end()), dil(nd), pl(s.geo.pad_begin.begin(), s.geo.pad_begin.end()),
      pr(s.geo.pad_end.begin(), s.geo.pad_end.end());
  for (size_t d = 0; d < nd; ++d) dil[d] = s.geo.dilation[d] - 1;
  im.flops = 2.0 * double(shape_numel(s.out)) * double(shape_numel(w) / std::max<int64_t>(w[0], 1));
  dnnl::post_ops po;
  // The residual is summed before the activation: act(conv(x) + b + residual).
  if (im.has_residual) po.append_sum(1.f);
  // The activation runs on real values; a quantized output divides by its step after it
  // (the eltwise post-op's scale), or, with no activation, in the output scales below.
  const float act_scale = im.y_scale > 0 ? 1.f / im.y_scale : 1.f;
  if (tabled) {
    im.activation_table = activation_table(node.attr_string("activation", ""), int8_input_scale(table_input_amax, false),
                                           im.y_scale, y_unsigned, 0);
  } else switch (act.kind) {
    case ActivationKind::Relu: po.append_eltwise(act_scale, dnnl::algorithm::eltwise_relu, 0.f, 0.f); break;
    case ActivationKind::Clip: po.append_eltwise(act_scale, dnnl::algorithm::eltwise_clip, act.lo, act.hi); break;
    case ActivationKind::Sigmoid: po.append_eltwise(act_scale, dnnl::algorithm::eltwise_logistic, 0.f, 0.f); break;
    case ActivationKind::HardSwish: po.append_eltwise(act_scale, dnnl::algorithm::eltwise_hardswish, 0.f, 0.f); break;
    case ActivationKind::Silu: po.append_eltwise(act_scale, dnnl::algorithm::eltwise_swish, 1.f, 0.f); break;
    case ActivationKind::Gelu: po.append_eltwise(act_scale, dnnl::algorithm::eltwise_gelu_erf, 0.f, 0.f); break;
    case ActivationKind::GeluTanh: po.append_eltwise(act_scale, dnnl::algorithm::eltwise_gelu_tanh, 0.f, 0.f); break;
    case ActivationKind::None: break;
  }
  dnnl::primitive_attr attr;
  attr.set_post_ops(po);
  std::vector<int8_t> w_q;
  if (im.int8) {
    w_q.resize(size_t(shape_numel(w)));
    std::vector<float> w_scales;
    quantize_weights_per_channel(int8_weights, 1, s.m, shape_numel(w) / std::max<int64_t>(s.m, 1), w_q.data(), w_scales);
    im.out_scales.resize(size_t(s.m));
    for (int64_t oc = 0; oc < s.m; ++oc) im.out_scales[oc] = x_scale * w_scales[oc];
    im.bias_scaled.resize(has_bias ? size_t(s.m) : 0);
    std::vector<float> scales = im.out_scales;  // accumulator units to the destination's
    if (tabled)
      for (float& v : scales) v /= int8_input_scale(table_input_amax, false);
    else if (im.y_scale > 0 && act.kind == ActivationKind::None)
      for (float& v : scales) v /= im.y_scale;
    attr.set_output_scales(1 << 1, scales);
  }
  // Plain activations: oneDNN picks its layouts ("any"); on plain NCHW it would fall back
  // to im2col + gemm, several times slower than its blocked kernels even counting the
  // reorders. Channels-last activations are asked for as such, so consecutive convolutions
  // need no reorder; the summed residual shares the destination's layout (it is copied in).
  const memory::format_tag any = memory::format_tag::any;
  const bool dst_cl = layouts.y || layouts.residual;
  auto make_pd = [&](bool honour_layouts, dnnl::algorithm algorithm) {
    memory::desc src_want = honour_layouts && layouts.x ? memory::desc(dims_of(x), src_type, channels_last_tag(x.size()))
                                                        : memory::desc(dims_of(x), src_type, any);
    memory::desc dst_want = honour_layouts && dst_cl ? act_desc(s.out, true, dst_type) : memory::desc(dims_of(s.out), dst_type, any);
    memory::desc w_any(dims_of(wd), wei_type, any);
    auto desc = has_bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, algorithm, src_want, w_any, b_md,
                                                           dst_want, strides, dil, pl, pr)
                         : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, algorithm, src_want, w_any,
                                                           dst_want, strides, dil, pl, pr);
    return dnnl::convolution_forward::primitive_desc(desc, attr, eng);
  };
  dnnl::convolution_forward::primitive_desc pd;
  bool winograd = may_use_winograd && constant_weights && !im.int8 && !bf16 && winograd_pays(s, w);
  if (winograd) {
    try {  // its blocked layouts only: the reorders from and to ours cost far less than it saves
      pd = make_pd(false, dnnl::algorithm::convolution_winograd);
    } catch (const dnnl::error&) {
      winograd = false;  // not on this CPU (oneDNN's fp32 Winograd needs AVX-512), or not these post-ops
    }
  }
  try {
    try {
      if (!winograd) pd = make_pd(true, dnnl::algorithm::convolution_direct);
    } catch (const dnnl::error&) {
      if (!layouts.x && !dst_cl) throw;
      pd = make_pd(false, dnnl::algorithm::convolution_direct);  // no kernel for channels-last here: reorders keep it correct
    }
    im.prim = dnnl::convolution_forward(pd);
  } catch (const dnnl::error& e) {
    throw Error(node.describe() + ": oneDNN could not create the convolution " + shape_str(x) + " * " + shape_str(w) + ": " + e.what());
  }
  im.src = memory(src_md, eng, DNNL_MEMORY_NONE);
  im.wei = memory(w_md, eng, DNNL_MEMORY_NONE);
  im.dst = memory(im.y_md, eng, DNNL_MEMORY_NONE);
  memory src_used = im.src, wei_used = im.wei, dst_used = im.dst;
  if (pd.src_desc() != src_md) {
    im.src_blocked = true;
    im.src_b = memory(pd.src_desc(), eng);
    im.src_in = dnnl::reorder(im.src, im.src_b);
    src_used = im.src_b;
  }
  if (im.int8) {  // quantized weights, once, into the primitive's layout
    memory w_user(memory::desc(dims_of(wd), memory::data_type::s8, plain_tag(wd.size())), eng, w_q.data());
    im.wei_b = memory(pd.weights_desc(), eng);
    dnnl::reorder(w_user, im.wei_b).execute(dnnl_cpu_stream(), w_user, im.wei_b);
    dnnl_cpu_stream().wait();
    im.wei_blocked = im.constant_weights = im.weights_ready = true;
    wei_used = im.wei_b;
  } else if (pd.weights_desc() != w_md && im.constant_weights) {
    im.shared_md = pd.weights_desc();  // wei_used stays a placeholder until the first run
  } else if (pd.weights_desc() != w_md) {
    im.wei_blocked = true;
    im.wei_b = memory(pd.weights_desc(), eng);
    im.wei_in = dnnl::reorder(im.wei, im.wei_b);
    wei_used = im.wei_b;
  }
  if (pd.dst_desc() != im.y_md) {
    im.dst_blocked = true;
    im.dst_b = memory(pd.dst_desc(), eng);
    im.dst_out = dnnl::reorder(im.dst_b, im.dst);
    dst_used = im.dst_b;
  }
  if (im.has_residual) {  // the sum post-op reads the residual from the destination
    im.res = memory(res_md, eng, DNNL_MEMORY_NONE);
    im.res_in = dnnl::reorder(im.res, dst_used);
  }
  im.args = {{DNNL_ARG_SRC, src_used}, {DNNL_ARG_WEIGHTS, wei_used}, {DNNL_ARG_DST, dst_used}};
  if (has_bias) {
    im.bias = memory(b_md, eng, im.int8 ? im.bias_scaled.data() : DNNL_MEMORY_NONE);
    im.args.emplace(DNNL_ARG_BIAS, im.bias);
  }
  // By rank: a 1-D convolution's channels-last is nwc, a 3-D one's ndhwc.
  auto layout_name = [nd](bool cl) {
    return nd == 1 ? (cl ? "nwc" : "ncw") : nd == 3 ? (cl ? "ndhwc" : "ncdhw") : (cl ? "nhwc" : "nchw");
  };
  im.description = std::string("onednn.conv[") + pd.impl_info_str() + "]";
  if (im.has_residual) im.description += "+sum";
  if (act.kind != ActivationKind::None && !tabled) im.description += "+" + node.attr_string("activation", "");
  im.description += std::string(" ") + layout_name(layouts.x) + "→" + layout_name(layouts.y);
  if (im.int8) im.description += x_unsigned ? " u8s8" : " s8s8";
  if (tabled) im.description += "→s8 →" + node.attr_string("activation", "") + " table";
  if (im.y_scale > 0) im.description += y_unsigned ? "→u8" : "→s8";
  if (bf16) im.description += " bf16";
}

ConvKernel::~ConvKernel() = default;
double ConvKernel::flops() const { return impl_->flops; }
std::string ConvKernel::describe() const { return impl_->description; }

void ConvKernel::run(const void* x, const float* w, const float* b, const void* residual, void* y) {
  Impl& im = *impl_;
  if (shape_numel(output_) == 0) return;
  im.src.set_data_handle(const_cast<void*>(x));
  im.wei.set_data_handle(const_cast<float*>(w));
  im.dst.set_data_handle(y);
  if (im.has_bias && im.int8)
    for (size_t oc = 0; oc < im.out_scales.size(); ++oc) im.bias_scaled[oc] = b[oc] / im.out_scales[oc];
  else if (im.has_bias)
    im.bias.set_data_handle(const_cast<float*>(b));
  auto& stream = dnnl_cpu_stream();
  if (im.src_blocked) im.src_in.execute(stream, im.src, im.src_b);
  if (im.wei_blocked && !(im.constant_weights && im.weights_ready)) im.wei_in.execute(stream, im.wei, im.wei_b);
  if (!im.shared_md.is_zero() && !im.shared_wei) {
    im.shared_wei = shared_reordered_weights(w, im.wei.get_desc(), im.shared_md);
    im.args[DNNL_ARG_WEIGHTS] = *im.shared_wei;
  }
  im.weights_ready = true;
  if (im.has_residual) {
    memory dst_used = im.dst_blocked ? im.dst_b : im.dst;
    // Written over in place (same bytes, same layout): nothing to copy.
    if (!(residual == y && !im.dst_blocked && im.res.get_desc() == im.y_md)) {
      im.res.set_data_handle(const_cast<void*>(residual));
      im.res_in.execute(stream, im.res, dst_used);
    }
  }
  im.prim.execute(stream, im.args);
  if (im.dst_blocked) im.dst_out.execute(stream, im.dst_b, im.dst);
  stream.wait();
  if (!im.activation_table.empty()) apply_table(static_cast<uint8_t*>(y), shape_numel(output_), im.activation_table.data());
}

Tensor ConvKernel::plain_output(const void* y) const {
  Tensor out(impl_->y_type, output_);
  const memory::desc plain = act_desc(output_, false, impl_->y_md.data_type());
  if (impl_->y_md == plain) {
    std::memcpy(out.raw(), y, out.nbytes());
  } else {
    auto& eng = dnnl_cpu_engine();
    memory from(impl_->y_md, eng, const_cast<void*>(y)), to(plain, eng, out.raw());
    dnnl::reorder(from, to).execute(dnnl_cpu_stream(), from, to);
    dnnl_cpu_stream().wait();
  }
  return impl_->y_scale > 0 ? dequantized(out, impl_->y_scale) : out;  // a quantized output as what it stands for
}

namespace {

// Conv and fusebench.FusedConv (Conv with residual and activation post-ops) share the kernel.
void compute_conv(OpContext& c) {
  const Tensor& x = c.in(0);
  const Tensor& w = c.in(1);
  const bool has_bias = c.has_input(2);
  if (has_bias && (c.in(2).rank() != 1 || c.in(2).shape()[0] != w.shape()[0]))
    throw Error(c.node.describe() + ": bias B " + shape_str(c.in(2).shape()) + " must be [" + std::to_string(w.shape()[0]) + "]");
  ConvKernel k(c.node, x.shape(), w.shape(), has_bias);
  const float* residual = nullptr;
  if (conv_has_residual(c.node)) {
    if (!c.has_input(3) || c.in(3).shape() != k.output_shape())
      throw Error(c.node.describe() + ": the residual must have the output's shape " + shape_str(k.output_shape()));
    residual = c.in(3).data<float>();
  }
  k.run(x.data<float>(), w.data<float>(), has_bias ? c.in(2).data<float>() : nullptr, residual, c.out(0).data<float>());
}

// ---- ConvTranspose ------------------------------------------------------------------------
// Copies `y` into the larger `out` ([N, M, spatial...]); the rest of `out` is the bias (or 0).
void copy_into_extended(const Tensor& y, Tensor& out, const Tensor* b) {
  const Shape& ys = y.shape();
  const Shape& os = out.shape();
  const int64_t planes = os[0] * os[1], ch = os[1];
  const int64_t out_plane = planes ? out.numel() / planes : 0, y_plane = planes ? y.numel() / planes : 0;
  const size_t nd = os.size() - 2;
  const auto ostr = shape_strides(Shape(os.begin() + 2, os.end()));
  const float* src = y.data<float>();
  float* dst = out.data<float>();
  for (int64_t p = 0; p < planes; ++p) {
    const float fill = b ? b->data<float>()[p % ch] : 0.f;
    std::fill(dst + p * out_plane, dst + (p + 1) * out_plane, fill);
    std::vector<int64_t> idx(nd, 0);
    for (int64_t i = 0; i < y_plane; ++i) {
      int64_t off = 0;
      for (size_t d = 0; d < nd; ++d) off += idx[d] * ostr[d];
      dst[p * out_plane + off] = src[p * y_plane + i];
      for (size_t d = nd; d-- > 0;) {
        if (++idx[d] < ys[d + 2]) break;
        idx[d] = 0;
      }
    }
  }
}

void compute_conv_transpose(OpContext& c) {
  const Tensor& x = c.in(0);
  const Tensor* b = c.has_input(2) ? &c.in(2) : nullptr;
  Tensor& out = c.out(0);
  if (out.numel() == 0) return;
  DeconvKernel k(c.node, x.shape(), c.in(1).shape(), b != nullptr);
  // oneDNN writes what the operation yields; an output_shape beyond that is filled afterwards.
  const bool extended = k.output_shape() != out.shape();
  Tensor tmp = extended ? Tensor::empty(DType::Float32, k.output_shape()) : Tensor();
  Tensor& y = extended ? tmp : out;
  k.run(x.data<float>(), c.in(1).data<float>(), b ? b->data<float>() : nullptr, y.data<float>());
  if (extended) copy_into_extended(y, out, b);
}

}  // namespace

struct DeconvKernel::Impl {
  dnnl::deconvolution_forward prim;
  memory src, wei_user, wei, bias, dst;
  memory::desc dst_md;
  bool has_bias = false, constant_weights = false, weights_ready = false;
  double flops = 0;
  std::string description;
};

DeconvKernel::DeconvKernel(const Node& node, const Shape& x, const Shape& w, bool has_bias, bool constant_weights)
    : impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  DeconvShapes s = deconv_shapes(node, x, w, nullptr);  // the bias's shape: shape inference checked it
  const size_t nd = x.size() - 2;
  // An output_shape beyond what the operation yields: oneDNN writes the smaller output.
  output_ = s.out;
  for (size_t d = 0; d < nd; ++d)
    if (s.pad_end[d] < 0) output_[d + 2] += s.pad_end[d], s.pad_end[d] = 0;
  const ConvLayouts layouts = conv_layouts_of(node);
  if ((layouts.x || layouts.y) && x.size() != 4) throw Error(node.describe() + ": channels-last needs a 2-D transposed convolution");
  auto& eng = dnnl_cpu_engine();
  const memory::desc src_md = act_desc(x, layouts.x, memory::data_type::f32);
  im.dst_md = act_desc(output_, layouts.y, memory::data_type::f32);
  // ONNX's W is [C, M/G, k...] = [G, C/G, M/G, k...]; oneDNN wants [G, M/G, C/G, k...]:
  // describe ONNX's bytes with strides and let a reorder produce what the primitive wants.
  const int64_t ksz = shape_numel(s.kernel), cg = s.c / s.group, mg = s.m / s.group;
  memory::dims wdims, wstrides;
  if (s.group > 1) wdims = {s.group, mg, cg}, wstrides = {cg * mg * ksz, ksz, mg * ksz};
  else wdims = {s.m, s.c}, wstrides = {ksz, s.m * ksz};
  const auto kstrides = shape_strides(s.kernel);
  for (size_t d = 0; d < nd; ++d) wdims.push_back(s.kernel[d]), wstrides.push_back(kstrides[d]);
  const memory::desc w_user_md(wdims, memory::data_type::f32, wstrides);
  const memory::desc w_any_md(wdims, memory::data_type::f32, memory::format_tag::any);
  const memory::desc b_md({s.m}, memory::data_type::f32, memory::format_tag::a);
  memory::dims strides(s.stride.begin(), s.stride.end()), dil(nd), pl(s.pad_begin.begin(), s.pad_begin.end()), pr(nd);
  for (size_t d = 0; d < nd; ++d) {
    dil[d] = s.dilation[d] - 1;
    pr[d] = s.pad_end[d] - s.out_pad[d];  // output_padding extends the far end
  }
  try {
    auto desc = has_bias ? dnnl::deconvolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
                                                             src_md, w_any_md, b_md, im.dst_md, strides, dil, pl, pr)
                         : dnnl::deconvolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
                                                             src_md, w_any_md, im.dst_md, strides, dil, pl, pr);
    dnnl::deconvolution_forward::primitive_desc pd(desc, eng);
    im.prim = dnnl::deconvolution_forward(pd);
    im.src = memory(src_md, eng, nullptr);
    im.wei_user = memory(w_user_md, eng, nullptr);
    im.wei = memory(pd.weights_desc(), eng);
    im.dst = memory(im.dst_md, eng, nullptr);
    if (has_bias) im.bias = memory(b_md, eng, nullptr);
    im.description = std::string("onednn.deconv[") + pd.impl_info_str() + "]" +
                     (layouts.x || layouts.y ? std::string(" ") + (layouts.x ? "nhwc" : "nchw") + "→" + (layouts.y ? "nhwc" : "nchw") : "");
  } catch (const dnnl::error& e) {
    throw Error(node.describe() + ": oneDNN could not make the transposed convolution " + shape_str(x) + " * " + shape_str(w) + ": " +
                e.what());
  }
  im.has_bias = has_bias;
  im.constant_weights = constant_weights;
  im.flops = 2.0 * double(shape_numel(x)) * double(mg) * double(ksz);
}

DeconvKernel::~DeconvKernel() = default;
double DeconvKernel::flops() const { return impl_->flops; }
std::string DeconvKernel::describe() const { return impl_->description; }

void DeconvKernel::run(const float* x, const float* w, const float* b, float* y) {
  Impl& im = *impl_;
  if (shape_numel(output_) == 0) return;
  auto& stream = dnnl_cpu_stream();
  if (!im.weights_ready || !im.constant_weights) {  // reordered once when the weights never change
    im.wei_user.set_data_handle(const_cast<float*>(w));
    dnnl::reorder(im.wei_user, im.wei).execute(stream, im.wei_user, im.wei);
    im.weights_ready = true;
  }
  im.src.set_data_handle(const_cast<float*>(x));
  im.dst.set_data_handle(y);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, im.src}, {DNNL_ARG_WEIGHTS, im.wei}, {DNNL_ARG_DST, im.dst}};
  if (im.has_bias) {
    im.bias.set_data_handle(const_cast<float*>(b));
    args.emplace(DNNL_ARG_BIAS, im.bias);
  }
  im.prim.execute(stream, args);
  stream.wait();
}

Tensor DeconvKernel::plain_output(const float* y) const {
  Tensor out(DType::Float32, output_);
  const memory::desc plain = act_desc(output_, false, memory::data_type::f32);
  if (impl_->dst_md == plain) {
    std::memcpy(out.raw(), y, out.nbytes());
    return out;
  }
  auto& eng = dnnl_cpu_engine();
  memory from(impl_->dst_md, eng, const_cast<float*>(y)), to(plain, eng, out.raw());
  dnnl::reorder(from, to).execute(dnnl_cpu_stream(), from, to);
  dnnl_cpu_stream().wait();
  return out;
}

void bind_cpu_conv_kernels() {
  bind_op_kernel("", "Conv", compute_conv);
  bind_op_kernel("fusebench", "FusedConv", compute_conv);
  bind_op_kernel("", "ConvTranspose", compute_conv_transpose);
}

}  // namespace fb
