// zoo:resnet — a CIFAR-sized ResNet of basic blocks, named as torchvision's resnet exports:
// the Conv+BatchNorm+Relu and residual-Add patterns the engine's convolution fusions target.
// BatchNorm stays a separate node (as in a training-mode export) so folding it is the engine's job.
#include "engine/zoo/models.h"
#include "engine/zoo/onnx_builder.h"

namespace fb::zoo {

namespace {

constexpr float kBranchScale = 0.4f;

void validate(const ZooArgs&) {}

onnx::ModelProto build(const ZooArgs& a) {
  const int64_t blocks = a["blocks"], width = a["width"], stages = a["stages"],
                image = a["image"], classes = a["classes"];
  OnnxBuilder b("resnet", a.spec);
  std::string x = b.input("input", {kBatch, 3, image, image});
  // A 3x3 stride-1 stem instead of ImageNet's 7x7/2 + max-pool: small images keep their size.
  x = conv2d(b, "/conv1", "conv1", x, 3, width, 3, 1, 1, 1, false, kReluGain);
  x = batch_norm(b, "/bn1", "bn1", x, width);
  x = b.node("/relu", "Relu", {x});
  int64_t cin = width;
  for (int64_t s = 0; s < stages; ++s) {
    const int64_t cout = width << s;
    const std::string layer = "layer" + std::to_string(s + 1);
    for (int64_t k = 0; k < blocks; ++k) {
      const int64_t stride = (s > 0 && k == 0) ? 2 : 1;
      const std::string sc = "/" + layer + "/" + layer + "." + std::to_string(k);
      const std::string pre = layer + "." + std::to_string(k);
      std::string y = conv2d(b, sc + "/conv1", pre + ".conv1", x, cin, cout, 3, stride, 1, 1, false,
                             kReluGain);
      y = batch_norm(b, sc + "/bn1", pre + ".bn1", y, cout);
      y = b.node(sc + "/relu", "Relu", {y});
      y = conv2d(b, sc + "/conv2", pre + ".conv2", y, cout, cout, 3, 1, 1, 1, false, 1.0f);
      // Untrained running statistics do not normalize, so each residual Add would grow the
      // activations; a smaller scale on the branch keeps deep variants O(1).
      y = batch_norm(b, sc + "/bn2", pre + ".bn2", y, cout, kBranchScale);
      std::string identity = x;
      if (stride != 1 || cin != cout) {
        identity = conv2d(b, sc + "/downsample/downsample.0", pre + ".downsample.0", x, cin, cout,
                          1, stride, 0, 1, false, 1.0f);
        identity = batch_norm(b, sc + "/downsample/downsample.1", pre + ".downsample.1", identity,
                              cout);
      }
      y = b.node(sc, "Add", {y, identity});
      // torchvision calls the block's one ReLU module twice; the exporter scopes the second
      // call "relu_1".
      x = b.node(sc + "/relu_1", "Relu", {y});
      cin = cout;
    }
  }
  x = b.node("/avgpool", "GlobalAveragePool", {x});
  x = b.node("", "Flatten", {x}, {attr_int("axis", 1)});
  x = linear_gemm(b, "/fc", "fc", x, cin, classes);
  b.output(x, "output", {kBatch, classes});
  return b.finish();
}

}  // namespace

const ModelDef& resnet_model() {
  static const ModelDef def{
      "resnet",
      "ResNet of basic blocks for small images: 3x3 stem, `stages` stages of `blocks` residual "
      "blocks (stride 2 and twice the channels at each new stage), global average pool, Gemm. "
      "Input \"input\" [batch, 3, image, image], output \"output\" [batch, classes].",
      {
          {"blocks", 2, 1, 256, "residual blocks per stage"},
          {"width", 16, 1, 1 << 14, "channels of the stem and the first stage"},
          {"stages", 3, 1, 8, "stages; each after the first halves the image and doubles channels"},
          {"image", 32, 1, 4096, "input height and width"},
          {"classes", 10, 1, 1 << 20, "output classes"},
      },
      validate,
      build};
  return def;
}

}  // namespace fb::zoo
