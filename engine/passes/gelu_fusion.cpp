// GELU fusion, the erf form PyTorch exports for nn.GELU():
//
//      x ──┬──▶ Div(x, √2) | Mul(x, 1/√2) ──▶ Erf ──▶ Add(·, 1) ──┐
//          │                                                      ▼
//          └─────────────────────────────────────────────▶ Mul(x, ·) ──▶ Mul(·, 0.5)
//   or     └──▶ Mul(x, 0.5) ─────────────────────────────▶ Mul(h, ·)
//
// becomes one fusebench.Gelu(x). Constants must match √2, 1 and 0.5 to 1e-4; the tanh
// form is gelu_tanh_fusion.cpp's.
#include <cmath>

#include "engine/passes/matcher.h"
#include "engine/passes/passes.h"

namespace fb {

namespace {

std::vector<FusionMatch> match_gelu(const PassContext& ctx, size_t root) {
  const Graph& g = ctx.graph;
  const Node& erf = g.nodes[root];
  if (!is_onnx_op(&erf, "Erf")) return {};
  Matcher m(ctx, root);
  const Node* scale = g.producer(erf.inputs[0]);
  if (!scale || scale->inputs.size() != 2) return {};
  const bool scaled = (is_onnx_op(scale, "Div") && constant_near(ctx, scale->inputs[1], std::sqrt(2.f))) ||
                      (is_onnx_op(scale, "Mul") && constant_near(ctx, scale->inputs[1], std::sqrt(0.5f)));
  if (!scaled) return {};
  m.producer(erf.inputs[0], {scale->op_type.c_str()});
  const std::string x = scale->inputs[0];
  const Node* add = m.reader(erf.outputs[0], {"Add"});
  if (!add || add->inputs[0] != erf.outputs[0] || !constant_near(ctx, add->inputs[1], 1.f)) return {};
  const Node* mul = m.reader(add->outputs[0], {"Mul"});
  if (!mul) return {};
  const std::string other = mul->inputs[0] == add->outputs[0] ? mul->inputs[1] : mul->inputs[0];
  std::string out;
  if (other == x) {  // (x · (1 + erf)) · 0.5
    const Node* hm = m.reader(mul->outputs[0], {"Mul"});
    if (!hm || !constant_near(ctx, hm->inputs[1], 0.5f)) return {};
    out = hm->outputs[0];
  } else {  // (x · 0.5) · (1 + erf)
    const Node* hm = m.producer(other, {"Mul"});
    if (!hm || hm->inputs[0] != x || !constant_near(ctx, hm->inputs[1], 0.5f)) return {};
    out = mul->outputs[0];
  }
  return {m.match(fusebench_node(erf.name + "_Gelu", "Gelu", {x}, {out}), "  gelu-fusion: 5 nodes around '" + erf.name + "' → Gelu")};
}

}  // namespace

int gelu_fusion(PassContext& ctx) { return run_fusion_rule(ctx, match_gelu); }

}  // namespace fb
