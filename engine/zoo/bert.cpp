// zoo:bert — a BERT-style encoder in the exact node pattern PyTorch exports for Hugging Face's
// BertLayer at opset 17 (decomposed LayerNorm, Erf GELU, no attention mask): the pattern the
// engine's attention, LayerNorm and GELU fusions must recognize.
#include "engine/zoo/models.h"
#include "engine/zoo/onnx_builder.h"

namespace fb::zoo {

namespace {

void validate(const ZooArgs& a) {
  if (a["hidden"] % a["heads"] != 0)
    a.fail("hidden", "(" + std::to_string(a["hidden"]) + ") must be divisible by parameter 'heads' (" +
                         std::to_string(a["heads"]) + ")");
}

onnx::ModelProto build(const ZooArgs& a) {
  const int64_t layers = a["layers"], hidden = a["hidden"], heads = a["heads"], seq = a["seq"];
  const int64_t ffn = a["ffn"] == 0 ? 4 * hidden : a["ffn"];
  OnnxBuilder b("bert", a.spec);
  // The input is already embedded: the embedding lookup is a gather the benchmark does not
  // care about, and a float input keeps every zoo model's input the same kind.
  std::string x = b.input("input", {kBatch, seq, hidden});
  x = layer_norm(b, "/embeddings/LayerNorm", "embeddings.LayerNorm", x, hidden);
  for (int64_t i = 0; i < layers; ++i) {
    const std::string sc = "/encoder/layer." + std::to_string(i);
    const std::string pre = "encoder.layer." + std::to_string(i);

    auto ctx = self_attention(b, sc + "/attention/self", pre + ".attention.self", x, hidden, heads);
    auto attn = linear(b, sc + "/attention/output/dense", pre + ".attention.output.dense", ctx,
                       hidden, hidden);
    attn = b.node(sc + "/attention/output", "Add", {attn, x});
    x = layer_norm(b, sc + "/attention/output/LayerNorm", pre + ".attention.output.LayerNorm", attn,
                   hidden);

    auto h = linear(b, sc + "/intermediate/dense", pre + ".intermediate.dense", x, hidden, ffn);
    h = gelu(b, sc + "/intermediate/intermediate_act_fn", h);
    h = linear(b, sc + "/output/dense", pre + ".output.dense", h, ffn, hidden);
    h = b.node(sc + "/output", "Add", {h, x});
    x = layer_norm(b, sc + "/output/LayerNorm", pre + ".output.LayerNorm", h, hidden);
  }
  b.output(x, "output", {kBatch, seq, hidden});
  return b.finish();
}

}  // namespace

const ModelDef& bert_model() {
  static const ModelDef def{
      "bert",
      "BERT-style encoder (post-norm, no mask) on already-embedded input: embedding LayerNorm, "
      "then `layers` BertLayers. Input \"input\" [batch, seq, hidden], output \"output\" "
      "[batch, seq, hidden].",
      {
          {"layers", 2, 1, 1024, "encoder layers"},
          {"hidden", 128, 1, 1 << 16, "hidden size; must be divisible by heads"},
          {"heads", 4, 1, 1 << 16, "attention heads"},
          {"seq", 64, 1, 1 << 16, "sequence length"},
          {"ffn", 0, 0, 1 << 18, "feed-forward inner size; 0 means 4 * hidden"},
      },
      validate,
      build};
  return def;
}

}  // namespace fb::zoo
