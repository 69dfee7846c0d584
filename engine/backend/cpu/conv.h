// A convolution on a prebuilt oneDNN primitive, optionally with a fused residual sum and
// activation (post-ops). Conv and fusebench.FusedConv run it per call; the engine keeps
// one per layer.
#pragma once
#include <memory>
#include <string>

#include "engine/ir/graph.h"
#include "engine/ops/fused_activation.h"
#include "engine/ops/fused_conv.h"

namespace fb {

class ConvKernel {
 public:
  // Attributes (strides, pads, dilations, group, auto_pad), the activation, the residual
  // and the layouts come from `node`. With constant_weights the weights are reordered to
  // oneDNN's layout once, on the first run (the engine's initializers never change);
  // otherwise on every run, as eager PyTorch does.
  //
  // An int8 node (attributes int8_input_amax, int8_input_unsigned: precision lowering's)
  // reads x quantized (u8/s8) and needs `int8_weights`, its constant float32 weights: they
  // are quantized per output channel here; y stays float32, unless the node has
  // int8_output_amax (and _unsigned): then the epilogue writes y as u8/s8 at that
  // threshold, after the activation (not with a residual).
  //
  // bf16 (oneDNN's bf16 kernels, use_onednn_bf16): x, y and the residual are bf16, the
  // constant float32 weights are packed to bf16 once; the bias stays float32.
  //
  // winograd: a float32 convolution with constant weights may run on oneDNN's Winograd
  // kernels where they pay (the engine's layers pass their build's BuildConfig::winograd).
  ConvKernel(const Node& node, const Shape& x, const Shape& w, bool has_bias, bool constant_weights = false,
             const float* int8_weights = nullptr, bool bf16 = false, bool winograd = false);
  ~ConvKernel();
  const Shape& output_shape() const { return output_; }
  double flops() const;
  // "onednn.conv[brgconv:avx512_core]+sum+relu nhwc→nhwc": implementation, post-ops, layouts.
  std::string describe() const;
  // `residual` only when the node has one (else nullptr); it may be `y` itself.
  // x: float32, u8/s8 for an int8 node, bf16 for a bf16 one (y and the residual too).
  void run(const void* x, const float* w, const float* b, const void* residual, void* y);
  // y (as run() wrote it, in the node's y layout) as a plain NCHW tensor of its type (a
  // quantized y as the float32 values it stands for), for captures.
  Tensor plain_output(const void* y) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  Shape output_;
};

// ConvTranspose on a prebuilt oneDNN deconvolution, plain or channels-last (x_layout and
// y_layout, 2-D only). Its output is what the operation yields: an output_shape beyond it
// is the caller's to fill (the op's kernel does, with the bias). With constant_weights the
// weights are reordered to oneDNN's layout once, on the first run.
class DeconvKernel {
 public:
  DeconvKernel(const Node& node, const Shape& x, const Shape& w, bool has_bias, bool constant_weights = false);
  ~DeconvKernel();
  const Shape& output_shape() const { return output_; }
  double flops() const;
  // "onednn.deconv[jit:avx512_core] nhwc→nhwc"
  std::string describe() const;
  void run(const float* x, const float* w, const float* b, float* y);
  // y (as run() wrote it, in the node's y layout) as a plain NCHW tensor, for captures.
  Tensor plain_output(const float* y) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  Shape output_;
};

// Binds Conv, FusedConv and ConvTranspose (engine/ops/conv_ops.cpp) to these kernels
// (engine/ops/bound_kernels.h); bind_cpu_kernels() calls it.
void bind_cpu_conv_kernels();

}  // namespace fb
