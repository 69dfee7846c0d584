// GELU fusion, the tanh form (nn.GELU(approximate="tanh"), HF's NewGELU / gelu_new):
//
//      0.5 · x · (1 + Tanh(√(2/π) · (x + 0.044715 · x³)))
//
//   x³ as Pow(x, 3) or Mul(x, Mul(x, x)); every Mul/Add with its operands in either order;
//   the outer product as (x · u) · 0.5, (0.5 · x) · u or (0.5 · u) · x, u = 1 + Tanh(...)
//
// becomes one fusebench.GeluTanh(x). Constants must match to 1e-4. Every intermediate
// must have no reader outside the pattern (can_fuse); x may have any number.
#include "engine/passes/matcher.h"
#include "engine/passes/passes.h"

namespace fb {

namespace {

const Op kMul{"Mul", 2}, kAdd{"Add", 2}, kPow{"Pow", 2};

// c is x³ of the given x: Pow(x, 3), Mul(x, Mul(x, x)) or Mul(Mul(x, x), x).
bool cube_of(Matcher& m, const PassContext& ctx, const std::string& c, const std::string& x) {
  const size_t mark = m.mark();
  if (const Node* p = ctx.graph.producer(c); is_onnx_op(p, "Pow")) {
    if (m.producer(c, kPow) && p->inputs[0] == x && constant_near(ctx, p->inputs[1], 3.f)) return true;
  } else if (const Node* mul = m.producer(c, kMul)) {
    const std::string* sq = Matcher::beside(mul, x);
    const Node* s = sq ? m.producer(*sq, kMul) : nullptr;
    if (s && s->inputs[0] == x && s->inputs[1] == x) return true;
  }
  m.reset(mark);
  return false;
}

std::vector<FusionMatch> match_gelu_tanh(const PassContext& ctx, size_t root) {
  const Graph& g = ctx.graph;
  const float kSqrt2OverPi = 0.7978845608f, kKappa = 0.044715f;
  const Node& tanh = g.nodes[root];
  if (!is_onnx_op(&tanh, "Tanh")) return {};
  Matcher m(ctx, root);
  // Backwards: √(2/π) · (x + κ · x³).
  const std::string* s = m.beside_constant(m.producer(tanh.inputs[0], kMul), kSqrt2OverPi);
  const Node* add = s ? m.producer(*s, kAdd) : nullptr;
  if (!add) return {};
  std::string x;
  for (int k = 0; k < 2 && x.empty(); ++k) {
    const size_t mark = m.mark();
    const std::string& cand = add->inputs[size_t(k)];
    const std::string* cube = m.beside_constant(m.producer(add->inputs[size_t(1 - k)], kMul), kKappa);
    if (cube && cube_of(m, ctx, *cube, cand)) x = cand;
    else m.reset(mark);
  }
  if (x.empty()) return {};
  // Forwards: u = 1 + tanh, then the product with x and 0.5 in one of three groupings.
  const Node* one_plus = m.reader(tanh.outputs[0], kAdd);
  if (!one_plus || !m.beside_constant(one_plus, 1.f)) return {};
  const Node* m1 = m.reader(one_plus->outputs[0], kMul);
  const std::string* o = Matcher::beside(m1, one_plus->outputs[0]);
  if (!o) return {};
  std::string out;
  if (*o == x) {  // (x · u) · 0.5
    const Node* h = m.reader(m1->outputs[0], kMul);
    if (h && m.beside_constant(h, 0.5f) && *m.beside_constant(h, 0.5f) == m1->outputs[0]) out = h->outputs[0];
  } else if (const Node* hp = g.producer(*o); kMul.matches(hp)) {  // (0.5 · x) · u
    const std::string* hx = m.beside_constant(hp, 0.5f);
    if (hx && *hx == x && m.producer(*o, kMul)) out = m1->outputs[0];
  } else if (constant_near(ctx, *o, 0.5f)) {  // (0.5 · u) · x
    const Node* m2 = m.reader(m1->outputs[0], kMul);
    const std::string* xo = Matcher::beside(m2, m1->outputs[0]);
    if (xo && *xo == x) out = m2->outputs[0];
  }
  if (out.empty()) return {};
  return {m.match(fusebench_node(tanh.name + "_GeluTanh", "GeluTanh", {x}, {out}),
                  "  gelu-tanh-fusion: " + std::to_string(m.size()) + " nodes around '" + tanh.name + "' → GeluTanh")};
}

}  // namespace

int gelu_tanh_fusion(PassContext& ctx) { return run_fusion_rule(ctx, match_gelu_tanh); }

}  // namespace fb
