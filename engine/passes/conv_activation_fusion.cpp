// Conv + activation fusion: the activation runs as a oneDNN post-op on the convolution's
// output while it is still in cache.
//
//      x ─▶ Conv ─▶ Relu | Clip(0, 6) | Sigmoid | HardSwish        ⇒   FusedConv[act]
//      x ─▶ Conv ─┬─▶ Sigmoid ─▶ Mul(conv, ·)   (SiLU)            ⇒   FusedConv[silu]
//                 └──────────────────┘
//
// Clip is taken only with constant bounds. Left alone: a Conv output read elsewhere.
#include <algorithm>

#include "engine/passes/passes.h"

namespace fb {

namespace {
bool is_op(const Node& n, const char* op) { return n.domain.empty() && n.op_type == op; }
}  // namespace

int conv_activation_fusion(PassContext& ctx) {
  Graph& g = ctx.graph;
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& conv = g.nodes[i];
    if (!is_op(conv, "Conv") || !node_fusible(conv, ctx.config) || g.is_graph_output(conv.outputs[0])) continue;
    const std::string out = conv.outputs[0];
    const std::vector<size_t> users = g.consumers(out);
    Node f = conv;
    f.op_type = "FusedConv";
    f.domain = "fusebench";
    std::vector<size_t> idx{i};
    std::string act;
    if (users.size() == 1 && value_fusible(g, out, ctx.config)) {
      const Node& a = g.nodes[users[0]];
      if (!node_fusible(a, ctx.config)) continue;
      float lo = 0, hi = 0;
      if (is_op(a, "Relu")) act = "relu";
      else if (is_op(a, "Sigmoid")) act = "sigmoid";
      else if (is_op(a, "HardSwish")) act = "hardswish";
      else if (is_op(a, "Clip") && a.inputs.size() == 3 && constant_scalar(ctx, a.inputs[1], &lo) && constant_scalar(ctx, a.inputs[2], &hi)) {
        act = "clip";
        f.attrs["activation_min"] = Attribute{lo};
        f.attrs["activation_max"] = Attribute{hi};
      }
      if (act.empty()) continue;
      idx.push_back(users[0]);
      f.outputs = {a.outputs[0]};
    } else if (users.size() == 2 && !std::count(ctx.config.partition_points.begin(), ctx.config.partition_points.end(), out)) {
      // SiLU: Sigmoid(c) and Mul(c, sigmoid) are the only readers of c.
      size_t s = users[0], m = users[1];
      if (is_op(g.nodes[m], "Sigmoid")) std::swap(s, m);
      const Node& sig = g.nodes[s];
      const Node& mul = g.nodes[m];
      if (!is_op(sig, "Sigmoid") || !is_op(mul, "Mul") || !value_fusible(g, sig.outputs[0], ctx.config) ||
          single_consumer(g, sig.outputs[0]) != int(m) || !node_fusible(sig, ctx.config) || !node_fusible(mul, ctx.config))
        continue;
      const bool operands = (mul.inputs[0] == out && mul.inputs[1] == sig.outputs[0]) || (mul.inputs[1] == out && mul.inputs[0] == sig.outputs[0]);
      if (!operands) continue;
      act = "silu";
      idx.push_back(s);
      idx.push_back(m);
      f.outputs = {mul.outputs[0]};
    } else {
      continue;
    }
    f.attrs["activation"] = Attribute{act};
    ctx.log.push_back("  conv-activation-fusion: Conv+" + act + " at '" + conv.name + "' → FusedConv");
    replace_nodes(g, idx, std::move(f));
    ++fused;
    --i;  // slot i now holds the next node (unsigned wrap at 0 is fine: ++i follows)
  }
  return fused;
}

}  // namespace fb
