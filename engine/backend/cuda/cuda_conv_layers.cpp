// Convolutions on the GPU: Conv and fusebench.FusedConv on cuDNN's convolution (its
// heuristic's first algorithm that fits the workspace, as PyTorch with cudnn.benchmark
// off), then bias, residual and activation in one pass of our epilogue kernel; 2-D
// depthwise ones on our own kernel with all of that in the same pass (conv_kernels.h). float32
// convolutions run in full fp32 (CUDNN_FMA_MATH: no TF32); tf32, fp16 and bf16 ones on
// tensor cores.
// Not yet: cuDNN's fused conv+bias+activation (one pass less), asymmetric padding.
#include <algorithm>

#include "engine/backend/cuda/conv_kernels.h"
#include "engine/backend/cuda/epilogue_kernels.h"
#include "engine/ops/fused_activation.h"
#include "engine/ops/nn_common.h"

namespace fb::cuda {

namespace {

cudnnDataType_t cudnn_type(Elem e) {
  return e == Elem::F16 ? CUDNN_DATA_HALF : e == Elem::BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}


// 1-D convolutions run as 2-D ones of height 1 (cuDNN wants at least 4-D descriptors).
std::vector<int> dims4(const Shape& s) {
  std::vector<int> d(s.begin(), s.end());
  if (d.size() == 3) d.insert(d.begin() + 2, 1);
  return d;
}
std::vector<int> packed_strides(const std::vector<int>& d) {
  std::vector<int> st(d.size(), 1);
  for (size_t i = d.size() - 1; i-- > 0;) st[i] = st[i + 1] * d[i + 1];
  return st;
}

class ConvLayer final : public CudaLayer {
 public:
  ConvLayer(const LayerRequest& r, const CudaContext& ctx) : CudaLayer(ctx) {
    const Node& n = r.node;
    y_ = r.outputs[0];
    const Elem e = elem_of(*y_);
    const DType t_y = y_->dtype();
    x_ = input_as(r, 0, t_y, x_keep_);
    w_ = input_as(r, 1, t_y, w_keep_);
    const Shape& xs = r.inputs[0]->shape();
    const Shape& ws = r.inputs[1]->shape();
    if (xs.size() < 3 || xs.size() > 5) throw Error(n.describe() + ": the CUDA backend runs 1-D to 3-D convolutions");
    const size_t nd = xs.size() - 2;
    const WindowGeometry geo = window_geometry(n, Shape(xs.begin() + 2, xs.end()), Shape(ws.begin() + 2, ws.end()), false);
    std::vector<int> pad, stride, dilation;
    for (size_t d = 0; d < nd; ++d) {
      if (geo.pad_begin[d] != geo.pad_end[d])
        throw Error(n.describe() + ": asymmetric padding is not run on the GPU yet (pads " + std::to_string(geo.pad_begin[d]) +
                    " and " + std::to_string(geo.pad_end[d]) + ")");
      pad.push_back(int(geo.pad_begin[d]));
      stride.push_back(int(geo.stride[d]));
      dilation.push_back(int(geo.dilation[d]));
    }
    if (nd == 1) pad.insert(pad.begin(), 0), stride.insert(stride.begin(), 1), dilation.insert(dilation.begin(), 1);
    const cudnnDataType_t t = cudnn_type(e);
    const std::vector<int> xd = dims4(xs), wd = dims4(ws), yd = dims4(y_->shape());
    FB_CUDA(cudnnCreateTensorDescriptor(&xdesc_));
    FB_CUDA(cudnnCreateTensorDescriptor(&ydesc_));
    FB_CUDA(cudnnCreateFilterDescriptor(&wdesc_));
    FB_CUDA(cudnnCreateConvolutionDescriptor(&conv_));
    FB_CUDA(cudnnSetTensorNdDescriptor(xdesc_, t, int(xd.size()), xd.data(), packed_strides(xd).data()));
    FB_CUDA(cudnnSetTensorNdDescriptor(ydesc_, t, int(yd.size()), yd.data(), packed_strides(yd).data()));
    FB_CUDA(cudnnSetFilterNdDescriptor(wdesc_, t, CUDNN_TENSOR_NCHW, int(wd.size()), wd.data()));
    FB_CUDA(cudnnSetConvolutionNdDescriptor(conv_, int(pad.size()), pad.data(), stride.data(), dilation.data(),
                                            CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    FB_CUDA(cudnnSetConvolutionGroupCount(conv_, int(n.attr_int("group", 1))));
    // Full fp32 (FMA math) unless the layer is tf32 or 16-bit: tensor cores then.
    const bool fma_only = e == Elem::F32 && n.precision != Precision::TF32;
    FB_CUDA(cudnnSetConvolutionMathType(conv_, fma_only ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH));
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int found = 0;
    FB_CUDA(cudnnGetConvolutionForwardAlgorithm_v7(ctx.cudnn, xdesc_, wdesc_, conv_, ydesc_, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                   &found, perf));
    bool chosen = false;
    for (int i = 0; i < found && !chosen; ++i) {
      // Heuristics may list a tensor-core (TF32) algorithm for a float32 layer: keep FMA math.
      if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > ctx.workspace_bytes) continue;
      if (fma_only && perf[i].mathType == CUDNN_TENSOR_OP_MATH) continue;
      algo_ = perf[i].algo;
      chosen = true;
    }
    if (!chosen) throw Error(n.describe() + ": cuDNN has no convolution algorithm for this layer within the workspace");
    Epilogue& ep = epilogue_;
    ep.outer = y_->shape()[0];
    ep.channels = y_->shape()[1];
    ep.inner = y_->numel() / std::max<int64_t>(ep.outer * ep.channels, 1);
    if (r.inputs.size() > 2 && r.inputs[2]) ep.bias = input_as(r, 2, t_y, bias_keep_), ep.bias_elem = e;
    if (n.domain == "fusebench") {
      if (r.inputs.size() > 3 && r.inputs[3]) ep.residual = input_as(r, 3, t_y, residual_keep_);
      const FusedActivation a = fused_activation_of(n);
      ep.act = a.kind, ep.lo = a.lo, ep.hi = a.hi;
    }
    // The residual may be y itself (the arena hands a dying residual's buffer to the
    // output): cuDNN then adds the convolution to it (beta 1), before the epilogue.
    if (ep.residual && ep.residual == y_->raw()) ep.residual = nullptr, beta_ = 1.f;
    epilogue_needed_ = ep.bias || ep.residual || ep.act != ActivationKind::None;
    int64_t k = 1;
    for (size_t i = 1; i < ws.size(); ++i) k *= ws[i];
    flops_ = 2.0 * double(y_->numel()) * double(k);
    kernel_ = "cudnn.conv[algo " + std::to_string(int(algo_)) + "]" + (epilogue_needed_ ? "+epilogue" : "") +
              kernel_suffix(e, n.precision);
  }
  ~ConvLayer() override {
    cudnnDestroyConvolutionDescriptor(conv_);
    cudnnDestroyFilterDescriptor(wdesc_);
    cudnnDestroyTensorDescriptor(ydesc_);
    cudnnDestroyTensorDescriptor(xdesc_);
  }
  void run() override {
    const float one = 1.f;
    FB_CUDA(cudnnConvolutionForward(ctx_.cudnn, &one, xdesc_, x_, wdesc_, w_, conv_, algo_, ctx_.workspace,
                                    ctx_.workspace_bytes, &beta_, ydesc_, y_->raw()));
    if (epilogue_needed_) launch_epilogue(elem_of(*y_), y_->raw(), epilogue_, ctx_.stream);
  }
  std::string kernel() const override { return kernel_; }
  double flops() const override { return flops_; }

 private:
  const void *x_, *w_;  // in the layer's type
  DeviceMemory x_keep_, w_keep_, bias_keep_, residual_keep_;  // constants converted to it
  float beta_ = 0.f;  // 1: y holds the residual, which cuDNN adds to
  Tensor* y_;
  cudnnTensorDescriptor_t xdesc_ = nullptr, ydesc_ = nullptr;
  cudnnFilterDescriptor_t wdesc_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnConvolutionFwdAlgo_t algo_{};
  Epilogue epilogue_;
  bool epilogue_needed_ = false;
  double flops_ = 0;
  std::string kernel_;
};

// A 2-D convolution with one input channel per output channel (MobileNet's, EfficientNet's
// depthwise convolutions), on our own kernel: PyTorch's eager convolution also leaves
// float32 depthwise ones to its own kernel rather than cuDNN. Any padding and dilation.
bool is_depthwise_2d(const LayerRequest& r) {
  const Shape& xs = r.inputs[0]->shape();
  const Shape& ws = r.inputs[1]->shape();
  return xs.size() == 4 && ws.size() == 4 && ws[1] == 1 && ws[0] == xs[1] && r.node.attr_int("group", 1) == xs[1];
}

class DepthwiseConvLayer final : public CudaLayer {
 public:
  DepthwiseConvLayer(const LayerRequest& r, const CudaContext& ctx) : CudaLayer(ctx) {
    const Node& n = r.node;
    Tensor* y = r.outputs[0];
    const DType t = y->dtype();
    const Shape& xs = r.inputs[0]->shape();
    const Shape& ws = r.inputs[1]->shape();
    const WindowGeometry geo = window_geometry(n, Shape(xs.begin() + 2, xs.end()), Shape(ws.begin() + 2, ws.end()), false);
    DepthwiseConv& p = p_;
    p.batch = xs[0], p.channels = xs[1], p.in_h = xs[2], p.in_w = xs[3];
    p.out_h = y->shape()[2], p.out_w = y->shape()[3];
    p.kernel_h = ws[2], p.kernel_w = ws[3];
    p.stride_h = geo.stride[0], p.stride_w = geo.stride[1];
    p.pad_h = geo.pad_begin[0], p.pad_w = geo.pad_begin[1];
    p.dilation_h = geo.dilation[0], p.dilation_w = geo.dilation[1];
    p.elem = elem_of(*y);
    p.x = input_as(r, 0, t, x_keep_);
    p.weights = input_as(r, 1, t, w_keep_);
    if (r.inputs.size() > 2 && r.inputs[2]) p.bias = input_as(r, 2, t, bias_keep_);
    if (n.domain == "fusebench") {
      if (r.inputs.size() > 3 && r.inputs[3]) p.residual = input_as(r, 3, t, residual_keep_);
      const FusedActivation a = fused_activation_of(n);
      p.act = a.kind, p.lo = a.lo, p.hi = a.hi;
    }
    p.y = y->raw();
    flops_ = 2.0 * double(y->numel()) * double(ws[2] * ws[3]);
    kernel_ = std::string("fusebench.depthwise_conv") + (p.bias || p.residual || p.act != ActivationKind::None ? "+epilogue" : "") +
              kernel_suffix(p.elem, n.precision);
  }
  void run() override { launch_depthwise_conv(p_, ctx_.stream); }
  std::string kernel() const override { return kernel_; }
  double flops() const override { return flops_; }

 private:
  DepthwiseConv p_;
  DeviceMemory x_keep_, w_keep_, bias_keep_, residual_keep_;  // constants converted to the layer's type
  double flops_ = 0;
  std::string kernel_;
};

// Channels-last layouts and int8 attributes are the CPU backend's (it answers that it
// keeps convolutions channels-last; this one does not), so a node carrying them is not ours.
PrecisionSet conv_precisions(const Node& n) {
  for (const char* key : {"x_layout", "residual_layout", "y_layout", "int8_input_amax"})
    if (n.has_attr(key)) return {};
  return {Precision::FP32, Precision::TF32, Precision::FP16, Precision::BF16};
}

std::unique_ptr<Layer> make_conv(const LayerRequest& r, const CudaContext& ctx) {
  if (is_depthwise_2d(r)) return std::make_unique<DepthwiseConvLayer>(r, ctx);
  return std::make_unique<ConvLayer>(r, ctx);
}

}  // namespace

void add_conv_rows(std::vector<CudaOpRow>& rows) {
  rows.push_back({"", "Conv", conv_precisions, make_conv});
  rows.push_back({"fusebench", "FusedConv", conv_precisions, make_conv});
}

}  // namespace fb::cuda
