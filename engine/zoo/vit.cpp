// zoo:vit — a small Vision Transformer named as Hugging Face's ViTModel exports: a patch
// embedding convolution feeding pre-norm encoder layers, so the engine sees attention and
// LayerNorm fusion opportunities in a layout different from BERT's.
#include "engine/zoo/models.h"
#include "engine/zoo/onnx_builder.h"

namespace fb::zoo {

namespace {

constexpr int64_t kMlpRatio = 4;

void validate(const ZooArgs& a) {
  if (a["hidden"] % a["heads"] != 0)
    a.fail("hidden", "(" + std::to_string(a["hidden"]) + ") must be divisible by parameter 'heads' (" +
                         std::to_string(a["heads"]) + ")");
  if (a["image"] % a["patch"] != 0)
    a.fail("image", "(" + std::to_string(a["image"]) + ") must be divisible by parameter 'patch' (" +
                        std::to_string(a["patch"]) + ")");
}

onnx::ModelProto build(const ZooArgs& a) {
  const int64_t layers = a["layers"], hidden = a["hidden"], heads = a["heads"],
                patch = a["patch"], image = a["image"], classes = a["classes"];
  const int64_t grid = image / patch, tokens = grid * grid, ffn = kMlpRatio * hidden;
  OnnxBuilder b("vit", a.spec);
  std::string x = b.input("input", {kBatch, 3, image, image});
  x = conv2d(b, "/embeddings/patch_embeddings/projection", "embeddings.patch_embeddings.projection",
             x, 3, hidden, patch, patch, 0, 1, true, 1.0f);
  // flatten(2).transpose(1, 2): [batch, hidden, grid, grid] -> [batch, tokens, hidden].
  x = b.node("/embeddings/patch_embeddings", "Reshape",
             {x, b.ints("const.patch_tokens_shape", {0, hidden, tokens})});
  x = b.node("/embeddings/patch_embeddings", "Transpose", {x}, {attr_ints("perm", {0, 2, 1})});
  // No class token: the head mean-pools over tokens instead.
  x = b.node("/embeddings", "Add",
             {x, b.weight("embeddings.position_embeddings", {1, tokens, hidden}, 0.1f)});
  for (int64_t i = 0; i < layers; ++i) {
    const std::string sc = "/encoder/layer." + std::to_string(i);
    const std::string pre = "encoder.layer." + std::to_string(i);
    auto h = layer_norm(b, sc + "/layernorm_before", pre + ".layernorm_before", x, hidden);
    h = self_attention(b, sc + "/attention/attention", pre + ".attention.attention", h, hidden,
                       heads);
    h = linear(b, sc + "/attention/output/dense", pre + ".attention.output.dense", h, hidden,
               hidden);
    x = b.node(sc, "Add", {h, x});
    h = layer_norm(b, sc + "/layernorm_after", pre + ".layernorm_after", x, hidden);
    h = linear(b, sc + "/intermediate/dense", pre + ".intermediate.dense", h, hidden, ffn);
    h = gelu(b, sc + "/intermediate/intermediate_act_fn", h);
    h = linear(b, sc + "/output/dense", pre + ".output.dense", h, ffn, hidden);
    x = b.node(sc + "/output", "Add", {h, x});
  }
  x = layer_norm(b, "/layernorm", "layernorm", x, hidden);
  x = b.node("", "ReduceMean", {x}, {attr_ints("axes", {1}), attr_int("keepdims", 0)});
  x = linear_gemm(b, "/classifier", "classifier", x, hidden, classes);
  b.output(x, "output", {kBatch, classes});
  return b.finish();
}

}  // namespace

const ModelDef& vit_model() {
  static const ModelDef def{
      "vit",
      "Vision Transformer without class token: patch-embedding Conv, position embedding, "
      "`layers` pre-norm encoder layers (MLP 4x hidden), final LayerNorm, mean over tokens, "
      "Gemm. Input \"input\" [batch, 3, image, image], output \"output\" [batch, classes].",
      {
          {"layers", 2, 1, 1024, "encoder layers"},
          {"hidden", 64, 1, 1 << 16, "hidden size; must be divisible by heads"},
          {"heads", 4, 1, 1 << 16, "attention heads"},
          {"patch", 4, 1, 4096, "patch height and width; must divide image"},
          {"image", 32, 1, 4096, "input height and width"},
          {"classes", 10, 1, 1 << 20, "output classes"},
      },
      validate,
      build};
  return def;
}

}  // namespace fb::zoo
