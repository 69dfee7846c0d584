// GELU fusion, the erf form PyTorch exports for nn.GELU():
//
//      x ──┬──▶ Div(x, √2) | Mul(x, 1/√2) ──▶ Erf ──▶ Add(·, 1) ──┐
//          │                                                      ▼
//          └─────────────────────────────────────────────▶ Mul(x, ·) ──▶ Mul(·, 0.5)
//   or     └──▶ Mul(x, 0.5) ─────────────────────────────▶ Mul(h, ·)
//
// becomes one fusebench.Gelu(x); Add and Mul take their operands in either order.
// Constants must match √2, 1 and 0.5 to 1e-4; the tanh form is gelu_tanh_fusion.cpp's.
#include <cmath>

#include "engine/passes/passes.h"
#include "engine/passes/pattern.h"

namespace fb {

namespace {

const Pattern& gelu_forms() {
  static const Pattern forms = [] {
    const Pattern x = any("x");
    const Pattern scaled = one_of({op("Div", {x, constant(std::sqrt(2.f))}), op("Mul", {x, constant(std::sqrt(0.5f))})});
    const Pattern one_plus_erf = op("Add", {op("Erf", {scaled}, "erf"), constant(1.f)});
    return one_of({op("Mul", {op("Mul", {x, one_plus_erf}), constant(0.5f)}),    // (x · (1 + erf)) · 0.5
                   op("Mul", {op("Mul", {x, constant(0.5f)}), one_plus_erf})});  // (x · 0.5) · (1 + erf)
  }();
  return forms;
}

std::vector<FusionMatch> match_gelu(const PassContext& ctx, size_t root) {
  Matcher m(ctx, root);
  const std::optional<PatternMatch> p = match_pattern(m, gelu_forms(), root);
  if (!p) return {};
  const std::string& erf = p->nodes.at("erf")->name;
  return {m.match(fusebench_node(erf + "_Gelu", "Gelu", {p->values.at("x")}, ctx.graph.nodes[root].outputs),
                  "  gelu-fusion: " + std::to_string(m.size()) + " nodes around '" + erf + "' → Gelu")};
}

}  // namespace

int gelu_fusion(PassContext& ctx) { return run_fusion_rule(ctx, match_gelu); }

}  // namespace fb
