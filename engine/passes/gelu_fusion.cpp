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

#include "engine/passes/passes.h"

namespace fb {

namespace {
bool is_op(const Node& n, const char* op) { return is_onnx_op(&n, op); }
}  // namespace

int gelu_fusion(PassContext& ctx) {
  Graph& g = ctx.graph;
  const BuildConfig& cfg = ctx.config;
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& erf = g.nodes[i];
    if (!is_op(erf, "Erf")) continue;
    const Node* scale = g.producer(erf.inputs[0]);
    if (!scale || scale->inputs.size() != 2) continue;
    const bool scaled = (is_op(*scale, "Div") && constant_near(ctx, scale->inputs[1], std::sqrt(2.f))) ||
                        (is_op(*scale, "Mul") && constant_near(ctx, scale->inputs[1], std::sqrt(0.5f)));
    if (!scaled || !value_fusible(g, scale->outputs[0], cfg) || !value_fusible(g, erf.outputs[0], cfg)) continue;
    const std::string x = scale->inputs[0];
    const int add_i = single_consumer(g, erf.outputs[0]);
    const Node& add = g.nodes[size_t(add_i)];
    if (!is_op(add, "Add") || add.inputs[0] != erf.outputs[0] || !constant_near(ctx, add.inputs[1], 1.f)) continue;
    if (!value_fusible(g, add.outputs[0], cfg)) continue;
    const int mul_i = single_consumer(g, add.outputs[0]);
    const Node& mul = g.nodes[size_t(mul_i)];
    if (!is_op(mul, "Mul")) continue;
    const std::string other = mul.inputs[0] == add.outputs[0] ? mul.inputs[1] : mul.inputs[0];
    std::vector<size_t> idx{size_t(g.producer(erf.inputs[0]) - g.nodes.data()), i, size_t(add_i), size_t(mul_i)};
    std::string out;
    if (other == x) {  // (x · (1 + erf)) · 0.5
      if (!value_fusible(g, mul.outputs[0], cfg)) continue;
      const int h_i = single_consumer(g, mul.outputs[0]);
      const Node& hm = g.nodes[size_t(h_i)];
      if (!is_op(hm, "Mul") || !constant_near(ctx, hm.inputs[1], 0.5f)) continue;
      idx.push_back(size_t(h_i));
      out = hm.outputs[0];
    } else {  // (x · 0.5) · (1 + erf)
      const Node* hm = g.producer(other);
      if (!hm || !is_op(*hm, "Mul") || hm->inputs[0] != x || !constant_near(ctx, hm->inputs[1], 0.5f) ||
          !value_fusible(g, other, cfg))
        continue;
      idx.push_back(size_t(hm - g.nodes.data()));
      out = mul.outputs[0];
    }
    bool ok = true;
    for (size_t k : idx) ok = ok && node_fusible(g.nodes[k], cfg);
    if (!ok) continue;
    Node gelu = fusebench_node(erf.name + "_Gelu", "Gelu", {x}, {out});
    ctx.log.push_back("  gelu-fusion: 5 nodes around '" + erf.name + "' → Gelu");
    replace_nodes(g, idx, std::move(gelu));
    ++fused;
    i = size_t(-1);  // indices moved: rescan from the start
  }
  return fused;
}

}  // namespace fb
