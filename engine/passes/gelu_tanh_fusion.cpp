// GELU fusion, the tanh form (nn.GELU(approximate="tanh"), HF's NewGELU / gelu_new):
//
//      0.5 · x · (1 + Tanh(√(2/π) · (x + 0.044715 · x³)))
//
//   x³ as Pow(x, 3) or Mul(x, Mul(x, x)); every Mul/Add with its operands in either order;
//   the outer product as (x · u) · 0.5, (0.5 · x) · u or (0.5 · u) · x, u = 1 + Tanh(...)
//
// becomes one fusebench.GeluTanh(x). Constants must match to 1e-4. Every intermediate
// must have no reader outside the pattern (can_fuse); x may have any number. The pattern
// below is this formula as data (engine/passes/pattern.h).
#include "engine/passes/passes.h"
#include "engine/passes/pattern.h"

namespace fb {

namespace {

const Pattern& gelu_tanh_forms() {
  static const Pattern forms = [] {
    const Pattern x = any("x");
    const Pattern cube = one_of({op("Pow", {x, constant(3.f)}), op("Mul", {x, op("Mul", {x, x})})});
    const Pattern inner = op("Mul", {op("Add", {x, op("Mul", {cube, constant(0.044715f)})}), constant(0.7978845608f)});
    const Pattern u = op("Add", {op("Tanh", {inner}, "tanh"), constant(1.f)});
    return one_of({op("Mul", {op("Mul", {x, u}), constant(0.5f)}),   // (x · u) · 0.5
                   op("Mul", {op("Mul", {x, constant(0.5f)}), u}),   // (0.5 · x) · u
                   op("Mul", {op("Mul", {u, constant(0.5f)}), x})});  // (0.5 · u) · x
  }();
  return forms;
}

std::vector<FusionMatch> match_gelu_tanh(const PassContext& ctx, size_t root) {
  Matcher m(ctx, root);
  const std::optional<PatternMatch> p = match_pattern(m, gelu_tanh_forms(), root);
  if (!p) return {};
  const std::string& tanh = p->nodes.at("tanh")->name;
  return {m.match(fusebench_node(tanh + "_GeluTanh", "GeluTanh", {p->values.at("x")}, ctx.graph.nodes[root].outputs),
                  "  gelu-tanh-fusion: " + std::to_string(m.size()) + " nodes around '" + tanh + "' → GeluTanh")};
}

}  // namespace

int gelu_tanh_fusion(PassContext& ctx) { return run_fusion_rule(ctx, match_gelu_tanh); }

}  // namespace fb
