// zoo:yolo — a YOLOv8n-style detector, named as ultralytics exports it: Conv-BN-SiLU
// (SiLU as Sigmoid then Mul), C2f blocks (a 1x1 convolution Split in two halves, bottlenecks
// with residual Adds after the activation, Concat of every half), SPPF (three chained 5x5
// MaxPools and a Concat), a feature-pyramid neck with nearest 2x Resize and Concat, and a
// decoupled head whose three scales are reshaped and concatenated. None of the other zoo
// models has a Resize, a Split over channels or an Add that no convolution can take.
#include "engine/zoo/models.h"
#include "engine/zoo/onnx_builder.h"

namespace fb::zoo {

namespace {

constexpr int64_t kBoxChannels = 64;  // 4 sides x 16 distribution bins (reg_max)

void validate(const ZooArgs& a) {
  if (a["image"] % 32 != 0) a.fail("image", "(" + std::to_string(a["image"]) + ") must be a multiple of 32 (five stride-2 stages)");
}

class Yolo {
 public:
  Yolo(OnnxBuilder& b) : b_(b) {}

  // Conv (no bias), BatchNorm, SiLU: ultralytics' Conv module.
  std::string conv(const std::string& sc, const std::string& x, int64_t cin, int64_t cout, int64_t k, int64_t s) {
    const std::string pre = param(sc);
    std::string y = conv2d(b_, sc + "/conv", pre + ".conv", x, cin, cout, k, s, k / 2, 1, false, kReluGain);
    y = batch_norm(b_, sc + "/bn", pre + ".bn", y, cout);
    return b_.node(sc + "/act", "Mul", {y, b_.node(sc + "/act", "Sigmoid", {y})});
  }

  std::string c2f(const std::string& sc, const std::string& x, int64_t cin, int64_t cout, int n, bool shortcut) {
    const int64_t c = cout / 2;
    const std::string y = conv(sc + "/cv1", x, cin, cout, 1, 1);
    std::vector<std::string> parts = b_.node_outputs(sc, "Split", {y, b_.ints(param(sc) + ".split", {c, c})}, 2, {attr_int("axis", 1)});
    std::string last = parts[1];
    for (int i = 0; i < n; ++i) {
      const std::string m = sc + "/m." + std::to_string(i);
      std::string z = conv(m + "/cv2", conv(m + "/cv1", last, c, c, 3, 1), c, c, 3, 1);
      last = shortcut ? b_.node(m, "Add", {last, z}) : z;
      parts.push_back(last);
    }
    return conv(sc + "/cv2", b_.node(sc, "Concat", parts, {attr_int("axis", 1)}), (2 + n) * c, cout, 1, 1);
  }

  std::string sppf(const std::string& sc, const std::string& x, int64_t c) {
    std::vector<std::string> pools = {conv(sc + "/cv1", x, c, c / 2, 1, 1)};
    for (int i = 0; i < 3; ++i)
      pools.push_back(b_.node(sc + "/m", "MaxPool", {pools.back()},
                              {attr_ints("kernel_shape", {5, 5}), attr_ints("pads", {2, 2, 2, 2}), attr_ints("strides", {1, 1})}));
    return conv(sc + "/cv2", b_.node(sc, "Concat", pools, {attr_int("axis", 1)}), 2 * c, c, 1, 1);
  }

  std::string upsample(const std::string& sc, const std::string& x) {
    return b_.node(sc, "Resize", {x, "", b_.floats("upsample_scales", {1, 1, 2, 2})}, {});
  }

  std::string concat(const std::string& sc, const std::string& a, const std::string& c) {
    return b_.node(sc, "Concat", {a, c}, {attr_int("axis", 1)});
  }

  // One scale of the decoupled head: box and class branches, concatenated, [N, 64 + classes, H*W].
  std::string head(const std::string& sc, const std::string& x, int64_t cin, int64_t classes, int64_t cells) {
    const int64_t cc = std::max<int64_t>(cin, std::min<int64_t>(classes, 100));
    std::string box = conv(sc + "/cv2.0", conv(sc + "/cv2.1", x, cin, kBoxChannels, 3, 1), kBoxChannels, kBoxChannels, 3, 1);
    box = conv2d(b_, sc + "/cv2.2", param(sc) + ".cv2.2", box, kBoxChannels, kBoxChannels, 1, 1, 0, 1, true, 1.0f);
    std::string cls = conv(sc + "/cv3.0", conv(sc + "/cv3.1", x, cin, cc, 3, 1), cc, cc, 3, 1);
    cls = conv2d(b_, sc + "/cv3.2", param(sc) + ".cv3.2", cls, cc, classes, 1, 1, 0, 1, true, 1.0f);
    return b_.node(sc, "Reshape", {concat(sc, box, cls), b_.ints(param(sc) + ".shape", {0, kBoxChannels + classes, cells})});
  }

 private:
  // "/model.2/m.0/cv1" → "model.2.m.0.cv1", as the state dict names it.
  static std::string param(const std::string& sc) {
    std::string p = sc.substr(1);
    for (char& ch : p)
      if (ch == '/') ch = '.';
    return p;
  }
  OnnxBuilder& b_;
};

onnx::ModelProto build(const ZooArgs& a) {
  const int64_t image = a["image"], classes = a["classes"];
  OnnxBuilder b("yolo", a.spec);
  Yolo y(b);
  std::string x = b.input("input", {kBatch, 3, image, image});
  x = y.conv("/model.0", x, 3, 16, 3, 2);
  x = y.conv("/model.1", x, 16, 32, 3, 2);
  x = y.c2f("/model.2", x, 32, 32, 1, true);
  x = y.conv("/model.3", x, 32, 64, 3, 2);
  const std::string p3 = y.c2f("/model.4", x, 64, 64, 2, true);
  x = y.conv("/model.5", p3, 64, 128, 3, 2);
  const std::string p4 = y.c2f("/model.6", x, 128, 128, 2, true);
  x = y.conv("/model.7", p4, 128, 256, 3, 2);
  x = y.c2f("/model.8", x, 256, 256, 1, true);
  const std::string p5 = y.sppf("/model.9", x, 256);
  const std::string n4 = y.c2f("/model.12", y.concat("/model.11", y.upsample("/model.10", p5), p4), 384, 128, 1, false);
  const std::string o3 = y.c2f("/model.15", y.concat("/model.14", y.upsample("/model.13", n4), p3), 192, 64, 1, false);
  const std::string o4 = y.c2f("/model.18", y.concat("/model.17", y.conv("/model.16", o3, 64, 64, 3, 2), n4), 192, 128, 1, false);
  const std::string o5 = y.c2f("/model.21", y.concat("/model.20", y.conv("/model.19", o4, 128, 128, 3, 2), p5), 384, 256, 1, false);
  auto cells = [&](int64_t stride) { return (image / stride) * (image / stride); };
  std::vector<std::string> heads = {y.head("/model.22/0", o3, 64, classes, cells(8)), y.head("/model.22/1", o4, 128, classes, cells(16)),
                                    y.head("/model.22/2", o5, 256, classes, cells(32))};
  x = b.node("/model.22", "Concat", heads, {attr_int("axis", 2)});
  b.output(x, "output", {kBatch, kBoxChannels + classes, cells(8) + cells(16) + cells(32)});
  return b.finish();
}

}  // namespace

const ModelDef& yolo_model() {
  static const ModelDef def{
      "yolo",
      "YOLOv8n-style detector: Conv-BN-SiLU stages with C2f blocks (Split over channels, "
      "bottlenecks with residual Add, Concat), SPPF (three 5x5 MaxPools, Concat), a neck with "
      "nearest 2x Resize and Concat, and a decoupled box/class head at strides 8, 16 and 32, "
      "reshaped and concatenated. Input \"input\" [batch, 3, image, image], output \"output\" "
      "[batch, 64 + classes, cells].",
      {
          {"image", 128, 32, 4096, "input height and width, a multiple of 32 (ultralytics: 640)"},
          {"classes", 80, 1, 4096, "object classes"},
      },
      validate,
      build};
  return def;
}

}  // namespace fb::zoo
