// Convolutions on the GPU: Conv and fusebench.FusedConv on cuDNN's convolution, a plan of its
// graph API (cudnn_graph_conv.h: in an engine the fastest of the heuristic's plans timed on
// the layer's buffers at build, as TensorRT's tactics; untimed, as in the reference, the
// heuristic's first, as PyTorch with cudnn.benchmark off; the legacy API's heuristic where
// the graph API lists nothing usable), then bias, residual and activation in one pass of
// our epilogue kernel; 2-D depthwise ones on our own kernel with all of that in the same
// pass (conv_kernels.h);
// 16-bit ones of non-overlapping patches as a matrix product (PatchConvLayer). float32
// convolutions run in full fp32 (CUDNN_FMA_MATH: no TF32); tf32, fp16 and bf16 ones on
// tensor cores.
// Layouts: where the conv-layout pass marks a convolution's x or y channels-last, the layer
// runs channels-last (cuDNN NHWC descriptors and KRSC weights, repacked once: the layout of
// cuDNN's tensor-core kernels, as PyTorch's channels_last); a tensor given in the other
// layout (the image entering, a plain output leaving) is reordered through scratch memory
// of the layer's own.
// Not yet: cuDNN's fused conv+bias+activation (one pass less), asymmetric padding.
#include <algorithm>

#include "engine/backend/cuda/conv_kernels.h"
#include "engine/backend/cuda/cudnn_graph_conv.h"
#include "engine/backend/cuda/data_movement_kernels.h"
#include "engine/backend/cuda/epilogue_kernels.h"
#include "engine/backend/cuda/lt_matmul.h"
#include "engine/ops/fused_activation.h"
#include "engine/ops/fused_conv.h"
#include "engine/ops/half_float.h"
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
// Element strides of [N, C, d...] dims, plain or channels-last ([N, d..., C] in memory).
std::vector<int> strides_of(const std::vector<int>& d, bool channels_last) {
  std::vector<int> st(d.size(), 1);
  if (!channels_last) {
    for (size_t i = d.size() - 1; i-- > 0;) st[i] = st[i + 1] * d[i + 1];
    return st;
  }
  int step = d[1];
  for (size_t i = d.size(); i-- > 2;) st[i] = step, step *= d[i];
  st[0] = step;
  return st;
}

// One copy of an [N, C, d...] tensor into the other layout, planned at build time.
struct Reorder {
  StridedCopy copy;
  const void* src = nullptr;
  void* dst = nullptr;  // null: nothing to copy
  void run(cudaStream_t stream) const {
    if (dst) launch_strided_copy(copy, src, dst, stream);
  }
};

Reorder reorder(const Shape& s, size_t elem_bytes, const void* src, void* dst, bool to_channels_last) {
  const int64_t n = s[0], c = s[1], hw = n * c != 0 ? shape_numel(s) / (n * c) : 0;
  // Walked in the destination's order, so that its writes are contiguous.
  const std::vector<int64_t> plain_nsc{c * hw, 1, hw}, last_nsc{hw * c, c, 1};  // strides of [N, S, C]
  const std::vector<int64_t> plain_ncs{c * hw, hw, 1}, last_ncs{hw * c, 1, c};  // strides of [N, C, S]
  Reorder r;
  r.copy = to_channels_last ? strided_copy({n, hw, c}, plain_nsc, last_nsc, elem_bytes)
                            : strided_copy({n, c, hw}, last_ncs, plain_ncs, elem_bytes);
  r.src = src;
  r.dst = dst;
  return r;
}

// What a convolution layer running in one layout does about the tensors the pass gave it
// in the other (x plain into a channels-last layer, y plain out of one, a residual in
// either): copies through scratch memory of its own, before and after its kernels.
class LayoutBridge {
 public:
  // x and residual: the layer's inputs in its type (residual may be null); y its output.
  LayoutBridge(const Node& n, bool channels_last, const Shape& x_shape, const void* x, const void* residual, Tensor& y) {
    const ConvLayouts l = conv_layouts_of(n);
    const size_t es = dtype_size(y.dtype());
    x_ = x, residual_ = residual, y_ = y.raw();
    if (l.x != channels_last) {
      x_scratch_ = DeviceMemory(size_t(shape_numel(x_shape)) * es);
      x_in_ = reorder(x_shape, es, x, x_scratch_.data(), channels_last);
      x_ = x_scratch_.data();
    }
    if (residual && l.residual != channels_last) {
      r_scratch_ = DeviceMemory(size_t(y.numel()) * es);
      residual_in_ = reorder(y.shape(), es, residual, r_scratch_.data(), channels_last);
      residual_ = r_scratch_.data();
    }
    if (l.y != channels_last) {
      y_scratch_ = DeviceMemory(size_t(y.numel()) * es);
      y_out_ = reorder(y.shape(), es, y_scratch_.data(), y.raw(), l.y);
      y_ = y_scratch_.data();
    }
    if (l.x || l.y || l.residual)
      suffix_ = std::string(" ") + (l.x ? "nhwc" : "nchw") + "→" + (l.y ? "nhwc" : "nchw");
  }
  const void* x() const { return x_; }                // what the kernels read, in the layer's layout
  const void* residual() const { return residual_; }  // the same, or null
  void* y() const { return y_; }                      // where they write
  void before(cudaStream_t s) const { x_in_.run(s), residual_in_.run(s); }
  void after(cudaStream_t s) const { y_out_.run(s); }
  // " nhwc→nhwc", " nchw→nhwc" ... for a layer with any channels-last tensor, else "".
  const std::string& suffix() const { return suffix_; }

 private:
  const void *x_ = nullptr, *residual_ = nullptr;
  void* y_ = nullptr;
  DeviceMemory x_scratch_, r_scratch_, y_scratch_;
  Reorder x_in_, residual_in_, y_out_;
  std::string suffix_;
};

// A layer runs channels-last where its x or y is (the residual follows them).
bool conv_runs_channels_last(const Node& n) {
  const ConvLayouts l = conv_layouts_of(n);
  return l.x || l.y;
}

// The constant weights [K, C/g, k...] as [K, k..., C/g] (cuDNN's KRSC filter layout) in
// `want`, kept in `keep`; nullptr where input 1 is no constant.
const void* channels_last_weights(const LayerRequest& r, DType want, DeviceMemory& keep) {
  const Tensor* host = r.host_constants.size() > 1 ? r.host_constants[1] : nullptr;
  if (!host) return nullptr;
  Tensor w = plain_to_channels_last(*host);
  if (w.dtype() != want) {
    if (w.dtype() != DType::Float32 || !is_half_type(want))
      throw Error(r.node.describe() + ": weights of " + dtype_name(w.dtype()) + " in a layer of " + dtype_name(want));
    Tensor narrowed(want, w.shape());
    narrow_half(w, narrowed);
    w = std::move(narrowed);
  }
  keep = DeviceMemory(w.raw(), w.nbytes());
  return keep.data();
}

class ConvLayer final : public CudaLayer {
 public:
  ConvLayer(const LayerRequest& r, const CudaContext& ctx) : CudaLayer(ctx) {
    const Node& n = r.node;
    y_ = r.outputs[0];
    const Elem e = elem_of(*y_);
    const DType t_y = y_->dtype();
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
    FB_CUDA(cudnnSetConvolutionNdDescriptor(conv_, int(pad.size()), pad.data(), stride.data(), dilation.data(),
                                            CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    FB_CUDA(cudnnSetConvolutionGroupCount(conv_, int(n.attr_int("group", 1))));
    // Full fp32 (FMA math) unless the layer is tf32 or 16-bit: tensor cores then.
    const bool fma_only = e == Elem::F32 && n.precision != Precision::TF32;
    FB_CUDA(cudnnSetConvolutionMathType(conv_, fma_only ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH));
    // The tensors in one layout, and the first algorithm the legacy heuristic lists for them.
    auto choose = [&](bool channels_last) {
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      int found = 0;
      try {
        FB_CUDA(cudnnSetTensorNdDescriptor(xdesc_, t, int(xd.size()), xd.data(), strides_of(xd, channels_last).data()));
        FB_CUDA(cudnnSetTensorNdDescriptor(ydesc_, t, int(yd.size()), yd.data(), strides_of(yd, channels_last).data()));
        FB_CUDA(cudnnSetFilterNdDescriptor(wdesc_, t, channels_last ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, int(wd.size()),
                                           wd.data()));
        FB_CUDA(cudnnGetConvolutionForwardAlgorithm_v7(ctx.cudnn, xdesc_, wdesc_, conv_, ydesc_,
                                                       CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf));
      } catch (const Error&) {
        if (!channels_last) throw;
        return false;  // cuDNN refuses these channels-last descriptors
      }
      for (int i = 0; i < found; ++i) {
        // Heuristics may list a tensor-core (TF32) algorithm for a float32 layer: keep FMA math.
        if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > ctx.workspace_bytes) continue;
        if (fma_only && perf[i].mathType == CUDNN_TENSOR_OP_MATH) continue;
        algo_ = perf[i].algo;
        return true;
      }
      return false;
    };
    bool nhwc = conv_runs_channels_last(n);
    bool chosen = choose(nhwc);
    // None listed for channels-last (an odd shape or type), or its descriptors refused: the
    // layer runs plain inside, its bridges reordering the channels-last tensors in and out.
    const bool plain_inside = !chosen && nhwc;
    if (plain_inside) chosen = choose(nhwc = false);
    if (!chosen) throw Error(n.describe() + ": cuDNN has no convolution algorithm for this layer within the workspace");
    // KRSC weights for a channels-last layer: repacked once where constant, else each run.
    w_ = nhwc ? channels_last_weights(r, t_y, w_keep_) : nullptr;
    const bool repack_each_run = nhwc && !w_;
    if (!w_) w_ = input_as(r, 1, t_y, w_keep_);
    if (repack_each_run) {
      w_scratch_ = DeviceMemory(size_t(r.inputs[1]->numel()) * dtype_size(t_y));
      w_in_ = reorder(r.inputs[1]->shape(), dtype_size(t_y), w_, w_scratch_.data(), true);
      w_ = w_scratch_.data();
    }
    Epilogue& ep = epilogue_;
    // y as [outer, channels, inner]: [N, C, spatial] plain, [N·spatial, C, 1] channels-last.
    ep.channels = y_->shape()[1];
    ep.outer = nhwc ? y_->numel() / std::max<int64_t>(ep.channels, 1) : y_->shape()[0];
    ep.inner = y_->numel() / std::max<int64_t>(ep.outer * ep.channels, 1);
    if (r.inputs.size() > 2 && r.inputs[2]) ep.bias = input_as(r, 2, t_y, bias_keep_), ep.bias_elem = e;
    const void* residual = nullptr;
    if (n.domain == "fusebench") {
      if (r.inputs.size() > 3 && r.inputs[3]) residual = input_as(r, 3, t_y, residual_keep_);
      const FusedActivation a = fused_activation_of(n);
      ep.act = a.kind, ep.lo = a.lo, ep.hi = a.hi;
    }
    bridge_ = std::make_unique<LayoutBridge>(n, nhwc, xs, input_as(r, 0, t_y, x_keep_), residual, *y_);
    x_ = bridge_->x();
    ep.residual = bridge_->residual();
    // The residual may be y itself (the arena hands a dying residual's buffer to the
    // output): cuDNN then adds the convolution to it (beta 1), before the epilogue.
    if (ep.residual && ep.residual == bridge_->y()) ep.residual = nullptr, beta_ = 1.f;
    epilogue_needed_ = ep.bias || ep.residual || ep.act != ActivationKind::None;
    // cuDNN's graph API, timed or as PyTorch picks; the legacy heuristic's first algorithm
    // where it lists nothing usable.
    std::string graph_refused;
    {
      auto longs = [](const std::vector<int>& v) { return std::vector<int64_t>(v.begin(), v.end()); };
      GraphConvSpec spec;
      spec.type = t;
      spec.fma_only = fma_only;
      spec.x_dims = longs(xd), spec.x_strides = longs(strides_of(xd, nhwc));
      spec.w_dims = longs(wd), spec.w_strides = longs(strides_of(wd, nhwc));
      spec.y_dims = longs(yd), spec.y_strides = longs(strides_of(yd, nhwc));
      spec.pad = longs(pad), spec.stride = longs(stride), spec.dilation = longs(dilation);
      spec.beta = beta_;
      const PlanChoice choice = !r.time_algorithms ? PlanChoice::HeuristicFirst
                                : r.cuda_graph       ? PlanChoice::TimedInGraph
                                                     : PlanChoice::TimedEager;
      graph_ = CudnnGraphConv::make(ctx, spec, x_, w_, bridge_->y(), choice, graph_refused);
    }
    int64_t k = 1;
    for (size_t i = 1; i < ws.size(); ++i) k *= ws[i];
    flops_ = 2.0 * double(y_->numel()) * double(k);
    const std::string how = graph_ ? "engine " + std::to_string(graph_->engine()) + (graph_->timed() ? ", timed" : "")
                                   : "algo " + std::to_string(int(algo_)) + "; " + graph_refused;
    kernel_ = "cudnn.conv[" + how + "]" + (epilogue_needed_ ? "+epilogue" : "") +
              bridge_->suffix() + (plain_inside ? " (nchw inside)" : "") + kernel_suffix(e, n.precision);
  }
  ~ConvLayer() override {
    cudnnDestroyConvolutionDescriptor(conv_);
    cudnnDestroyFilterDescriptor(wdesc_);
    cudnnDestroyTensorDescriptor(ydesc_);
    cudnnDestroyTensorDescriptor(xdesc_);
  }
  void run() override {
    const float one = 1.f;
    w_in_.run(ctx_.stream);
    bridge_->before(ctx_.stream);
    if (graph_) graph_->run();
    else
      FB_CUDA(cudnnConvolutionForward(ctx_.cudnn, &one, xdesc_, x_, wdesc_, w_, conv_, algo_, ctx_.workspace,
                                      ctx_.workspace_bytes, &beta_, ydesc_, bridge_->y()));
    if (epilogue_needed_) launch_epilogue(elem_of(*y_), bridge_->y(), epilogue_, ctx_.stream);
    bridge_->after(ctx_.stream);
  }
  std::string kernel() const override { return kernel_; }
  double flops() const override { return flops_; }

 private:
  const void *x_, *w_;  // in the layer's type and layout
  DeviceMemory x_keep_, w_keep_, bias_keep_, residual_keep_;  // constants converted to it
  DeviceMemory w_scratch_;  // non-constant weights repacked for a channels-last layer
  Reorder w_in_;
  std::unique_ptr<LayoutBridge> bridge_;
  float beta_ = 0.f;  // 1: y holds the residual, which cuDNN adds to
  Tensor* y_;
  cudnnTensorDescriptor_t xdesc_ = nullptr, ydesc_ = nullptr;
  cudnnFilterDescriptor_t wdesc_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnConvolutionFwdAlgo_t algo_{};
  std::unique_ptr<CudnnGraphConv> graph_;  // the graph API's plan (timed or not); null: the legacy call
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
    p.weights = input_as(r, 1, t, w_keep_);  // [C, 1, kh, kw] in either layout
    if (r.inputs.size() > 2 && r.inputs[2]) p.bias = input_as(r, 2, t, bias_keep_);
    const void* residual = nullptr;
    if (n.domain == "fusebench") {
      if (r.inputs.size() > 3 && r.inputs[3]) residual = input_as(r, 3, t, residual_keep_);
      const FusedActivation a = fused_activation_of(n);
      p.act = a.kind, p.lo = a.lo, p.hi = a.hi;
    }
    p.channels_last = conv_runs_channels_last(n);
    bridge_ = std::make_unique<LayoutBridge>(n, p.channels_last, xs, input_as(r, 0, t, x_keep_), residual, *y);
    p.x = bridge_->x();
    p.residual = bridge_->residual();
    p.y = bridge_->y();
    flops_ = 2.0 * double(y->numel()) * double(ws[2] * ws[3]);
    kernel_ = std::string("fusebench.depthwise_conv") + (p.bias || p.residual || p.act != ActivationKind::None ? "+epilogue" : "") +
              bridge_->suffix() + kernel_suffix(p.elem, n.precision);
  }
  void run() override {
    bridge_->before(ctx_.stream);
    launch_depthwise_conv(p_, ctx_.stream);
    bridge_->after(ctx_.stream);
  }
  std::string kernel() const override { return kernel_; }
  double flops() const override { return flops_; }

 private:
  DepthwiseConv p_;
  DeviceMemory x_keep_, w_keep_, bias_keep_, residual_keep_;  // constants converted to the layer's type
  std::unique_ptr<LayoutBridge> bridge_;
  double flops_ = 0;
  std::string kernel_;
};

// A 2-D convolution of non-overlapping patches larger than a pixel (kernel = stride, no
// padding or dilation, one group: ViT's patch embedding) in a 16-bit layer, as one matrix product: the patches
// gathered as rows [n·oh·ow, c·kh·kw], times the weights [k, c·kh·kw] transposed, on
// cuBLASLt with its bias (and ReLU) epilogue; the product's rows are y channels-last. cuDNN's
// heuristic ran the exported ViT-tiny's 16×16 patch embedding (3 input channels) at batch 32
// in 0.21 ms on an H200, a tenth of the model (`profile --device cuda`).
bool is_patch_conv(const LayerRequest& r) {
  const Node& n = r.node;
  const Shape& xs = r.inputs[0]->shape();
  const Shape& ws = r.inputs[1]->shape();
  const Elem e = elem_of(*r.outputs[0]);
  if (xs.size() != 4 || ws.size() != 4 || n.attr_int("group", 1) != 1 || (e != Elem::F16 && e != Elem::BF16)) return false;
  // 1×1 convolutions stay on cuDNN, where they were measured. As products they would need
  // no gather at all (a channels-last x is the row matrix); not yet measured against cuDNN.
  if (ws[2] == 1 && ws[3] == 1) return false;
  if (r.inputs.size() > 3 && r.inputs[3]) return false;  // a residual: cuDNN's layer adds it
  const WindowGeometry geo = window_geometry(n, Shape(xs.begin() + 2, xs.end()), Shape(ws.begin() + 2, ws.end()), false);
  for (size_t d = 0; d < 2; ++d)
    if (geo.stride[d] != ws[2 + d] || geo.pad_begin[d] != 0 || geo.pad_end[d] != 0 || geo.dilation[d] != 1) return false;
  return true;
}

class PatchConvLayer final : public CudaLayer {
 public:
  PatchConvLayer(const LayerRequest& r, const CudaContext& ctx) : CudaLayer(ctx) {
    const Node& n = r.node;
    y_ = r.outputs[0];
    const Elem e = elem_of(*y_);
    const DType t = y_->dtype();
    const size_t es = dtype_size(t);
    const Shape& xs = r.inputs[0]->shape();
    const Shape& ws = r.inputs[1]->shape();
    const ConvLayouts l = conv_layouts_of(n);
    PatchGather& g = gather_;
    g.batch = xs[0], g.channels = xs[1], g.out_h = y_->shape()[2], g.out_w = y_->shape()[3];
    g.kernel_h = ws[2], g.kernel_w = ws[3];
    const int64_t h = xs[2], w = xs[3], c = xs[1];
    if (l.x) g.stride_n = h * w * c, g.stride_c = 1, g.stride_h = w * c, g.stride_w = c;
    else g.stride_n = c * h * w, g.stride_c = h * w, g.stride_h = w, g.stride_w = 1;
    g.elem_bytes = int(es);
    g.x = input_as(r, 0, t, x_keep_);
    Product p;
    p.m = g.batch * g.out_h * g.out_w;
    p.k = c * g.kernel_h * g.kernel_w;
    p.n = ws[0];
    p.trans_b = true;  // the weights [k, c, kh, kw] are [N, K] row-major
    p.elem = e;
    rows_ = DeviceMemory(size_t(p.m * p.k) * es);
    g.rows = rows_.data();
    w_ = input_as(r, 1, t, w_keep_);
    if (r.inputs.size() > 2 && r.inputs[2]) p.bias = input_as(r, 2, t, bias_keep_), p.bias_elem = e;
    const FusedActivation a = n.domain == "fusebench" ? fused_activation_of(n) : FusedActivation{};
    if (a.kind == ActivationKind::Relu) p.relu = true;
    else if (a.kind != ActivationKind::None) epilogue_.act = a.kind, epilogue_.lo = a.lo, epilogue_.hi = a.hi;
    epilogue_.outer = p.m, epilogue_.channels = p.n, epilogue_.inner = 1;
    lt_ = std::make_unique<LtMatmul>(p, ctx, n);
    // The product's rows are y channels-last; a plain y is reordered from scratch.
    out_ = y_->raw();
    if (!l.y) {
      y_scratch_ = DeviceMemory(size_t(y_->numel()) * es);
      out_ = y_scratch_.data();
      y_out_ = reorder(y_->shape(), es, out_, y_->raw(), false);
    }
    const bool timed = r.time_algorithms && lt_->time_algorithms(g.rows, w_, out_, r.cuda_graph);
    flops_ = 2.0 * double(y_->numel()) * double(p.k);
    kernel_ = std::string("fusebench.patch_gather+cublasLt.matmul") +
              (timed ? "[algo " + std::to_string(lt_->algorithm_id()) + ", timed]" : "") + (p.bias ? "+bias" : "") +
              (p.relu ? "+relu" : "") +
              (epilogue_.act != ActivationKind::None ? "+epilogue" : "") + " " + (l.x ? "nhwc" : "nchw") + "→" +
              (l.y ? "nhwc" : "nchw") + kernel_suffix(e, n.precision);
  }
  void run() override {
    launch_patch_gather(gather_, ctx_.stream);
    lt_->run(gather_.rows, w_, out_);
    if (epilogue_.act != ActivationKind::None) launch_epilogue(elem_of(*y_), out_, epilogue_, ctx_.stream);
    y_out_.run(ctx_.stream);
  }
  std::string kernel() const override { return kernel_; }
  double flops() const override { return flops_; }

 private:
  PatchGather gather_;
  DeviceMemory x_keep_, w_keep_, bias_keep_;  // constants converted to the layer's type
  DeviceMemory rows_, y_scratch_;
  const void* w_ = nullptr;
  void* out_ = nullptr;  // where the product writes: y, or scratch for a plain y
  Reorder y_out_;
  std::unique_ptr<LtMatmul> lt_;
  Epilogue epilogue_;
  Tensor* y_;
  double flops_ = 0;
  std::string kernel_;
};

// int8 attributes are the CPU backend's (it has int8 convolutions; this one has none).
PrecisionSet conv_precisions(const Node& n) {
  if (n.has_attr("int8_input_amax")) return {};
  return {Precision::FP32, Precision::TF32, Precision::FP16, Precision::BF16};
}

std::unique_ptr<Layer> make_conv(const LayerRequest& r, const CudaContext& ctx) {
  if (is_depthwise_2d(r)) return std::make_unique<DepthwiseConvLayer>(r, ctx);
  if (is_patch_conv(r)) return std::make_unique<PatchConvLayer>(r, ctx);
  return std::make_unique<ConvLayer>(r, ctx);
}

}  // namespace

void add_conv_rows(std::vector<CudaOpRow>& rows) {
  // 1-D to 3-D, grouped and depthwise: every convolution runs channels-last.
  rows.push_back({"", "Conv", conv_precisions, make_conv, always_channels_last});
  rows.push_back({"fusebench", "FusedConv", conv_precisions, make_conv, always_channels_last});
}

}  // namespace fb::cuda
