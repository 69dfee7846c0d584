// zoo:shufflenet — ShuffleNetV2-style network, named as torchvision's shufflenet_v2_x1_0
// exports: stride-2 units with two branches, stride-1 units that Split the channels in
// halves and transform one, depthwise 3x3 convolutions without activation, Concat, and
// the channel shuffle as Reshape, Transpose, Reshape; the classifier reads a ReduceMean
// over height and width. None of the other zoo models shuffles channels.
#include "engine/zoo/models.h"
#include "engine/zoo/onnx_builder.h"

namespace fb::zoo {

namespace {

constexpr int64_t kStageChannels[] = {116, 232, 464}, kStageUnits[] = {4, 8, 4};
constexpr int64_t kStemChannels = 24, kHeadChannels = 1024;

void validate(const ZooArgs& a) {
  if (a["image"] % 32 != 0) a.fail("image", "(" + std::to_string(a["image"]) + ") must be a multiple of 32 (five stride-2 steps)");
  if (a["width"] * kStageChannels[0] % 200 != 0)
    a.fail("width", "(" + std::to_string(a["width"]) + "): 116 x width / 100 must be an even number of channels");
}

onnx::ModelProto build(const ZooArgs& a) {
  const int64_t image = a["image"], classes = a["classes"], width = a["width"];
  OnnxBuilder b("shufflenet", a.spec);
  // Conv (no bias), BatchNorm, and ReLU unless `linear` (the depthwise ones).
  auto conv_bn = [&](const std::string& sc, const std::string& pre, const std::string& x, int64_t cin, int64_t cout, int64_t k,
                     int64_t stride, int64_t groups, bool linear) {
    std::string y = conv2d(b, sc + "/conv", pre + ".0", x, cin, cout, k, stride, k / 2, groups, false, linear ? 1.0f : kReluGain);
    y = batch_norm(b, sc + "/bn", pre + ".1", y, cout);
    return linear ? y : b.node(sc, "Relu", {y});
  };
  std::string x = b.input("input", {kBatch, 3, image, image});
  x = conv_bn("/conv1/conv1.0", "conv1", x, 3, kStemChannels, 3, 2, 1, false);
  x = b.node("/maxpool", "MaxPool", {x}, {attr_ints("kernel_shape", {3, 3}), attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 2})});
  int64_t cin = kStemChannels, hw = image / 4;
  for (int64_t s = 0; s < 3; ++s) {
    const int64_t half = kStageChannels[s] * width / 200;
    hw /= 2;
    for (int64_t u = 0; u < kStageUnits[s]; ++u) {
      const std::string sc = "/stage" + std::to_string(s + 2) + "/stage" + std::to_string(s + 2) + "." + std::to_string(u);
      const std::string pre = "stage" + std::to_string(s + 2) + "." + std::to_string(u);
      const int64_t stride = u == 0 ? 2 : 1;
      std::string kept = x, branch = x;
      int64_t branch_in = cin;
      if (u == 0) {
        kept = conv_bn(sc + "/branch1/branch1.0", pre + ".branch1.0", x, cin, cin, 3, 2, cin, true);
        kept = conv_bn(sc + "/branch1/branch1.2", pre + ".branch1.2", kept, cin, half, 1, 1, 1, false);
      } else {
        std::vector<std::string> halves = b.node_outputs(sc, "Split", {x, b.ints(pre + ".split", {half, half})}, 2, {attr_int("axis", 1)});
        kept = halves[0];
        branch = halves[1];
        branch_in = half;
      }
      branch = conv_bn(sc + "/branch2/branch2.0", pre + ".branch2.0", branch, branch_in, half, 1, 1, 1, false);
      branch = conv_bn(sc + "/branch2/branch2.3", pre + ".branch2.3", branch, half, half, 3, stride, half, true);
      branch = conv_bn(sc + "/branch2/branch2.5", pre + ".branch2.5", branch, half, half, 1, 1, 1, false);
      x = b.node(sc, "Concat", {kept, branch}, {attr_int("axis", 1)});
      // channel_shuffle(x, 2): view(N, 2, C/2, H, W), transpose(1, 2), view(N, C, H, W).
      x = b.node(sc, "Reshape", {x, b.ints("shuffle_" + std::to_string(s), {0, 2, half, hw, hw})});
      x = b.node(sc, "Transpose", {x}, {attr_ints("perm", {0, 2, 1, 3, 4})});
      x = b.node(sc, "Reshape", {x, b.ints("unshuffle_" + std::to_string(s), {0, 2 * half, hw, hw})});
      cin = 2 * half;
    }
  }
  x = conv_bn("/conv5/conv5.0", "conv5", x, cin, kHeadChannels, 1, 1, 1, false);
  x = b.node("", "ReduceMean", {x}, {attr_ints("axes", {2, 3}), attr_int("keepdims", 0)});
  x = linear_gemm(b, "/fc", "fc", x, kHeadChannels, classes);
  b.output(x, "output", {kBatch, classes});
  return b.finish();
}

}  // namespace

const ModelDef& shufflenet_model() {
  static const ModelDef def{
      "shufflenet",
      "ShuffleNetV2-style network: 3x3 stride-2 stem and MaxPool, three stages of 4, 8 and 4 "
      "units (stride-2 units with two branches; others Split the channels, transform one half "
      "with 1x1, depthwise 3x3 and 1x1 convolutions, Concat), a channel shuffle after each "
      "unit (Reshape, Transpose, Reshape), 1x1 conv to 1024, ReduceMean, Gemm. Channels scale "
      "by width/100. Input \"input\" [batch, 3, image, image], output \"output\" [batch, classes].",
      {
          {"width", 100, 10, 800, "channel multiplier in percent (x1.0: 100)"},
          {"image", 64, 32, 4096, "input height and width, a multiple of 32 (torchvision: 224)"},
          {"classes", 10, 1, 1 << 20, "output classes"},
      },
      validate,
      build};
  return def;
}

}  // namespace fb::zoo
