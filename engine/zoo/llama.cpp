// zoo:llama — a LLaMA-style pre-norm encoder on already-embedded input: per layer,
// RMSNorm → self-attention → residual Add, RMSNorm → SiLU-gated MLP → residual Add; a
// final RMSNorm. RMSNorm is decomposed as exported (Pow, ReduceMean, Add, Sqrt, Div, Mul):
// the pattern layernorm-fusion makes one layer of, and the shipped RMSNorm plugin
// replaces where a scenario places it (engine/plugin/shipped/rms_norm_plugin.cpp).
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
  const int64_t ffn = a["ffn"] == 0 ? 8 * hidden / 3 : a["ffn"];
  OnnxBuilder b("llama", a.spec);
  std::string x = b.input("input", {kBatch, seq, hidden});
  for (int64_t i = 0; i < layers; ++i) {
    const std::string sc = "/layers." + std::to_string(i);
    const std::string pre = "layers." + std::to_string(i);
    auto h = rms_norm(b, sc + "/input_layernorm", pre + ".input_layernorm", x, hidden);
    h = self_attention(b, sc + "/self_attn", pre + ".self_attn", h, hidden, heads);
    x = b.node(sc, "Add", {x, h});
    h = rms_norm(b, sc + "/post_attention_layernorm", pre + ".post_attention_layernorm", x, hidden);
    auto gate = linear(b, sc + "/mlp/gate_proj", pre + ".mlp.gate_proj", h, hidden, ffn);
    gate = b.node(sc + "/mlp/act_fn", "Mul", {gate, b.node(sc + "/mlp/act_fn", "Sigmoid", {gate})});
    auto up = linear(b, sc + "/mlp/up_proj", pre + ".mlp.up_proj", h, hidden, ffn);
    h = linear(b, sc + "/mlp/down_proj", pre + ".mlp.down_proj", b.node(sc + "/mlp", "Mul", {gate, up}), ffn, hidden);
    x = b.node(sc, "Add", {x, h});
  }
  x = rms_norm(b, "/norm", "norm", x, hidden);
  b.output(x, "output", {kBatch, seq, hidden});
  return b.finish();
}

}  // namespace

const ModelDef& llama_model() {
  static const ModelDef def{
      "llama",
      "LLaMA-style pre-norm encoder on already-embedded input: `layers` blocks of RMSNorm, "
      "self-attention (no mask), RMSNorm, SiLU-gated MLP, each with its residual Add; a final "
      "RMSNorm. Input \"input\" [batch, seq, hidden], output \"output\" [batch, seq, hidden].",
      {
          {"layers", 2, 1, 1024, "blocks"},
          {"hidden", 128, 1, 1 << 16, "hidden size; must be divisible by heads"},
          {"heads", 4, 1, 1 << 16, "attention heads"},
          {"seq", 64, 1, 1 << 16, "sequence length"},
          {"ffn", 0, 0, 1 << 18, "MLP inner size; 0 means 8 * hidden / 3"},
      },
      validate,
      build};
  return def;
}

}  // namespace fb::zoo
