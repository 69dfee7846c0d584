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
// and any intermediate that something outside the pattern also reads.
#include <algorithm>

#include "engine/passes/passes.h"

namespace fb {

namespace {

bool reduces_last_axis(const PassContext& ctx, const Node& n) {
  if (n.op_type != "ReduceMean" || !n.domain.empty() || n.attr_int("keepdims", 1) != 1) return false;
  std::vector<int64_t> axes = n.attr_ints("axes");
  if (n.inputs.size() > 1 && !n.inputs[1].empty()) {
    auto it = ctx.graph.initializers.find(n.inputs[1]);
    if (it == ctx.graph.initializers.end()) return false;
    axes = it->second.as_int64_vector();
  }
  const int64_t rank = int64_t(ctx.graph.value(n.inputs[0]).shape.size());
  return axes.size() == 1 && (axes[0] == -1 || axes[0] == rank - 1);
}

const Node* node_at(const Graph& g, int i) { return i < 0 ? nullptr : &g.nodes[size_t(i)]; }
bool is_op(const Node* n, const char* op) { return n && n->domain.empty() && n->op_type == op; }

// The other input of a binary node, given one of them.
const std::string* other_input(const Node& n, const std::string& v) {
  if (n.inputs.size() != 2) return nullptr;
  if (n.inputs[0] == v) return &n.inputs[1];
  if (n.inputs[1] == v) return &n.inputs[0];
  return nullptr;
}

bool is_vector_constant(const Graph& g, const std::string& v, int64_t h) {
  auto it = g.initializers.find(v);
  return it != g.initializers.end() && it->second.dtype() == DType::Float32 && it->second.numel() == h &&
         it->second.shape().back() == h;
}

}  // namespace

int layernorm_fusion(PassContext& ctx) {
  Graph& g = ctx.graph;
  const BuildConfig& cfg = ctx.config;
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& mean = g.nodes[i];
    if (!reduces_last_axis(ctx, mean) || !node_fusible(mean, cfg)) continue;
    const std::string x = mean.inputs[0];
    if (g.value(x).dtype != DType::Float32) continue;
    const int64_t h = g.value(x).shape.back();
    if (!value_fusible(g, mean.outputs[0], cfg)) continue;
    const int sub_i = single_consumer(g, mean.outputs[0]);
    const Node* sub = node_at(g, sub_i);
    if (!is_op(sub, "Sub") || sub->inputs[0] != x || sub->inputs[1] != mean.outputs[0]) continue;
    const std::string d = sub->outputs[0];
    auto d_users = g.consumers(d);
    // d has two readers inside the pattern, so value_fusible (one reader) cannot vouch for
    // it: check here that it is neither a graph output nor a partition point.
    const auto& pp = cfg.partition_points;
    if (d_users.size() != 2 || g.is_graph_output(d) || std::find(pp.begin(), pp.end(), d) != pp.end()) continue;
    const Node* pow = &g.nodes[d_users[0]];
    const Node* div = &g.nodes[d_users[1]];
    if (is_op(pow, "Div")) std::swap(pow, div);
    float exponent = 0, eps = 0;
    if (!is_op(pow, "Pow") || pow->inputs[0] != d || !constant_scalar(ctx, pow->inputs[1], &exponent) || exponent != 2.f) continue;
    if (!is_op(div, "Div") || div->inputs[0] != d) continue;
    if (!value_fusible(g, pow->outputs[0], cfg)) continue;
    const int var_i = single_consumer(g, pow->outputs[0]);
    if (var_i < 0 || !reduces_last_axis(ctx, g.nodes[var_i]) || !value_fusible(g, g.nodes[var_i].outputs[0], cfg)) continue;
    const int add_i = single_consumer(g, g.nodes[var_i].outputs[0]);
    const Node* add = node_at(g, add_i);
    const std::string* eps_v = add && is_op(add, "Add") ? other_input(*add, g.nodes[var_i].outputs[0]) : nullptr;
    if (!eps_v || !constant_scalar(ctx, *eps_v, &eps) || !value_fusible(g, add->outputs[0], cfg)) continue;
    const int sqrt_i = single_consumer(g, add->outputs[0]);
    const Node* sq = node_at(g, sqrt_i);
    if (!is_op(sq, "Sqrt") || !value_fusible(g, sq->outputs[0], cfg) || div->inputs[1] != sq->outputs[0]) continue;

    std::vector<size_t> idx{i, size_t(sub_i), d_users[0], d_users[1], size_t(var_i), size_t(add_i), size_t(sqrt_i)};
    std::string out = div->outputs[0], gamma, beta;
    // Optional affine tail: Mul by gamma, then Add beta.
    if (value_fusible(g, out, cfg)) {
      const int mul_i = single_consumer(g, out);
      const Node* mul = node_at(g, mul_i);
      const std::string* gv = is_op(mul, "Mul") ? other_input(*mul, out) : nullptr;
      if (gv && is_vector_constant(g, *gv, h) && node_fusible(*mul, cfg)) {
        gamma = *gv;
        idx.push_back(size_t(mul_i));
        out = mul->outputs[0];
        if (value_fusible(g, out, cfg)) {
          const int badd_i = single_consumer(g, out);
          const Node* badd = node_at(g, badd_i);
          const std::string* bv = is_op(badd, "Add") ? other_input(*badd, out) : nullptr;
          if (bv && is_vector_constant(g, *bv, h) && node_fusible(*badd, cfg)) {
            beta = *bv;
            idx.push_back(size_t(badd_i));
            out = badd->outputs[0];
          }
        }
      }
    }
    bool all_fusible = true;
    for (size_t k : idx) all_fusible = all_fusible && node_fusible(g.nodes[k], cfg);
    if (!all_fusible) continue;

    Node ln = fusebench_node(mean.name + "_LayerNorm", "LayerNorm", {x, gamma, beta}, {out});
    ln.attrs["epsilon"] = Attribute{eps};
    ctx.log.push_back("  layernorm-fusion: " + std::to_string(idx.size()) + " nodes from '" + mean.name + "' → LayerNorm");
    replace_nodes(g, idx, std::move(ln));
    ++fused;
    i = size_t(-1);  // indices moved: rescan from the start (graphs are small)
  }
  return fused;
}

}  // namespace fb
