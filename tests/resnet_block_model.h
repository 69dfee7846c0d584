// A ResNet-style block with every op the conv-layout pass keeps channels-last on both the
// CPU and the CUDA backend: a stem conv+bias+relu reading the plain image, a 3x3/2 MaxPool,
// a basic block whose second conv takes the pool's output as its residual (+relu), a
// depthwise and a pointwise conv summed by an Add no conv can take, an AveragePool, a
// GlobalAveragePool, and a 1x1 conv writing a graph output (plain again). 16 channels: a
// multiple of 8, as fp16 tensor-core convolutions want.
#pragma once
#include <string>

#include "engine/onnx/onnx_import.h"
#include "engine/zoo/onnx_builder.h"

namespace fb::test {

inline Graph resnet_style_block() {
  using zoo::attr_int;
  using zoo::attr_ints;
  zoo::OnnxBuilder b("resnet_block", "resnet_block");
  const int64_t c = 16;
  const std::string x = b.input("x", {zoo::kBatch, 3, 16, 16});
  const std::string a = b.node("/stem/relu", "Relu", {zoo::conv2d(b, "/stem", "stem", x, 3, c, 3, 1, 1, 1, true, 1.f)});
  const std::string p = b.node("/pool", "MaxPool", {a},
                               {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1})});
  std::string y = b.node("/block/relu", "Relu", {zoo::conv2d(b, "/block/conv1", "block.conv1", p, c, c, 3, 1, 1, 1, true, 1.f)});
  y = zoo::conv2d(b, "/block/conv2", "block.conv2", y, c, c, 3, 1, 1, 1, true, 1.f);
  const std::string s = b.node("/block/relu_1", "Relu", {b.node("/block", "Add", {y, p})});
  const std::string dw = b.node("/dw/relu", "Relu", {zoo::conv2d(b, "/dw", "dw", s, c, c, 3, 1, 1, c, true, 1.f)});
  const std::string pw = b.node("/pw/relu", "Relu", {zoo::conv2d(b, "/pw", "pw", s, c, c, 1, 1, 0, 1, true, 1.f)});
  const std::string t = b.node("/sum", "Add", {dw, pw});
  const std::string q = b.node("/avgpool", "AveragePool", {t}, {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})});
  const std::string head = zoo::conv2d(b, "/head", "head", t, c, 8, 1, 1, 0, 1, true, 1.f);
  const std::string pooled = b.node("/flatten", "Flatten", {b.node("/gap", "GlobalAveragePool", {q})}, {attr_int("axis", 1)});
  b.output(pooled, "pooled", {zoo::kBatch, c});
  b.output(head, "head", {zoo::kBatch, 8, 8, 8});
  return import_onnx(b.finish(), "resnet_block", "");
}

}  // namespace fb::test
