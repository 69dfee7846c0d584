// zoo:wav2vec2 — a wav2vec2-base-style speech encoder, named as transformers exports it:
// the feature encoder over raw 16 kHz audio (seven Conv1d without bias, kernels 10,3,3,3,3,2,2
// and strides 5,2,2,2,2,2,2; the first followed by GroupNorm with a group per channel,
// exported as Reshape, InstanceNormalization, Reshape, Mul, Add; GELU after each), the
// feature projection (LayerNorm, Linear), the positional convolution (Conv1d, kernel 128,
// 16 groups, padding 64, its last frame dropped, GELU, added), LayerNorm, then post-LN
// transformer layers. None of the other zoo models has 1-D convolutions or GroupNorm.
#include "engine/zoo/models.h"
#include "engine/zoo/onnx_builder.h"

namespace fb::zoo {

namespace {

constexpr int64_t kKernels[] = {10, 3, 3, 3, 3, 2, 2}, kStrides[] = {5, 2, 2, 2, 2, 2, 2};

int64_t frames_of(int64_t samples) {
  for (int i = 0; i < 7; ++i) samples = samples < kKernels[i] ? 0 : (samples - kKernels[i]) / kStrides[i] + 1;
  return samples;
}

void validate(const ZooArgs& a) {
  if (frames_of(a["samples"]) < 1)
    a.fail("samples", "(" + std::to_string(a["samples"]) + ") must leave the encoder at least one frame (400 or more)");
  if (a["hidden"] % 16 != 0)
    a.fail("hidden", "(" + std::to_string(a["hidden"]) + ") must be a multiple of 16 (the positional convolution's groups)");
  if (a["hidden"] % a["heads"] != 0) a.fail("heads", "(" + std::to_string(a["heads"]) + ") must divide hidden (" + std::to_string(a["hidden"]) + ")");
}

onnx::ModelProto build(const ZooArgs& a) {
  const int64_t samples = a["samples"], c = a["channels"], hidden = a["hidden"], heads = a["heads"], layers = a["layers"];
  OnnxBuilder b("wav2vec2", a.spec);
  std::string x = b.input("input", {kBatch, samples});
  x = b.node("/feature_extractor", "Unsqueeze", {x, b.ints("const.axis_1", {1})});
  int64_t cin = 1, t = samples;
  for (int i = 0; i < 7; ++i) {
    const std::string sc = "/feature_extractor/conv_layers." + std::to_string(i), pre = "feature_extractor.conv_layers." + std::to_string(i);
    x = b.node(sc + "/conv", "Conv", {x, b.weight(pre + ".conv.weight", {c, cin, kKernels[i]}, bound(kReluGain, cin * kKernels[i]))},
               {attr_ints("dilations", {1}), attr_int("group", 1), attr_ints("kernel_shape", {kKernels[i]}), attr_ints("pads", {0, 0}),
                attr_ints("strides", {kStrides[i]})});
    t = (t - kKernels[i]) / kStrides[i] + 1;
    if (i == 0) {  // GroupNorm(c groups, c channels) as exported
      const std::string gn = sc + "/layer_norm";
      std::string g = b.node(gn, "Reshape", {x, b.ints("const.group_shape", {0, c, -1})});
      g = b.node(gn, "InstanceNormalization",
                 {g, b.weight("const.instance_norm_scale", {c}, 0.f, 1.f), b.weight("const.instance_norm_bias", {c}, 0.f, 0.f)},
                 {attr_float("epsilon", 1e-5f)});
      g = b.node(gn, "Reshape", {g, b.ints("const.ungroup_shape", {0, c, t})});
      g = b.node(gn, "Mul", {g, b.weight(pre + ".layer_norm.weight", {c, 1}, 0.1f, 1.f)});
      x = b.node(gn, "Add", {g, b.weight(pre + ".layer_norm.bias", {c, 1}, 0.1f)});
    }
    x = gelu(b, sc + "/activation", x);
    cin = c;
  }
  x = b.node("/feature_projection", "Transpose", {x}, {attr_ints("perm", {0, 2, 1})});
  x = layer_norm(b, "/feature_projection/layer_norm", "feature_projection.layer_norm", x, c, 1e-5f);
  x = linear(b, "/feature_projection/projection", "feature_projection.projection", x, c, hidden);
  std::string p = b.node("/encoder/pos_conv_embed", "Transpose", {x}, {attr_ints("perm", {0, 2, 1})});
  p = b.node("/encoder/pos_conv_embed/conv", "Conv",
             {p, b.weight("encoder.pos_conv_embed.conv.weight", {hidden, hidden / 16, 128}, bound(1.f, hidden / 16 * 128)),
              b.weight("encoder.pos_conv_embed.conv.bias", {hidden}, bias_bound(hidden / 16 * 128))},
             {attr_ints("dilations", {1}), attr_int("group", 16), attr_ints("kernel_shape", {128}), attr_ints("pads", {64, 64}),
              attr_ints("strides", {1})});
  p = b.node("/encoder/pos_conv_embed/padding", "Slice", {p, b.ints("const.slice_start", {0}), b.ints("const.slice_end", {-1}), b.ints("const.slice_axis", {2})});
  p = gelu(b, "/encoder/pos_conv_embed/activation", p);
  p = b.node("/encoder/pos_conv_embed", "Transpose", {p}, {attr_ints("perm", {0, 2, 1})});
  x = b.node("/encoder", "Add", {x, p});
  x = layer_norm(b, "/encoder/layer_norm", "encoder.layer_norm", x, hidden, 1e-5f);
  for (int64_t l = 0; l < layers; ++l) {
    const std::string sc = "/encoder/layers." + std::to_string(l), pre = "encoder.layers." + std::to_string(l);
    std::string att = self_attention(b, sc + "/attention", pre + ".attention", x, hidden, heads);
    att = linear(b, sc + "/attention/out_proj", pre + ".attention.out_proj", att, hidden, hidden);
    x = layer_norm(b, sc + "/layer_norm", pre + ".layer_norm", b.node(sc, "Add", {x, att}), hidden, 1e-5f);
    std::string f = linear(b, sc + "/feed_forward/intermediate_dense", pre + ".feed_forward.intermediate_dense", x, hidden, 4 * hidden);
    f = gelu(b, sc + "/feed_forward/intermediate_act_fn", f);
    f = linear(b, sc + "/feed_forward/output_dense", pre + ".feed_forward.output_dense", f, 4 * hidden, hidden);
    x = layer_norm(b, sc + "/final_layer_norm", pre + ".final_layer_norm", b.node(sc, "Add", {x, f}), hidden, 1e-5f);
  }
  b.output(x, "output", {kBatch, t, hidden});
  return b.finish();
}

}  // namespace

const ModelDef& wav2vec2_model() {
  static const ModelDef def{
      "wav2vec2",
      "wav2vec2-base-style speech encoder: seven Conv1d over raw audio (the first with GroupNorm, "
      "a group per channel, exported as Reshape, InstanceNormalization, Reshape, Mul, Add; GELU "
      "after each), LayerNorm and Linear to hidden, a grouped positional Conv1d (kernel 128, GELU, "
      "added), LayerNorm, then post-LN transformer layers (GELU FFN of 4 x hidden). Input \"input\" "
      "[batch, samples], output \"output\" [batch, frames, hidden] (16000 samples: 49 frames). "
      "wav2vec2-base: channels=512, hidden=768, heads=12, layers=12.",
      {
          {"samples", 4000, 400, 1 << 20, "audio samples (16 kHz: 16000 is one second)"},
          {"channels", 64, 1, 4096, "feature encoder channels (wav2vec2-base: 512)"},
          {"hidden", 96, 16, 8192, "transformer width, a multiple of 16 (wav2vec2-base: 768)"},
          {"heads", 4, 1, 256, "attention heads, dividing hidden"},
          {"layers", 1, 0, 64, "transformer layers"},
      },
      validate,
      build};
  return def;
}

}  // namespace fb::zoo
