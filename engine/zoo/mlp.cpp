// zoo:mlp — a plain multilayer perceptron: the smallest model that still exercises matrix
// kernels, bias-add and activation fusion, and Gemm.
#include "engine/zoo/models.h"
#include "engine/zoo/onnx_builder.h"

namespace fb::zoo {

namespace {

void validate(const ZooArgs&) {}

// As PyTorch exports
//   layers = ModuleList(Block(fc=Linear, relu=ReLU) ...); head = Linear
// on a 2-D input, except that hidden layers are MatMul + Add (the form Linear takes on
// higher-rank inputs) so the engine's MatMul-bias fusion is exercised next to Gemm.
onnx::ModelProto build(const ZooArgs& a) {
  const int64_t in = a["in"], hidden = a["hidden"], out = a["out"], layers = a["layers"];
  OnnxBuilder b("mlp", a.spec);
  std::string x = b.input("input", {kBatch, in});
  int64_t width = in;
  for (int64_t i = 0; i < layers; ++i) {
    const std::string module = "layers." + std::to_string(i);
    x = linear(b, "/" + module + "/fc", module + ".fc", x, width, hidden, kReluGain);
    x = b.node("/" + module + "/relu", "Relu", {x});
    width = hidden;
  }
  x = linear_gemm(b, "/head", "head", x, width, out);
  b.output(x, "output", {kBatch, out});
  return b.finish();
}

}  // namespace

const ModelDef& mlp_model() {
  static const ModelDef def{
      "mlp",
      "Multilayer perceptron: `layers` hidden Linear+ReLU layers (MatMul+Add+Relu), then a Gemm "
      "output layer. Input \"input\" [batch, in], output \"output\" [batch, out].",
      {
          {"in", 256, 1, 1 << 20, "input features"},
          {"hidden", 512, 1, 1 << 20, "features of each hidden layer"},
          {"out", 16, 1, 1 << 20, "output features"},
          {"layers", 3, 1, 1024, "hidden layers (Linear+ReLU) before the output layer"},
      },
      validate,
      build};
  return def;
}

}  // namespace fb::zoo
