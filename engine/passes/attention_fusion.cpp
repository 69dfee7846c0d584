// Scaled dot-product attention fusion (level aggressive), the multi-head form PyTorch
// exports for BERT and ViT self-attention:
//
//   q ─ Reshape[B,S,h,d] ─ Transpose(0,2,1,3) ─┐
//   k ─ Reshape[B,S,h,d] ─ Transpose(0,2,3,1) ─┴─ MatMul ─ Div(√d) | Mul(1/√d) ─ [Add mask] ─ Softmax(-1) ─┐
//   v ─ Reshape[B,S,h,d] ─ Transpose(0,2,1,3) ──────────────────────────────────────────── MatMul
//                                          ─ Transpose(0,2,1,3) ─ Reshape[B,S,H] ─▶ out
//
// becomes fusebench.Attention(q, k, v[, mask]) with heads and scale. Kᵀ may also come as
// Transpose(0,2,1,3) followed by Transpose(0,1,3,2). The optional additive mask is any float
// rank-4 value broadcasting to the scores ([B,1,1,S] padding masks, [1,1,S,S] causal ones).
// Left alone: other permutations, and any intermediate read outside the pattern.
#include "engine/passes/passes.h"

namespace fb {

namespace {

struct Matcher {
  PassContext& ctx;
  std::vector<size_t> nodes;  // matched node indices

  const Node* produced_by(const std::string& v, const char* op) {
    const Node* n = ctx.graph.producer(v);
    if (!n || !n->domain.empty() || n->op_type != op || !value_fusible(ctx.graph, v, ctx.config) ||
        !node_fusible(*n, ctx.config))
      return nullptr;
    nodes.push_back(size_t(n - ctx.graph.nodes.data()));
    return n;
  }
  bool perm_is(const Node& t, std::vector<int64_t> perm) { return t.attr_ints("perm") == perm; }

  // v = Transpose(Reshape(x, [B,S,h,d]), perm) → x, with h and d.
  const std::string* head_split(const std::string& v, std::vector<int64_t> perm, int64_t* h, int64_t* d) {
    const Node* t = produced_by(v, "Transpose");
    if (!t || !perm_is(*t, perm)) return nullptr;
    const Node* r = produced_by(t->inputs[0], "Reshape");
    if (!r) return nullptr;
    const Shape& in = ctx.graph.value(r->inputs[0]).shape;
    const Shape& out = ctx.graph.value(r->outputs[0]).shape;
    if (in.size() != 3 || out.size() != 4 || out[0] != in[0] || out[1] != in[1] || out[2] * out[3] != in[2]) return nullptr;
    *h = out[2];
    *d = out[3];
    return &r->inputs[0];
  }

  // Kᵀ as Transpose(0,2,3,1) of the split, or Transpose(0,1,3,2) of Transpose(0,2,1,3).
  const std::string* key_split(const std::string& v, int64_t* h, int64_t* d) {
    const size_t mark = nodes.size();
    if (const std::string* k = head_split(v, {0, 2, 3, 1}, h, d)) return k;
    nodes.resize(mark);
    const Node* t = produced_by(v, "Transpose");
    if (!t || !perm_is(*t, {0, 1, 3, 2})) return nullptr;
    return head_split(t->inputs[0], {0, 2, 1, 3}, h, d);
  }
};

bool is_op(const Node& n, const char* op) { return n.domain.empty() && n.op_type == op; }

// A float rank-4 value whose every dim is 1 or the scores' own.
bool broadcasts_to_scores(const Graph& g, const std::string& v, const Shape& scores) {
  const ValueInfo& vi = g.value(v);
  if (vi.dtype != DType::Float32 || vi.shape.size() != 4) return false;
  for (size_t i = 0; i < 4; ++i)
    if (vi.shape[i] != 1 && vi.shape[i] != scores[i]) return false;
  return true;
}

}  // namespace

int attention_fusion(PassContext& ctx) {
  Graph& g = ctx.graph;
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& sm = g.nodes[i];
    if (!is_op(sm, "Softmax") || !node_fusible(sm, ctx.config)) continue;
    const Shape& ss = g.value(sm.inputs[0]).shape;
    if (ss.size() != 4 || (sm.attr_int("axis", -1) != -1 && sm.attr_int("axis", -1) != 3)) continue;
    Matcher m{ctx, {i}};
    // Optional additive mask, then the scale.
    std::string scores = sm.inputs[0], mask;
    if (const Node* add = g.producer(scores); add && is_op(*add, "Add") && add->inputs.size() == 2) {
      for (int side = 0; side < 2 && mask.empty(); ++side) {
        const Node* p = g.producer(add->inputs[size_t(side)]);
        if (p && (is_op(*p, "Div") || is_op(*p, "Mul")) && broadcasts_to_scores(g, add->inputs[size_t(1 - side)], ss)) {
          mask = add->inputs[size_t(1 - side)];
          scores = add->inputs[size_t(side)];
        }
      }
      if (mask.empty() || g.value(add->outputs[0]).shape != ss || !m.produced_by(sm.inputs[0], "Add")) continue;
    }
    const Node* scale_node = g.producer(scores);
    float c = 0, scale = 0;
    if (!scale_node || scale_node->inputs.size() != 2 || !constant_scalar(ctx, scale_node->inputs[1], &c)) continue;
    if (is_op(*scale_node, "Div") && c != 0) scale = 1.f / c;
    else if (is_op(*scale_node, "Mul")) scale = c;
    else continue;
    if (!m.produced_by(scores, scale_node->op_type.c_str())) continue;
    const Node* qk = m.produced_by(scale_node->inputs[0], "MatMul");
    if (!qk) continue;
    int64_t hq, dq, hk, dk, hv, dv;
    const std::string* q = m.head_split(qk->inputs[0], {0, 2, 1, 3}, &hq, &dq);
    if (!q) continue;
    const std::string* k = m.key_split(qk->inputs[1], &hk, &dk);
    if (!k || hk != hq || dk != dq) continue;
    // Softmax → MatMul with V → merge heads.
    if (!value_fusible(g, sm.outputs[0], ctx.config)) continue;
    const int pv_i = single_consumer(g, sm.outputs[0]);
    const Node& pv = g.nodes[size_t(pv_i)];
    if (!is_op(pv, "MatMul") || pv.inputs[0] != sm.outputs[0] || !node_fusible(pv, ctx.config)) continue;
    m.nodes.push_back(size_t(pv_i));
    const std::string* v = m.head_split(pv.inputs[1], {0, 2, 1, 3}, &hv, &dv);
    if (!v || hv != hq || dv != dq) continue;
    if (!value_fusible(g, pv.outputs[0], ctx.config)) continue;
    const int t_i = single_consumer(g, pv.outputs[0]);
    const Node& t = g.nodes[size_t(t_i)];
    if (!is_op(t, "Transpose") || t.attr_ints("perm") != std::vector<int64_t>{0, 2, 1, 3} || !value_fusible(g, t.outputs[0], ctx.config))
      continue;
    const int r_i = single_consumer(g, t.outputs[0]);
    const Node& r = g.nodes[size_t(r_i)];
    const Shape& merged = g.value(r.outputs[0]).shape;
    if (!is_op(r, "Reshape") || merged != g.value(*q).shape || !node_fusible(t, ctx.config) || !node_fusible(r, ctx.config))
      continue;
    if (g.value(*k).shape != g.value(*v).shape) continue;
    m.nodes.push_back(size_t(t_i));
    m.nodes.push_back(size_t(r_i));

    Node att;
    att.name = qk->name + "_Attention";
    att.op_type = "Attention";
    att.domain = "fusebench";
    att.inputs = {*q, *k, *v};
    if (!mask.empty()) att.inputs.push_back(mask);
    att.outputs = {r.outputs[0]};
    att.attrs["heads"] = Attribute{hq};
    att.attrs["scale"] = Attribute{scale};
    ctx.log.push_back("  attention-fusion: " + std::to_string(m.nodes.size()) + " nodes from '" + qk->name + "' → Attention (" +
                      std::to_string(hq) + " heads of " + std::to_string(dq) + (mask.empty() ? "" : ", masked") + ")");
    replace_nodes(g, m.nodes, std::move(att));
    ++fused;
    i = size_t(-1);  // indices moved: rescan from the start
  }
  return fused;
}

}  // namespace fb
