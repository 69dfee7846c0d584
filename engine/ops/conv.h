// A convolution on a prebuilt oneDNN primitive, optionally with a fused activation
// (post-op). Conv and fusebench.FusedConv run it per call; the engine keeps one per layer.
#pragma once
#include <memory>

#include "engine/ir/graph.h"

namespace fb {

struct ConvActivation {
  enum class Kind { None, Relu, Clip, Sigmoid, HardSwish, Silu } kind = Kind::None;
  float lo = 0, hi = 0;  // Clip bounds
};
// The activation a fusebench.FusedConv node carries ("activation", "activation_min/max").
ConvActivation conv_activation_of(const Node& n);

class ConvKernel {
 public:
  // Attributes (strides, pads, dilations, group, auto_pad) come from `node`. With
  // constant_weights the weights are reordered to oneDNN's layout once, on the first run
  // (the engine's initializers never change); otherwise on every run, as eager PyTorch does.
  ConvKernel(const Node& node, const Shape& x, const Shape& w, bool has_bias, ConvActivation act,
             bool constant_weights = false);
  ~ConvKernel();
  const Shape& output_shape() const { return output_; }
  double flops() const;
  void run(const float* x, const float* w, const float* b, float* y);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  Shape output_;
};

}  // namespace fb
