// GELU fusion, the erf form PyTorch exports for nn.GELU():
//
//      x ──┬──▶ Div(x, √2) | Mul(x, 1/√2) ──▶ Erf ──▶ Add(·, 1) ──┐
//          │                                                      ▼
//          └─────────────────────────────────────────────▶ Mul(x, ·) ──▶ Mul(·, 0.5)
//   or     └──▶ Mul(x, 0.5) ─────────────────────────────▶ Mul(h, ·)
//
// becomes one fusebench.Gelu(x). Constants must match √2, 1 and 0.5 to 1e-4; the tanh
// form is left alone.
#include <cmath>

#include "engine/passes/passes.h"

namespace fb {

namespace {
bool near(float a, float b) { return std::fabs(a - b) <= 1e-4f * std::max(1.f, std::fabs(b)); }
bool is_op(const Node& n, const char* op) { return n.domain.empty() && n.op_type == op; }
}  // namespace

int gelu_fusion(PassContext& ctx) {
  Graph& g = ctx.graph;
  const BuildConfig& cfg = ctx.config;
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& erf = g.nodes[i];
    if (!is_op(erf, "Erf")) continue;
    const Node* scale = g.producer(erf.inputs[0]);
    float c = 0;
    if (!scale || scale->inputs.size() != 2 || !constant_scalar(ctx, scale->inputs[1], &c)) continue;
    const bool scaled = (is_op(*scale, "Div") && near(c, std::sqrt(2.f))) || (is_op(*scale, "Mul") && near(c, std::sqrt(0.5f)));
    if (!scaled || !value_fusible(g, scale->outputs[0], cfg) || !value_fusible(g, erf.outputs[0], cfg)) continue;
    const std::string x = scale->inputs[0];
    const int add_i = single_consumer(g, erf.outputs[0]);
    const Node& add = g.nodes[size_t(add_i)];
    float one = 0;
    if (!is_op(add, "Add") || add.inputs[0] != erf.outputs[0] || !constant_scalar(ctx, add.inputs[1], &one) || !near(one, 1.f)) continue;
    if (!value_fusible(g, add.outputs[0], cfg)) continue;
    const int mul_i = single_consumer(g, add.outputs[0]);
    const Node& mul = g.nodes[size_t(mul_i)];
    if (!is_op(mul, "Mul")) continue;
    const std::string other = mul.inputs[0] == add.outputs[0] ? mul.inputs[1] : mul.inputs[0];
    std::vector<size_t> idx{size_t(g.producer(erf.inputs[0]) - g.nodes.data()), i, size_t(add_i), size_t(mul_i)};
    std::string out;
    float half = 0;
    if (other == x) {  // (x · (1 + erf)) · 0.5
      if (!value_fusible(g, mul.outputs[0], cfg)) continue;
      const int h_i = single_consumer(g, mul.outputs[0]);
      const Node& hm = g.nodes[size_t(h_i)];
      if (!is_op(hm, "Mul") || !constant_scalar(ctx, hm.inputs[1], &half) || !near(half, 0.5f)) continue;
      idx.push_back(size_t(h_i));
      out = hm.outputs[0];
    } else {  // (x · 0.5) · (1 + erf)
      const Node* hm = g.producer(other);
      if (!hm || !is_op(*hm, "Mul") || hm->inputs[0] != x || !constant_scalar(ctx, hm->inputs[1], &half) ||
          !near(half, 0.5f) || !value_fusible(g, other, cfg))
        continue;
      idx.push_back(size_t(hm - g.nodes.data()));
      out = mul.outputs[0];
    }
    bool ok = true;
    for (size_t k : idx) ok = ok && node_fusible(g.nodes[k], cfg);
    if (!ok) continue;
    Node gelu;
    gelu.name = erf.name + "_Gelu";
    gelu.op_type = "Gelu";
    gelu.domain = "fusebench";
    gelu.inputs = {x};
    gelu.outputs = {out};
    ctx.log.push_back("  gelu-fusion: 5 nodes around '" + erf.name + "' → Gelu");
    replace_nodes(g, idx, std::move(gelu));
    ++fused;
    i = size_t(-1);  // indices moved: rescan from the start
  }
  return fused;
}

}  // namespace fb
