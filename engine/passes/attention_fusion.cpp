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
// Left alone: other permutations, and (can_fuse) any intermediate read outside the pattern.
#include "engine/passes/matcher.h"
#include "engine/passes/passes.h"

namespace fb {

namespace {

const Op kTranspose{"Transpose"}, kReshape{"Reshape"}, kMatMul{"MatMul"};

bool perm_is(const Node& t, std::vector<int64_t> perm) { return t.attr_ints("perm") == perm; }

// v = Transpose(Reshape(x, [B,S,h,d]), perm) → x, with h and d.
const std::string* head_split(Matcher& m, const Graph& g, const std::string& v, std::vector<int64_t> perm, int64_t* h, int64_t* d) {
  const Node* t = m.producer(v, kTranspose);
  if (!t || !perm_is(*t, perm)) return nullptr;
  const Node* r = m.producer(t->inputs[0], kReshape);
  if (!r) return nullptr;
  const Shape& in = g.value(r->inputs[0]).shape;
  const Shape& out = g.value(r->outputs[0]).shape;
  if (in.size() != 3 || out.size() != 4 || out[0] != in[0] || out[1] != in[1] || out[2] * out[3] != in[2]) return nullptr;
  *h = out[2];
  *d = out[3];
  return &r->inputs[0];
}

// Kᵀ as Transpose(0,2,3,1) of the split, or Transpose(0,1,3,2) of Transpose(0,2,1,3).
const std::string* key_split(Matcher& m, const Graph& g, const std::string& v, int64_t* h, int64_t* d) {
  const size_t mark = m.mark();
  if (const std::string* k = head_split(m, g, v, {0, 2, 3, 1}, h, d)) return k;
  m.reset(mark);
  const Node* t = m.producer(v, kTranspose);
  if (!t || !perm_is(*t, {0, 1, 3, 2})) return nullptr;
  return head_split(m, g, t->inputs[0], {0, 2, 1, 3}, h, d);
}

// A float rank-4 value whose every dim is 1 or the scores' own.
bool broadcasts_to_scores(const Graph& g, const std::string& v, const Shape& scores) {
  const ValueInfo& vi = g.value(v);
  if (vi.dtype != DType::Float32 || vi.shape.size() != 4) return false;
  for (size_t i = 0; i < 4; ++i)
    if (vi.shape[i] != 1 && vi.shape[i] != scores[i]) return false;
  return true;
}

std::vector<FusionMatch> match_attention(const PassContext& ctx, size_t root) {
  const Graph& g = ctx.graph;
  const Node& sm = g.nodes[root];
  if (!is_onnx_op(&sm, "Softmax")) return {};
  const Shape& ss = g.value(sm.inputs[0]).shape;
  if (ss.size() != 4 || (sm.attr_int("axis", -1) != -1 && sm.attr_int("axis", -1) != 3)) return {};
  Matcher m(ctx, root);
  // Optional additive mask, then the scale.
  std::string scores = sm.inputs[0], mask;
  if (const Node* add = g.producer(scores); is_onnx_op(add, "Add") && add->inputs.size() == 2) {
    for (int side = 0; side < 2 && mask.empty(); ++side) {
      const Node* p = g.producer(add->inputs[size_t(side)]);
      if (p && (is_onnx_op(p, "Div") || is_onnx_op(p, "Mul")) && broadcasts_to_scores(g, add->inputs[size_t(1 - side)], ss)) {
        mask = add->inputs[size_t(1 - side)];
        scores = add->inputs[size_t(side)];
      }
    }
    if (mask.empty() || g.value(add->outputs[0]).shape != ss || !m.producer(sm.inputs[0], {"Add"})) return {};
  }
  const Node* scale_node = g.producer(scores);
  float c = 0, scale = 0;
  if (!scale_node || scale_node->inputs.size() != 2 || !constant_scalar(ctx, scale_node->inputs[1], &c)) return {};
  if (is_onnx_op(scale_node, "Div") && c != 0) scale = 1.f / c;
  else if (is_onnx_op(scale_node, "Mul")) scale = c;
  else return {};
  if (!m.producer(scores, {scale_node->op_type.c_str()})) return {};
  const Node* qk = m.producer(scale_node->inputs[0], kMatMul);
  if (!qk) return {};
  int64_t hq, dq, hk, dk, hv, dv;
  const std::string* q = head_split(m, g, qk->inputs[0], {0, 2, 1, 3}, &hq, &dq);
  if (!q) return {};
  const std::string* k = key_split(m, g, qk->inputs[1], &hk, &dk);
  if (!k || hk != hq || dk != dq) return {};
  // Softmax → MatMul with V → merge heads.
  const Node* pv = m.reader(sm.outputs[0], kMatMul);
  if (!pv || pv->inputs[0] != sm.outputs[0]) return {};
  const std::string* v = head_split(m, g, pv->inputs[1], {0, 2, 1, 3}, &hv, &dv);
  if (!v || hv != hq || dv != dq) return {};
  const Node* t = m.reader(pv->outputs[0], kTranspose);
  if (!t || !perm_is(*t, {0, 2, 1, 3})) return {};
  const Node* r = m.reader(t->outputs[0], kReshape);
  if (!r || g.value(r->outputs[0]).shape != g.value(*q).shape) return {};
  if (g.value(*k).shape != g.value(*v).shape) return {};

  Node att = fusebench_node(qk->name + "_Attention", "Attention", {*q, *k, *v}, {r->outputs[0]});
  if (!mask.empty()) att.inputs.push_back(mask);
  att.attrs["heads"] = Attribute{hq};
  att.attrs["scale"] = Attribute{scale};
  std::string log = "  attention-fusion: " + std::to_string(m.size()) + " nodes from '" + qk->name + "' → Attention (" +
                    std::to_string(hq) + " heads of " + std::to_string(dq) + (mask.empty() ? "" : ", masked") + ")";
  return {m.match(std::move(att), std::move(log))};
}

}  // namespace

int attention_fusion(PassContext& ctx) { return run_fusion_rule(ctx, match_attention); }

}  // namespace fb
