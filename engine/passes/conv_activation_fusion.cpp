// Conv + activation fusion: the activation runs as a oneDNN post-op on the convolution's
// output while it is still in cache.
//
//      x ─▶ Conv ─▶ Relu | Clip(0, 6) | Sigmoid | HardSwish | Gelu | GeluTanh   ⇒   FusedConv[act]
//      x ─▶ Conv ─┬─▶ Sigmoid ─▶ Mul(conv, ·)   (SiLU)            ⇒   FusedConv[silu]
//                 └──────────────────┘
//
// Gelu and GeluTanh are the engine's fused GELU nodes (gelu-fusion runs first: an audio
// model's Conv1d stem is Conv, GELU, Conv, GELU). Clip is taken only with constant bounds.
// Left alone (can_fuse): a Conv output read elsewhere, a graph output or a partition point.
#include <algorithm>

#include "engine/passes/matcher.h"
#include "engine/passes/passes.h"

namespace fb {

namespace {

// The activations a FusedConv runs as a post-op, by op type ("activation" attribute).
struct ActivationRow {
  Op op;
  const char* name;
};
const ActivationRow kActivations[] = {{{"Relu"}, "relu"},
                                      {{"Sigmoid"}, "sigmoid"},
                                      {{"HardSwish"}, "hardswish"},
                                      {{"Gelu", -1, "fusebench"}, "gelu"},
                                      {{"GeluTanh", -1, "fusebench"}, "gelu_tanh"}};

std::vector<FusionMatch> match_conv_activation(const PassContext& ctx, size_t root) {
  const Graph& g = ctx.graph;
  const Node& conv = g.nodes[root];
  if (!is_onnx_op(&conv, "Conv")) return {};
  const std::string out = conv.outputs[0];
  const std::vector<size_t>& users = g.consumers(out);
  Node f = conv;
  f.op_type = "FusedConv";
  f.domain = "fusebench";
  Matcher m(ctx, root);
  std::string act;
  if (users.size() == 1) {
    const Node& a = g.nodes[users[0]];
    float lo = 0, hi = 0;
    for (const ActivationRow& row : kActivations)
      if (row.op.matches(&a)) act = row.name;
    if (is_onnx_op(&a, "Clip") && a.inputs.size() == 3 && constant_scalar(ctx, a.inputs[1], &lo) && constant_scalar(ctx, a.inputs[2], &hi)) {
      act = "clip";
      f.attrs["activation_min"] = Attribute{lo};
      f.attrs["activation_max"] = Attribute{hi};
    }
    if (act.empty()) return {};
    m.take(users[0]);
    f.outputs = {a.outputs[0]};
  } else if (const Node* mul = m.silu(out)) {
    act = "silu";
    f.outputs = {mul->outputs[0]};
  } else {
    return {};
  }
  f.attrs["activation"] = Attribute{act};
  // What the activation reads: an int8 build calibrates it (engine/passes/int8_lowering.h).
  f.attrs["activation_input"] = Attribute{out};
  return {m.match(std::move(f), "  conv-activation-fusion: Conv+" + act + " at '" + conv.name + "' → FusedConv")};
}

}  // namespace

int conv_activation_fusion(PassContext& ctx) { return run_fusion_rule(ctx, match_conv_activation); }

}  // namespace fb
