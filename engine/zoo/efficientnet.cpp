// zoo:efficientnet — EfficientNet-B0-style MBConv blocks named as torchvision's
// efficientnet_b0 exports: SiLU exported as Sigmoid then Mul, depthwise 3x3 and 5x5
// convolutions, and squeeze-and-excitation (GlobalAveragePool, two 1x1 convolutions,
// Sigmoid, then a Mul that broadcasts the channel gate over the image), which none of the
// other zoo CNNs has.
#include <algorithm>

#include "engine/zoo/models.h"
#include "engine/zoo/onnx_builder.h"

namespace fb::zoo {

namespace {

// B0's stages: expansion, output channels, blocks, stride of the first block, kernel.
struct Stage {
  int64_t expand, channels, blocks, stride, kernel;
};
constexpr Stage kStages[] = {{1, 16, 1, 1, 3},  {6, 24, 2, 2, 3},  {6, 40, 2, 2, 5}, {6, 80, 3, 2, 3},
                             {6, 112, 3, 1, 5}, {6, 192, 4, 2, 5}, {6, 320, 1, 1, 3}};
constexpr int64_t kStageCount = sizeof(kStages) / sizeof(kStages[0]);
constexpr int64_t kStemChannels = 32, kHeadChannels = 1280;

void validate(const ZooArgs&) {}

// Channels scaled by width / 100, rounded to a multiple of 8 as EfficientNet does.
int64_t scaled(int64_t channels, int64_t width) {
  const int64_t c = channels * width / 100;
  return std::max<int64_t>(8, (c + 4) / 8 * 8);
}

// nn.SiLU as torch.onnx exports it below opset 14's HardSwish-style ops: x * Sigmoid(x).
std::string silu(OnnxBuilder& b, const std::string& sc, const std::string& x) {
  return b.node(sc, "Mul", {x, b.node(sc, "Sigmoid", {x})});
}

// Squeeze-and-excitation: x * Sigmoid(fc2(SiLU(fc1(GlobalAveragePool(x))))).
std::string squeeze_excite(OnnxBuilder& b, const std::string& sc, const std::string& pre, const std::string& x,
                           int64_t channels, int64_t squeezed) {
  std::string s = b.node(sc + "/avgpool", "GlobalAveragePool", {x});
  s = conv2d(b, sc + "/fc1", pre + ".fc1", s, channels, squeezed, 1, 1, 0, 1, true, 1.0f);
  s = silu(b, sc + "/activation", s);
  s = conv2d(b, sc + "/fc2", pre + ".fc2", s, squeezed, channels, 1, 1, 0, 1, true, 1.0f);
  s = b.node(sc + "/scale_activation", "Sigmoid", {s});
  return b.node(sc, "Mul", {s, x});
}

onnx::ModelProto build(const ZooArgs& a) {
  const int64_t width = a["width"], stages = a["stages"], image = a["image"], classes = a["classes"];
  OnnxBuilder b("efficientnet", a.spec);
  std::string x = b.input("input", {kBatch, 3, image, image});
  int64_t cin = scaled(kStemChannels, width);
  x = conv2d(b, "/features/features.0/features.0.0", "features.0.0", x, 3, cin, 3, 2, 1, 1, false, kReluGain);
  x = batch_norm(b, "/features/features.0/features.0.1", "features.0.1", x, cin);
  x = silu(b, "/features/features.0/features.0.2", x);
  for (int64_t s = 0; s < stages; ++s) {
    const Stage& st = kStages[s];
    const int64_t cout = scaled(st.channels, width);
    for (int64_t i = 0; i < st.blocks; ++i) {
      const int64_t stride = i == 0 ? st.stride : 1, expanded = cin * st.expand;
      // torchvision's names: /features/features.S/features.S.I/block/block.K/block.K.0/Conv
      const std::string f = std::to_string(s + 1), fi = f + "." + std::to_string(i);
      const std::string block = "/features/features." + f + "/features." + fi, sc = block + "/block", pre = "features." + fi + ".block";
      int k = 0;
      auto sub = [&](int part) { return sc + "/block." + std::to_string(k) + "/block." + std::to_string(k) + "." + std::to_string(part); };
      auto param = [&](int part) { return pre + "." + std::to_string(k) + "." + std::to_string(part); };
      // Conv, BatchNorm, then SiLU unless `linear`: block.K.0, .1 and .2.
      auto conv_bn = [&](const std::string& in, int64_t ci, int64_t co, int64_t kernel, int64_t stride_, int64_t groups, bool linear) {
        std::string y = conv2d(b, sub(0), param(0), in, ci, co, kernel, stride_, kernel / 2, groups, false, linear ? 1.0f : kReluGain);
        y = batch_norm(b, sub(1), param(1), y, co);
        if (!linear) y = silu(b, sub(2), y);
        ++k;
        return y;
      };
      std::string y = x;
      if (st.expand != 1) y = conv_bn(y, cin, expanded, 1, 1, 1, false);
      y = conv_bn(y, expanded, expanded, st.kernel, stride, expanded, false);
      y = squeeze_excite(b, sc + "/block." + std::to_string(k), pre + "." + std::to_string(k), y, expanded, std::max<int64_t>(1, cin / 4));
      ++k;
      y = conv_bn(y, expanded, cout, 1, 1, 1, true);
      if (stride == 1 && cin == cout) y = b.node(block, "Add", {y, x});
      x = y;
      cin = cout;
    }
  }
  const int64_t head = scaled(kHeadChannels, width);
  const std::string hs = "/features/features." + std::to_string(stages + 1);
  x = conv2d(b, hs + "/features." + std::to_string(stages + 1) + ".0", "features." + std::to_string(stages + 1) + ".0", x, cin,
             head, 1, 1, 0, 1, false, kReluGain);
  x = batch_norm(b, hs + "/features." + std::to_string(stages + 1) + ".1", "features." + std::to_string(stages + 1) + ".1", x, head);
  x = silu(b, hs + "/features." + std::to_string(stages + 1) + ".2", x);
  x = b.node("/avgpool", "GlobalAveragePool", {x});
  x = b.node("", "Flatten", {x}, {attr_int("axis", 1)});
  x = linear_gemm(b, "/classifier/classifier.1", "classifier.1", x, head, classes);
  b.output(x, "output", {kBatch, classes});
  return b.finish();
}

}  // namespace

const ModelDef& efficientnet_model() {
  static const ModelDef def{
      "efficientnet",
      "EfficientNet-B0-style network: 3x3 stride-2 stem, the first `stages` of B0's seven MBConv "
      "stages (1x1 expand, 3x3 or 5x5 depthwise, squeeze-and-excitation, 1x1 project; SiLU as "
      "Sigmoid then Mul; residual Add where shapes match), 1x1 head to 1280 channels, global "
      "average pool, Gemm. Channels scale by width/100. Input \"input\" [batch, 3, image, image], "
      "output \"output\" [batch, classes].",
      {
          {"width", 100, 10, 800, "channel multiplier in percent (B0: 100)"},
          {"stages", 7, 1, kStageCount, "MBConv stages of B0's seven"},
          {"image", 64, 8, 4096, "input height and width (B0: 224)"},
          {"classes", 10, 1, 1 << 20, "output classes"},
      },
      validate,
      build};
  return def;
}

}  // namespace fb::zoo
