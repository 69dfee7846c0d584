// LayerNorm fusion: the decomposition PyTorch exports for nn.LayerNorm, over the last axis.
//
//      x ──┬──────────────┐
//          │         ReduceMean(axes=[-1])
//          └────────▶ Sub ◀┘ = d ──┬────────────────┐
//                          Pow(d, 2)               │
//                          ReduceMean(axes=[-1])   │
//                          Add(·, eps)             │
//                          Sqrt                    │
//                          Div(d, ·) ◀─────────────┘
//                          Mul(·, gamma)      optional, constant [H]
//                          Add(·, beta)       optional, constant [H]
//
// becomes one fusebench.LayerNorm(x, gamma, beta) with epsilon. Left alone: reductions
// over other axes, keepdims=0, a Pow exponent other than 2, non-constant eps/gamma/beta,
// and (can_fuse) any intermediate read outside the pattern, an output or partition point.
//
// ONNX's own LayerNormalization (opset 17 exports) over the last axis, with only Y read,
// becomes the same layer: the op table's kernel is generic over axes and ran a BERT's
// embedding LayerNorm three times slower than the engine's.
//
// RMSNorm (LLaMA, T5), the same without the mean:
//
//      x ──┬─▶ Pow(x, 2) ─▶ ReduceMean(axes=[-1]) ─▶ Add(·, eps) ─▶ Sqrt = r
//          └─▶ Div(x, r)   or   Mul(x, Reciprocal(r))   or   Mul(x, Div(1, r))
//              Mul(·, gamma)      optional, constant [H]
//
// becomes fusebench.LayerNorm(x, gamma) with rms = 1 (a LLaMA RMSNorm was five layers and
// a quarter of the engine's non-matmul time).
#include "engine/passes/matcher.h"
#include "engine/passes/passes.h"

namespace fb {

namespace {

bool reduces_last_axis(const PassContext& ctx, const Node* n) {
  if (!is_onnx_op(n, "ReduceMean") || n->attr_int("keepdims", 1) != 1) return false;
  std::vector<int64_t> axes = n->attr_ints("axes");
  if (n->inputs.size() > 1 && !n->inputs[1].empty()) {
    auto it = ctx.graph.initializers.find(n->inputs[1]);
    if (it == ctx.graph.initializers.end()) return false;
    axes = it->second.as_int64_vector();
  }
  const int64_t rank = int64_t(ctx.graph.value(n->inputs[0]).shape.size());
  return axes.size() == 1 && (axes[0] == -1 || axes[0] == rank - 1);
}

bool is_vector_constant(const Graph& g, const std::string& v, int64_t h) {
  auto it = g.initializers.find(v);
  return it != g.initializers.end() && it->second.dtype() == DType::Float32 && it->second.numel() == h &&
         it->second.shape().back() == h;
}

std::vector<FusionMatch> match_layernorm(const PassContext& ctx, size_t root) {
  const Graph& g = ctx.graph;
  Matcher m(ctx, root);
  const Node& mean = g.nodes[root];
  if (!reduces_last_axis(ctx, &mean)) return {};
  const std::string x = mean.inputs[0];
  if (g.value(x).dtype != DType::Float32) return {};
  const int64_t h = g.value(x).shape.back();
  const Node* sub = m.reader(mean.outputs[0], {"Sub", 2});
  if (!sub || sub->inputs[0] != x || sub->inputs[1] != mean.outputs[0]) return {};
  const std::string d = sub->outputs[0];
  const std::vector<size_t>& d_users = g.consumers(d);
  if (d_users.size() != 2) return {};
  size_t pow_i = d_users[0], div_i = d_users[1];
  if (is_onnx_op(&g.nodes[pow_i], "Div")) std::swap(pow_i, div_i);
  const Node* pow = &g.nodes[pow_i];
  const Node* div = &g.nodes[div_i];
  float exponent = 0, eps = 0;
  if (!is_onnx_op(pow, "Pow") || pow->inputs[0] != d || !constant_scalar(ctx, pow->inputs[1], &exponent) || exponent != 2.f) return {};
  if (!is_onnx_op(div, "Div") || div->inputs[0] != d) return {};
  m.take(pow_i);
  m.take(div_i);
  const Node* var = m.reader(pow->outputs[0], {"ReduceMean"});
  if (!reduces_last_axis(ctx, var)) return {};
  const Node* add = m.reader(var->outputs[0], {"Add", 2});
  const std::string* eps_v = Matcher::beside(add, var->outputs[0]);
  if (!eps_v || !constant_scalar(ctx, *eps_v, &eps)) return {};
  const Node* sq = m.reader(add->outputs[0], {"Sqrt"});
  if (!sq || div->inputs[1] != sq->outputs[0]) return {};

  // The longest form first: with gamma and beta, with gamma, bare.
  auto form = [&](const Matcher& at, const std::string& out, const std::string& gamma, const std::string& beta) {
    Node ln = fusebench_node(mean.name + "_LayerNorm", "LayerNorm", {x, gamma, beta}, {out});
    ln.attrs["epsilon"] = Attribute{eps};
    return at.match(std::move(ln), "  layernorm-fusion: " + std::to_string(at.size()) + " nodes from '" + mean.name + "' → LayerNorm");
  };
  std::vector<FusionMatch> forms;
  Matcher with_gamma = m;
  const Node* mul = with_gamma.reader(div->outputs[0], {"Mul", 2});
  const std::string* gv = Matcher::beside(mul, div->outputs[0]);
  if (gv && is_vector_constant(g, *gv, h)) {
    Matcher with_beta = with_gamma;
    const Node* badd = with_beta.reader(mul->outputs[0], {"Add", 2});
    const std::string* bv = Matcher::beside(badd, mul->outputs[0]);
    if (bv && is_vector_constant(g, *bv, h)) forms.push_back(form(with_beta, badd->outputs[0], *gv, *bv));
    forms.push_back(form(with_gamma, mul->outputs[0], *gv, ""));
  }
  forms.push_back(form(m, div->outputs[0], "", ""));
  return forms;
}

std::vector<FusionMatch> match_onnx_layernorm(const PassContext& ctx, size_t root) {
  const Graph& g = ctx.graph;
  const Node& n = g.nodes[root];
  if (!is_onnx_op(&n, "LayerNormalization") || g.value(n.inputs[0]).dtype != DType::Float32) return {};
  const Shape& shape = g.value(n.inputs[0]).shape;
  std::string gamma, beta;
  if (shape.empty() || !onnx_last_axis_layernorm(g, n, shape.back(), &gamma, &beta)) return {};
  Node ln = fusebench_node(n.name + "_LayerNorm", "LayerNorm", {n.inputs[0], gamma, beta}, {n.outputs[0]});
  ln.attrs["epsilon"] = Attribute{n.attr_float("epsilon", 1e-5f)};
  Matcher m(ctx, root);
  return {m.match(std::move(ln), "  layernorm-fusion: '" + n.name + "' (LayerNormalization) → LayerNorm")};
}

// x / r as the exports write it (r = Sqrt(mean + eps)): Div(x, r), or x times r's
// reciprocal (Reciprocal(r), or Div(1, r)); the node whose output is x / r, taken.
const Node* divide_by(const PassContext& ctx, Matcher& m, const std::string& x, const Node* sqrt) {
  const Graph& g = ctx.graph;
  const std::string& r = sqrt->outputs[0];
  const std::vector<size_t>& users = g.consumers(r);
  if (users.size() != 1) return nullptr;
  const Node* n = &g.nodes[users[0]];
  if (is_onnx_op(n, "Div") && n->inputs.size() == 2 && n->inputs[0] == x && n->inputs[1] == r) {
    m.take(users[0]);
    return n;
  }
  float one = 0;
  const bool reciprocal = is_onnx_op(n, "Reciprocal") ||
                          (is_onnx_op(n, "Div") && n->inputs.size() == 2 && n->inputs[1] == r &&
                           constant_scalar(ctx, n->inputs[0], &one) && one == 1.f);
  if (!reciprocal) return nullptr;
  m.take(users[0]);
  const Node* mul = m.reader(n->outputs[0], {"Mul", 2});
  const std::string* other = Matcher::beside(mul, n->outputs[0]);
  return other && *other == x ? mul : nullptr;
}

std::vector<FusionMatch> match_rmsnorm(const PassContext& ctx, size_t root) {
  const Graph& g = ctx.graph;
  Matcher m(ctx, root);
  const Node& pow = g.nodes[root];
  float exponent = 0, eps = 0;
  if (!is_onnx_op(&pow, "Pow") || pow.inputs.size() != 2 || !constant_scalar(ctx, pow.inputs[1], &exponent) || exponent != 2.f)
    return {};
  const std::string x = pow.inputs[0];
  if (g.value(x).dtype != DType::Float32 || g.value(x).shape.empty()) return {};
  const int64_t h = g.value(x).shape.back();
  const Node* mean = m.reader(pow.outputs[0], {"ReduceMean"});
  if (!mean || !reduces_last_axis(ctx, mean)) return {};
  const Node* add = m.reader(mean->outputs[0], {"Add", 2});
  const std::string* eps_v = Matcher::beside(add, mean->outputs[0]);
  if (!eps_v || !constant_scalar(ctx, *eps_v, &eps)) return {};
  const Node* sq = m.reader(add->outputs[0], {"Sqrt"});
  if (!sq) return {};
  const Node* normed = divide_by(ctx, m, x, sq);
  if (!normed) return {};

  auto form = [&](const Matcher& at, const std::string& out, const std::string& gamma) {
    Node ln = fusebench_node(pow.name + "_RMSNorm", "LayerNorm", {x, gamma, ""}, {out});
    ln.attrs["epsilon"] = Attribute{eps};
    ln.attrs["rms"] = Attribute{int64_t(1)};
    return at.match(std::move(ln), "  layernorm-fusion: " + std::to_string(at.size()) + " nodes from '" + pow.name + "' → LayerNorm (rms)");
  };
  std::vector<FusionMatch> forms;
  Matcher with_gamma = m;
  const Node* mul = with_gamma.reader(normed->outputs[0], {"Mul", 2});
  const std::string* gv = Matcher::beside(mul, normed->outputs[0]);
  if (gv && is_vector_constant(g, *gv, h)) forms.push_back(form(with_gamma, mul->outputs[0], *gv));
  forms.push_back(form(m, normed->outputs[0], ""));
  return forms;
}

}  // namespace

bool onnx_last_axis_layernorm(const Graph& g, const Node& n, int64_t h, std::string* gamma, std::string* beta) {
  if (!is_onnx_op(&n, "LayerNormalization")) return false;
  const int64_t rank = int64_t(g.value(n.inputs[0]).shape.size());
  const int64_t axis = n.attr_int("axis", -1);
  if (axis != -1 && axis != rank - 1) return false;
  for (size_t k = 1; k < n.outputs.size(); ++k)  // Mean and InvStdDev unread
    if (!n.outputs[k].empty() && (g.is_graph_output(n.outputs[k]) || !g.consumers(n.outputs[k]).empty())) return false;
  *gamma = n.inputs.size() > 1 ? n.inputs[1] : "";
  *beta = n.inputs.size() > 2 ? n.inputs[2] : "";
  for (const std::string* v : {gamma, beta})
    if (!v->empty() && shape_numel(g.value(*v).shape) != h) return false;  // a broadcast one-element scale
  return !gamma->empty();
}

int layernorm_fusion(PassContext& ctx) {
  return run_fusion_rule(ctx, match_layernorm) + run_fusion_rule(ctx, match_onnx_layernorm) +
         run_fusion_rule(ctx, match_rmsnorm);
}

}  // namespace fb
