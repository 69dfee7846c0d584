// zoo:mobilenet — MobileNetV2-style inverted residuals named as torchvision's mobilenet_v2
// exports: depthwise convolutions, ReLU6 as Clip, and linear bottlenecks, which stress the
// engine differently from dense convolutions.
#include <algorithm>

#include "engine/zoo/models.h"
#include "engine/zoo/onnx_builder.h"

namespace fb::zoo {

namespace {

constexpr int64_t kExpansion = 6;
constexpr int64_t kMaxDoublings = 4;

void validate(const ZooArgs&) {}

// ReLU6, exported at opset 11+ as Clip with min and max as inputs.
std::string relu6(OnnxBuilder& b, const std::string& sc, const std::string& x) {
  return b.node(sc, "Clip", {x, b.scalar("const.relu6_min", 0.0f), b.scalar("const.relu6_max", 6.0f)});
}

onnx::ModelProto build(const ZooArgs& a) {
  const int64_t width = a["width"], blocks = a["blocks"], image = a["image"],
                classes = a["classes"];
  OnnxBuilder b("mobilenet", a.spec);
  std::string x = b.input("input", {kBatch, 3, image, image});
  // Stride-1 stem: the zoo's images are small.
  x = conv2d(b, "/features/features.0/features.0.0", "features.0.0", x, 3, width, 3, 1, 1, 1,
             false, kReluGain);
  x = batch_norm(b, "/features/features.0/features.0.1", "features.0.1", x, width);
  x = relu6(b, "/features/features.0/features.0.2", x);
  int64_t cin = width;
  for (int64_t i = 0; i < blocks; ++i) {
    // Channels double, with stride 2, every second block, as in MobileNetV2's schedule; the
    // cap keeps many blocks from meaning enormous channel counts.
    const int64_t doublings = std::min<int64_t>(i / 2, kMaxDoublings);
    const int64_t cout = width << doublings;
    const int64_t stride = (i > 0 && i % 2 == 0 && i / 2 <= kMaxDoublings) ? 2 : 1;
    const int64_t expanded = cin * kExpansion;
    const std::string f = "features." + std::to_string(i + 1);
    const std::string sc = "/features/" + f + "/conv";
    const std::string pre = f + ".conv";
    std::string y = conv2d(b, sc + "/conv.0/conv.0.0", pre + ".0.0", x, cin, expanded, 1, 1, 0, 1,
                           false, kReluGain);
    y = batch_norm(b, sc + "/conv.0/conv.0.1", pre + ".0.1", y, expanded);
    y = relu6(b, sc + "/conv.0/conv.0.2", y);
    y = conv2d(b, sc + "/conv.1/conv.1.0", pre + ".1.0", y, expanded, expanded, 3, stride, 1,
               expanded, false, kReluGain);
    y = batch_norm(b, sc + "/conv.1/conv.1.1", pre + ".1.1", y, expanded);
    y = relu6(b, sc + "/conv.1/conv.1.2", y);
    y = conv2d(b, sc + "/conv.2", pre + ".2", y, expanded, cout, 1, 1, 0, 1, false, 1.0f);
    y = batch_norm(b, sc + "/conv.3", pre + ".3", y, cout);
    if (stride == 1 && cin == cout) y = b.node("/features/" + f, "Add", {x, y});
    x = y;
    cin = cout;
  }
  x = b.node("", "GlobalAveragePool", {x});
  x = b.node("", "Flatten", {x}, {attr_int("axis", 1)});
  x = linear_gemm(b, "/classifier/classifier.1", "classifier.1", x, cin, classes);
  b.output(x, "output", {kBatch, classes});
  return b.finish();
}

}  // namespace

const ModelDef& mobilenet_model() {
  static const ModelDef def{
      "mobilenet",
      "MobileNetV2-style network: 3x3 stem, `blocks` inverted residual blocks (1x1 expand x6, "
      "3x3 depthwise, 1x1 project; ReLU6 as Clip; residual Add where shapes match; channels "
      "double with stride 2 every second block, at most 16x width), global average pool, Gemm. "
      "Input \"input\" [batch, 3, image, image], output \"output\" [batch, classes].",
      {
          {"width", 16, 1, 1 << 12, "channels of the stem and the first blocks"},
          {"blocks", 4, 1, 256, "inverted residual blocks"},
          {"image", 32, 1, 4096, "input height and width"},
          {"classes", 10, 1, 1 << 20, "output classes"},
      },
      validate,
      build};
  return def;
}

}  // namespace fb::zoo
