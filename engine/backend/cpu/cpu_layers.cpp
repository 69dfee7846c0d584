// The CPU backend's layers: oneDNN primitives prebuilt for matrix products, attention,
// convolutions and max pooling; every other node runs its op's kernel from the engine's
// registry (a plugin's kernel included).
#include <oneapi/dnnl/dnnl.hpp>

#include <optional>

#include "engine/backend/cpu/attention.h"
#include "engine/backend/cpu/channels_last_layers.h"
#include "engine/backend/cpu/conv.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/dnnl_context.h"
#include "engine/backend/cpu/eager_region_layer.h"
#include "engine/backend/cpu/int8_matmul.h"
#include "engine/ops/int8_quantize.h"
#include "engine/backend/cpu/matmul.h"
#include "engine/ops/nn_common.h"
#include "engine/backend/cpu/half_storage_layer.h"
#include "engine/ops/half_float.h"
#include "engine/ops/fused_activation.h"

namespace fb {

namespace {

// Arithmetic per output element, for the roofline view; a rough count by op kind.
double flops_per_element(const Node& n, const OpDef& def) {
  if (n.domain == "fusebench" && n.op_type == "ElementwiseChain") return double(n.attr_ints("program").size() / 4);
  if (n.domain == "fusebench" && n.op_type == "LayerNorm") return 8;
  if (n.domain == "fusebench" && n.op_type == "Gelu") return 8;
  if (n.op_type == "Softmax" || n.op_type == "LogSoftmax") return 5;
  return def.elementwise ? 1 : 0;
}

// Runs the op table's kernel on the slots.
class KernelLayer : public Layer {
 public:
  explicit KernelLayer(const LayerRequest& r) : node_(r.node), def_(r.def), ctx_{node_, r.inputs, r.outputs, &r.ops} {
    for (Tensor* t : ctx_.outputs)
      if (t) flops_ += flops_per_element(node_, def_) * double(t->numel());
  }
  double flops() const override { return flops_; }
  void run() override {
    try {
      def_.compute(ctx_);
    } catch (const Error& e) {
      throw Error(node_.describe() + ": " + e.what());
    }
  }
  std::string kernel() const override { return (node_.domain.empty() ? "onnx." : node_.domain + ".") + node_.op_type; }

 private:
  Node node_;
  const OpDef& def_;
  OpContext ctx_;
  double flops_ = 0;
};

// MatMul, Gemm (with a [N] bias and beta = 1) and FusedMatMul on a prebuilt oneDNN primitive.
class MatMulLayer : public Layer {
 public:
  MatMulLayer(MatMulSpec spec, std::vector<const Tensor*> ins, Tensor* out)
      : spec_(spec), kernel_(spec), ins_(std::move(ins)), out_(out) {}
  void run() override {
    kernel_.run(ins_[0]->raw(), ins_[1]->raw(), spec_.has_bias ? ins_[2]->data<float>() : nullptr, out_->raw(),
                spec_.has_multiplier ? ins_[3]->raw() : nullptr);
  }
  std::string kernel() const override {
    std::string k = "onednn.matmul";
    if (spec_.bf16) k += "[" + kernel_.impl_info() + "]";
    if (spec_.has_bias) k += "+bias";
    if (spec_.activation != ActivationKind::None) k += std::string("+") + activation_kind_name(spec_.activation);
    if (spec_.has_multiplier) k += "+mul";
    if (spec_.bf16) k += " bf16";
    return k;
  }
  double flops() const override { return kernel_.flops(); }

 private:
  MatMulSpec spec_;
  MatMulKernel kernel_;
  std::vector<const Tensor*> ins_;
  Tensor* out_;
};

// MatMul, Gemm and FusedMatMul that precision lowering made int8 (constant 2-D weights, a
// calibrated input threshold): float32 in and out (engine/backend/cpu/int8_matmul.h).
class Int8MatMulLayer : public Layer {
 public:
  Int8MatMulLayer(const Node& n, std::vector<const Tensor*> ins, Tensor* out)
      : kernel_(spec_of(n, ins), ins[1]->data<float>()), ins_(std::move(ins)), out_(out),
        amax_(n.attr_float("int8_output_amax", 0.f)), zero_point_(int(n.attr_int("int8_output_zero_point", 0))) {}
  void run() override {
    const bool bias = ins_.size() > 2 && ins_[2];
    kernel_.run(ins_[0]->raw(), bias ? ins_[2]->data<float>() : nullptr, out_->raw());
  }
  std::string kernel() const override { return kernel_.describe(); }
  double flops() const override { return kernel_.flops(); }
  // A quantized output, as the float32 values it stands for.
  Tensor plain_copy(const Tensor& output) const override {
    if (output.dtype() == DType::Float32) return output.clone();
    return dequantized(output, int8_input_scale(amax_, output.dtype() == DType::UInt8 && zero_point_ == 0), zero_point_);
  }

 private:
  static Int8MatMulSpec spec_of(const Node& n, const std::vector<const Tensor*>& ins) {
    Int8MatMulSpec s;
    s.a = ins[0]->shape();
    s.b = ins[1]->shape();
    s.trans_b = n.attr_int("transB", 0) != 0;
    s.has_bias = ins.size() > 2 && ins[2];
    s.alpha = n.attr_float("alpha", 1.f);
    if (n.domain == "fusebench") s.activation = fused_activation_of(n).kind;
    s.input_amax = n.attr_float("int8_input_amax", 0.f);
    s.input_unsigned = n.attr_int("int8_input_unsigned", 0) != 0;
    s.input_zero_point = int(n.attr_int("int8_input_zero_point", 0));
    s.output_amax = n.attr_float("int8_output_amax", 0.f);
    s.output_unsigned = n.attr_int("int8_output_unsigned", 0) != 0;
    s.output_zero_point = int(n.attr_int("int8_output_zero_point", 0));
    s.activation_input_amax = n.attr_float("int8_activation_input_amax", 0.f);
    return s;
  }
  Int8MatMulKernel kernel_;
  std::vector<const Tensor*> ins_;
  Tensor* out_;
  float amax_;  // of a quantized output
  int zero_point_;
};

// fusebench.Attention on two prebuilt strided oneDNN matmuls (bf16 ones for a bf16 layer
// on oneDNN's bf16 kernels: q, k, v and the output bf16).
class AttentionLayer : public Layer {
 public:
  AttentionLayer(const Node& n, std::vector<const Tensor*> ins, Tensor* out, bool bf16 = false)
      : int8_(int8_of(n)),
        kernel_(ins[0]->shape(), ins[1]->shape(), n.attr_int("heads", 0), n.attr_float("scale", 1.f),
                ins.size() > 3 ? &ins[3]->shape() : nullptr, int8_.q_step > 0 ? &int8_ : nullptr, bf16),
        ins_(std::move(ins)), out_(out) {
    // A bf16 mask (a bf16 build converts it with the rest) is widened for the softmax.
    if (ins_.size() > 3 && is_half_type(ins_[3]->dtype()))
      mask_ = std::make_unique<Tensor>(Tensor::empty(DType::Float32, ins_[3]->shape()));
  }
  void run() override {
    const float* mask = nullptr;
    if (mask_) {
      widen_16(ins_[3]->dtype(), static_cast<const uint16_t*>(ins_[3]->raw()), mask_->data<float>(), mask_->numel());
      mask = mask_->data<float>();
    } else if (ins_.size() > 3) {
      mask = ins_[3]->data<float>();
    }
    kernel_.run(ins_[0]->raw(), ins_[1]->raw(), ins_[2]->raw(), out_->raw(), mask);
  }
  std::string kernel() const override { return kernel_.describe(); }
  double flops() const override { return kernel_.flops(); }

 private:
  // An int8 attention node's steps (precision lowering's attributes); zero otherwise.
  static AttentionInt8 int8_of(const Node& n) {
    if (!n.has_attr("int8_input_amax")) return {};
    return {int8_input_scale(n.attr_float("int8_input_amax", 0.f), false), int8_input_scale(n.attr_float("int8_k_amax", 0.f), false),
            int8_input_scale(n.attr_float("int8_v_amax", 0.f), false)};
  }
  AttentionInt8 int8_;
  AttentionKernel kernel_;
  std::vector<const Tensor*> ins_;
  Tensor* out_;
  std::unique_ptr<Tensor> mask_;  // float32 copy of a bf16 mask
};

// Conv and fusebench.FusedConv (residual sum, activation, layouts) on a prebuilt oneDNN convolution.
class ConvLayer : public Layer {
 public:
  ConvLayer(const Node& n, std::vector<const Tensor*> ins, Tensor* out, bool weights_constant, bool bf16 = false,
            bool winograd = false)
      : kernel_(n, ins[0]->shape(), ins[1]->shape(), input(ins, 2) != nullptr, weights_constant,
                n.has_attr("int8_input_amax") ? ins[1]->data<float>() : nullptr, bf16, winograd),
        ins_(std::move(ins)), out_(out) {
    if (conv_has_residual(n) && !input(ins_, 3)) throw Error(n.describe() + ": residual input missing");
  }
  void run() override {
    const Tensor *b = input(ins_, 2), *r = input(ins_, 3);
    kernel_.run(ins_[0]->raw(), ins_[1]->data<float>(), b ? b->data<float>() : nullptr, r ? r->raw() : nullptr, out_->raw());
  }
  std::string kernel() const override { return kernel_.describe(); }
  double flops() const override { return kernel_.flops(); }
  Tensor plain_copy(const Tensor& output) const override {
    return &output == out_ ? kernel_.plain_output(out_->raw()) : output.clone();
  }

 private:
  static const Tensor* input(const std::vector<const Tensor*>& ins, size_t i) { return i < ins.size() ? ins[i] : nullptr; }
  ConvKernel kernel_;
  std::vector<const Tensor*> ins_;
  Tensor* out_;
};

// ConvTranspose on a prebuilt oneDNN deconvolution (a U-Net's upsampling), weights reordered
// once; plain or channels-last. nullptr where its output_shape extends what the operation
// yields (the op table's kernel fills that).
class DeconvLayer : public Layer {
 public:
  static std::unique_ptr<Layer> make(const Node& n, const std::vector<const Tensor*>& ins, Tensor* y, bool weights_constant) {
    const Tensor* b = ins.size() > 2 ? ins[2] : nullptr;
    auto kernel = std::make_unique<DeconvKernel>(n, ins[0]->shape(), ins[1]->shape(), b != nullptr, weights_constant);
    if (kernel->output_shape() != y->shape()) return nullptr;
    return std::unique_ptr<Layer>(new DeconvLayer(std::move(kernel), ins[0], ins[1], b, y));
  }
  void run() override {
    kernel_->run(x_->data<float>(), w_->data<float>(), b_ ? b_->data<float>() : nullptr, y_->data<float>());
  }
  std::string kernel() const override { return kernel_->describe(); }
  double flops() const override { return kernel_->flops(); }
  Tensor plain_copy(const Tensor& output) const override {
    return &output == y_ ? kernel_->plain_output(y_->data<float>()) : output.clone();
  }

 private:
  DeconvLayer(std::unique_ptr<DeconvKernel> k, const Tensor* x, const Tensor* w, const Tensor* b, Tensor* y)
      : kernel_(std::move(k)), x_(x), w_(w), b_(b), y_(y) {}
  std::unique_ptr<DeconvKernel> kernel_;
  const Tensor *x_, *w_, *b_;
  Tensor* y_;
};

// MaxPool without Indices and AveragePool (2-D or 3-D, no dilation, row-major) on a
// prebuilt oneDNN pooling primitive: the op table's generic kernel walks windows element by
// element (after a CNN stem it was a quarter of resnet18's time; a DenseNet transition's
// 2x2 average ran at 1.8 GB/s).
class PoolLayer : public Layer {
 public:
  // nullptr where oneDNN cannot take the node (the op table's kernel runs it instead).
  // With layouts "channels_last" (engine/passes/conv_layout_propagation.cpp) it reads and
  // writes NHWC, and a node oneDNN cannot take is an Error, never the plain kernel; a
  // channels-last MaxPool is ours (MaxPoolNhwc, channels_last_layers.cpp): nullptr.
  static std::unique_ptr<Layer> make(const Node& n, const Tensor* x, Tensor* y) {
    const bool channels_last = n.attr_string("x_layout", "") == kChannelsLast;
    if (channels_last != (n.attr_string("y_layout", "") == kChannelsLast))
      throw Error(n.describe() + ": a pooling layer reads and writes one layout");
    if (channels_last && n.op_type == "MaxPool") return nullptr;
    std::unique_ptr<Layer> layer = make_if_supported(n, x, y, channels_last);
    if (!layer && channels_last) throw Error(n.describe() + ": oneDNN has no channels-last pooling for it");
    return layer;
  }
  void run() override {
    src_.set_data_handle(const_cast<void*>(x_->raw()));
    dst_.set_data_handle(y_->raw());
    prim_.execute(dnnl_cpu_stream(), {{DNNL_ARG_SRC, src_}, {DNNL_ARG_DST, dst_}});
    dnnl_cpu_stream().wait();
  }
  std::string kernel() const override {
    return std::string(average_ ? "onednn.pool_avg[" : "onednn.pool_max[") + impl_ + "]" + (channels_last_ ? " nhwc→nhwc" : "");
  }
  Tensor plain_copy(const Tensor& output) const override {
    if (!channels_last_ || &output != y_) return output.clone();
    Tensor out(DType::Float32, output.shape());
    const dnnl::memory::dims dims(output.shape().begin(), output.shape().end());
    dnnl::memory from(dst_.get_desc(), dnnl_cpu_engine(), const_cast<void*>(output.raw())),
        to(dnnl::memory::desc(dims, dnnl::memory::data_type::f32, dnnl::memory::format_tag::abcd), dnnl_cpu_engine(), out.raw());
    dnnl::reorder(from, to).execute(dnnl_cpu_stream(), from, to);
    dnnl_cpu_stream().wait();
    return out;
  }

 private:
  static std::unique_ptr<Layer> make_if_supported(const Node& n, const Tensor* x, Tensor* y, bool channels_last) {
    const Shape& xs = x->shape();
    if ((xs.size() != 4 && xs.size() != 5) || n.attr_int("storage_order", 0) != 0 || !n.has_attr("kernel_shape")) return nullptr;
    if (channels_last && xs.size() != 4) return nullptr;
    const bool average = n.op_type == "AveragePool", ceil = n.attr_int("ceil_mode", 0) != 0;
    const bool count_pads = average && n.attr_int("count_include_pad", 0) != 0;
    // ONNX and oneDNN may count a ceil_mode window's overhang differently: the op's kernel.
    if (count_pads && ceil) return nullptr;
    const Shape sp(xs.begin() + 2, xs.end());
    const WindowGeometry g = window_geometry(n, sp, {}, ceil);
    dnnl::memory::dims k(g.kernel.begin(), g.kernel.end()), st(g.stride.begin(), g.stride.end()),
        pl(g.pad_begin.begin(), g.pad_begin.end()), pr(sp.size());
    for (size_t d = 0; d < sp.size(); ++d) {
      if (g.dilation[d] != 1) return nullptr;
      // The far pad that yields the planned output size (ceil_mode and auto_pad included);
      // none where the last window ends before the input does (a 3x3/2 window over an even
      // size leaves the last row unread), which oneDNN's floor division also gives.
      pr[d] = std::max<dnnl::memory::dim>(0, (y->shape()[d + 2] - 1) * g.stride[d] + g.kernel[d] - sp[d] - g.pad_begin[d]);
    }
    const auto tag = channels_last ? dnnl::memory::format_tag::acdb
                     : xs.size() == 4 ? dnnl::memory::format_tag::abcd
                                      : dnnl::memory::format_tag::abcde;
    dnnl::memory::desc xd(dnnl::memory::dims(xs.begin(), xs.end()), dnnl::memory::data_type::f32, tag),
        yd(dnnl::memory::dims(y->shape().begin(), y->shape().end()), dnnl::memory::data_type::f32, tag);
    try {
      const dnnl::algorithm alg = !average ? dnnl::algorithm::pooling_max
                                  : count_pads ? dnnl::algorithm::pooling_avg_include_padding
                                               : dnnl::algorithm::pooling_avg_exclude_padding;
      dnnl::pooling_forward::desc desc(dnnl::prop_kind::forward_inference, alg, xd, yd, st, k, pl, pr);
      dnnl::pooling_forward::primitive_desc pd(desc, dnnl_cpu_engine());
      return std::unique_ptr<Layer>(new PoolLayer(pd, x, y, channels_last, average));
    } catch (const dnnl::error&) {
      return nullptr;
    }
  }
  PoolLayer(const dnnl::pooling_forward::primitive_desc& pd, const Tensor* x, Tensor* y, bool channels_last, bool average)
      : prim_(pd), src_(pd.src_desc(), dnnl_cpu_engine(), DNNL_MEMORY_NONE), dst_(pd.dst_desc(), dnnl_cpu_engine(), DNNL_MEMORY_NONE),
        impl_(pd.impl_info_str()), channels_last_(channels_last), average_(average), x_(x), y_(y) {}
  dnnl::pooling_forward prim_;
  dnnl::memory src_, dst_;
  std::string impl_;
  bool channels_last_, average_;
  const Tensor* x_;
  Tensor* y_;
};

bool all_float(const std::vector<const Tensor*>& ins) {
  for (const Tensor* t : ins)
    if (t && t->dtype() != DType::Float32) return false;
  return true;
}

// The oneDNN matmul for MatMul, Gemm (beta 1, a bias over N) and FusedMatMul; nullopt for
// any other node.
std::optional<MatMulSpec> matmul_spec_of(const LayerRequest& r) {
  const Node& node = r.node;
  const std::vector<const Tensor*>& ins = r.inputs;
  const bool has_third = ins.size() > 2 && ins[2] != nullptr;
  std::optional<MatMulSpec> s;
  if (node.domain.empty() && node.op_type == "MatMul") s = MatMulSpec{ins[0]->shape(), ins[1]->shape()};
  if (node.domain == "fusebench" && node.op_type == "FusedMatMul")
    s = fused_matmul_spec(node, ins[0]->shape(), ins[1]->shape(), has_third);
  if (node.domain.empty() && node.op_type == "Gemm" && node.attr_float("beta", 1.f) == 1.f &&
      (!has_third || (node.attr_float("alpha", 1.f) == 1.f && ins[2]->numel() == r.outputs[0]->shape().back() &&
                      ins[2]->shape().back() == r.outputs[0]->shape().back()))) {
    s = MatMulSpec{ins[0]->shape(), ins[1]->shape(), node.attr_int("transA", 0) != 0, node.attr_int("transB", 0) != 0, has_third};
    s->alpha = node.attr_float("alpha", 1.f);
  }
  if (s) s->constant_b = r.weights_constant();
  return s;
}

// The float32 layer for a node (oneDNN primitive where one fits, else the op table's kernel).
std::unique_ptr<Layer> make_float_layer(const LayerRequest& r) {
  const Node& node = r.node;
  const std::vector<const Tensor*>& ins = r.inputs;
  const std::vector<Tensor*>& outs = r.outputs;
  if (all_float(ins)) {
    if (auto s = matmul_spec_of(r)) return std::make_unique<MatMulLayer>(*s, ins, outs[0]);
    if (is_convolution(node)) return std::make_unique<ConvLayer>(node, ins, outs[0], r.weights_constant(), false, r.winograd);
    if (node.domain == "fusebench" && node.op_type == "Attention") return std::make_unique<AttentionLayer>(node, ins, outs[0]);
    if (node.domain.empty() && ((node.op_type == "MaxPool" && (outs.size() < 2 || !outs[1])) || node.op_type == "AveragePool"))
      if (auto pool = PoolLayer::make(node, ins[0], outs[0])) return pool;
    if (node.domain.empty() && node.op_type == "ConvTranspose")
      if (auto deconv = DeconvLayer::make(node, ins, outs[0], r.weights_constant())) return deconv;
  }
  if (node.domain == "fusebench" && node.op_type == "EagerRegion") return make_eager_region_layer(r);
  if (auto gate_or_pool = make_channels_last_layer(r)) return gate_or_pool;
  // A layout the op table's kernels would misread (they take plain tensors).
  if (node.has_attr("x_layout") || node.has_attr("y_layout"))
    throw Error(node.describe() + ": no kernel for its channels-last layout here");
  return std::make_unique<KernelLayer>(r);
}

// A bf16 layer on oneDNN's bf16 kernels (use_onednn_bf16): matrix products, attention and
// convolutions whose activations are bf16, with float32 biases and constant float32
// weights (packed to bf16 once). nullptr for anything else: HalfStorageLayer widens it.
std::unique_ptr<Layer> make_bf16_layer(const LayerRequest& r) {
  const Node& node = r.node;
  const std::vector<const Tensor*>& ins = r.inputs;
  auto is = [](const Tensor* t, DType d) { return t && t->dtype() == d; };
  auto optional_is = [&](size_t i, DType d) { return i >= ins.size() || !ins[i] || is(ins[i], d); };
  if (r.outputs.size() != 1 || ins.size() < 2 || !is(r.outputs[0], DType::BFloat16) || !is(ins[0], DType::BFloat16))
    return nullptr;
  const bool constant_f32_weights = is(ins[1], DType::Float32) && r.weights_constant();
  if (auto s = matmul_spec_of(r)) {
    if (!is(ins[1], DType::BFloat16) && !constant_f32_weights) return nullptr;
    if (!optional_is(2, DType::Float32) || !optional_is(3, DType::BFloat16)) return nullptr;
    s->bf16 = true;
    s->b_type = ins[1]->dtype();
    return std::make_unique<MatMulLayer>(*s, ins, r.outputs[0]);
  }
  if (is_convolution(node) && constant_f32_weights && optional_is(2, DType::Float32) && optional_is(3, DType::BFloat16))
    return std::make_unique<ConvLayer>(node, ins, r.outputs[0], true, true);
  if (node.domain == "fusebench" && node.op_type == "Attention" && is(ins[1], DType::BFloat16) && is(ins[2], DType::BFloat16) &&
      (optional_is(3, DType::BFloat16) || optional_is(3, DType::Float32)))
    return std::make_unique<AttentionLayer>(node, ins, r.outputs[0], true);
  return nullptr;
}

// Whether oneDNN gave the layer a reference implementation ("ref:any", named in the
// kernel): scalar loops, slower than widening for a float32 jit kernel. resnet18's first
// convolution (3 input channels, NCHW) has no jit bf16 kernel in oneDNN 2.6 here.
bool runs_reference_kernel(const Layer& l) {
  const std::string k = l.kernel();
  return k.find("[ref") != std::string::npos || k.find(",ref") != std::string::npos;
}

// Kernels that read and write bf16/fp16 tensors themselves (computing in float32 inside):
// ours, and Softmax over contiguous rows (its innermost axis, or any axis before opset 13,
// which flattens to rows).
bool reads_16bit_natively(const Node& n, const std::vector<const Tensor*>& ins) {
  if (n.domain.empty() && (n.op_type == "Softmax" || n.op_type == "LogSoftmax") && !ins.empty() && ins[0]) {
    const int64_t rank = ins[0]->rank();
    if (n.opset != 0 && n.opset < 13) return rank > 0;
    const int64_t axis = n.attr_int("axis", -1);
    return rank > 0 && (axis == -1 || axis == rank - 1);
  }
  return n.domain == "fusebench" && (n.op_type == "Convert" || n.op_type == "LayerNorm" || n.op_type == "AddLayerNorm" ||
                                    n.op_type == "ElementwiseChain");
}

}  // namespace

std::unique_ptr<Layer> make_cpu_layer(const LayerRequest& r) {
  const Node& node = r.node;
  // An int8 layer: precision lowering checked the op, the constant weights and the
  // calibrated input threshold it leaves as attributes.
  if (node.precision == Precision::INT8 && node.has_attr("int8_input_amax")) {
    if (!r.weights_constant() && node.op_type != "Attention") throw Error(node.describe() + ": an int8 layer needs constant weights");
    if (node.op_type == "Attention") return std::make_unique<AttentionLayer>(node, r.inputs, r.outputs[0]);
    if (is_convolution(node)) return std::make_unique<ConvLayer>(node, r.inputs, r.outputs[0], true);
    return std::make_unique<Int8MatMulLayer>(node, r.inputs, r.outputs[0]);
  }
  // Only layers the precision pass lowered to 16-bit storage are wrapped: a model's own
  // bf16/fp16 tensors (a Cast to bfloat16 in an fp32 build) are the op's business, and
  // widening around it would change its answer (ONNX's test_cast_FLOAT_to_BFLOAT16).
  const bool lowered = node.precision == Precision::BF16 || node.precision == Precision::FP16;
  bool any_16bit = false;
  for (const Tensor* t : r.inputs) any_16bit = any_16bit || (t && is_half_type(t->dtype()));
  for (const Tensor* t : r.outputs) any_16bit = any_16bit || (t && is_half_type(t->dtype()));
  if (lowered && any_16bit && node.precision == Precision::BF16 && use_onednn_bf16())
    if (auto layer = make_bf16_layer(r); layer && !runs_reference_kernel(*layer)) return layer;
  if (lowered && any_16bit && !reads_16bit_natively(node, r.inputs)) return std::make_unique<HalfStorageLayer>(r, make_float_layer);
  return make_float_layer(r);
}

}  // namespace fb
