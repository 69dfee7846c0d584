// GELU fusion, the tanh form (nn.GELU(approximate="tanh"), HF's NewGELU / gelu_new):
//
//      0.5 · x · (1 + Tanh(√(2/π) · (x + 0.044715 · x³)))
//
//   x³ as Pow(x, 3) or Mul(x, Mul(x, x)); every Mul/Add with its operands in either order;
//   the outer product as (x · u) · 0.5, (0.5 · x) · u or (0.5 · u) · x, u = 1 + Tanh(...)
//
// becomes one fusebench.GeluTanh(x). Constants must match to 1e-4. Every intermediate
// must have no reader outside the pattern; x may have any number.
#include "engine/passes/passes.h"

namespace fb {

namespace {

struct Match {
  const PassContext& ctx;
  std::vector<size_t> nodes;  // matched node indices

  const Graph& g() const { return ctx.graph; }
  size_t index(const Node* n) const { return size_t(n - g().nodes.data()); }

  // The node producing v when it is `op`, v is an intermediate only the pattern reads,
  // and the node may fuse; the node is recorded.
  const Node* take(const std::string& v, const char* op) {
    const Node* p = g().producer(v);
    if (!is_onnx_op(p, op) || p->inputs.size() != 2 || !value_fusible(g(), v, ctx.config) || !node_fusible(*p, ctx.config))
      return nullptr;
    nodes.push_back(index(p));
    return p;
  }
  // The single reader of v when it is `op` (same conditions as take).
  const Node* next(const std::string& v, const char* op) {
    if (!value_fusible(g(), v, ctx.config)) return nullptr;
    const Node* c = &g().nodes[size_t(single_consumer(g(), v))];
    if (!is_onnx_op(c, op) || c->inputs.size() != 2 || !node_fusible(*c, ctx.config)) return nullptr;
    nodes.push_back(index(c));
    return c;
  }
  // n's operand other than the scalar constant `value`, or nullptr.
  const std::string* beside_constant(const Node* n, float value) const {
    if (!n) return nullptr;
    if (constant_near(ctx, n->inputs[1], value)) return &n->inputs[0];
    if (constant_near(ctx, n->inputs[0], value)) return &n->inputs[1];
    return nullptr;
  }
  // n's operand other than v, or nullptr when n does not read v.
  static const std::string* beside(const Node* n, const std::string& v) {
    if (!n) return nullptr;
    if (n->inputs[0] == v) return &n->inputs[1];
    if (n->inputs[1] == v) return &n->inputs[0];
    return nullptr;
  }
  // c is x³ of the given x: Pow(x, 3), Mul(x, Mul(x, x)) or Mul(Mul(x, x), x).
  bool cube_of(const std::string& c, const std::string& x) {
    const size_t mark = nodes.size();
    if (const Node* p = g().producer(c); is_onnx_op(p, "Pow")) {
      if (take(c, "Pow") && p->inputs[0] == x && constant_near(ctx, p->inputs[1], 3.f)) return true;
    } else if (const Node* m = take(c, "Mul")) {
      const std::string* sq = beside(m, x);
      const Node* s = sq ? take(*sq, "Mul") : nullptr;
      if (s && s->inputs[0] == x && s->inputs[1] == x) return true;
    }
    nodes.resize(mark);
    return false;
  }
};

}  // namespace

int gelu_tanh_fusion(PassContext& ctx) {
  Graph& g = ctx.graph;
  const float kSqrt2OverPi = 0.7978845608f, kKappa = 0.044715f;
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& tanh = g.nodes[i];
    if (!is_onnx_op(&tanh, "Tanh") || !node_fusible(tanh, ctx.config)) continue;
    Match m{ctx, {i}};
    // Backwards: √(2/π) · (x + κ · x³).
    const std::string* s = m.beside_constant(m.take(tanh.inputs[0], "Mul"), kSqrt2OverPi);
    const Node* add = s ? m.take(*s, "Add") : nullptr;
    if (!add) continue;
    std::string x;
    for (int k = 0; k < 2 && x.empty(); ++k) {
      const size_t mark = m.nodes.size();
      const std::string& cand = add->inputs[size_t(k)];
      const std::string* cube = m.beside_constant(m.take(add->inputs[size_t(1 - k)], "Mul"), kKappa);
      if (cube && m.cube_of(*cube, cand)) x = cand;
      else m.nodes.resize(mark);
    }
    if (x.empty()) continue;
    // Forwards: u = 1 + tanh, then the product with x and 0.5 in one of three groupings.
    const Node* one_plus = m.next(tanh.outputs[0], "Add");
    if (!one_plus || !m.beside_constant(one_plus, 1.f)) continue;
    const Node* m1 = m.next(one_plus->outputs[0], "Mul");
    const std::string* o = Match::beside(m1, one_plus->outputs[0]);
    if (!o) continue;
    std::string out;
    if (*o == x) {  // (x · u) · 0.5
      const Node* h = m.next(m1->outputs[0], "Mul");
      if (h && m.beside_constant(h, 0.5f) && *m.beside_constant(h, 0.5f) == m1->outputs[0]) out = h->outputs[0];
    } else if (const Node* hp = g.producer(*o); is_onnx_op(hp, "Mul") && hp->inputs.size() == 2) {  // (0.5 · x) · u
      const std::string* hx = m.beside_constant(hp, 0.5f);
      if (hx && *hx == x && m.take(*o, "Mul")) out = m1->outputs[0];
    } else if (constant_near(ctx, *o, 0.5f)) {  // (0.5 · u) · x
      const Node* m2 = m.next(m1->outputs[0], "Mul");
      const std::string* xo = Match::beside(m2, m1->outputs[0]);
      if (xo && *xo == x) out = m2->outputs[0];
    }
    if (out.empty()) continue;
    Node gelu = fusebench_node(tanh.name + "_GeluTanh", "GeluTanh", {x}, {out});
    ctx.log.push_back("  gelu-tanh-fusion: " + std::to_string(m.nodes.size()) + " nodes around '" + tanh.name + "' → GeluTanh");
    replace_nodes(g, m.nodes, std::move(gelu));
    ++fused;
    i = size_t(-1);  // indices moved: rescan from the start
  }
  return fused;
}

}  // namespace fb
