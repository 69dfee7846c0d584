// GroupNorm fusion: nn.GroupNorm as PyTorch exports it before opset 18, with the SiLU a
// diffusion model's ResBlock puts after it (or the GELU of wav2vec2's feature encoder), in
// one pass over memory instead of four layers.
//
//      x [N,C,...] ─▶ Reshape([N, G, -1]) ─▶ InstanceNormalization(s [G], b [G]) ─▶ Reshape(x's shape)
//                  ─▶ Mul(·, gamma)        optional: constant, C elements along the channel axis
//                  ─▶ Add(·, beta)         optional: likewise
//                  ─▶ v · Sigmoid(v)       optional: SiLU, or fusebench.Gelu (gelu-fusion runs first)
//   ⇒  fusebench.GroupNorm(x, s, b, gamma, beta)[groups = G, epsilon, activation]
//
// Left alone: a Reshape that does not split the channels into G whole groups, a Mul or Add
// by anything but a per-channel constant, and (can_fuse) any intermediate read outside the
// pattern, a graph output or a partition point.
#include "engine/passes/matcher.h"
#include "engine/passes/passes.h"

namespace fb {

namespace {

// Whether v is a float32 constant holding one value per channel of a tensor shaped `x`:
// C elements on the channel axis once right-aligned, 1 on every other ([C,1,1], [1,C,1,1]).
bool per_channel_constant(const Graph& g, const std::string& v, const Shape& x) {
  auto it = g.initializers.find(v);
  if (it == g.initializers.end() || it->second.dtype() != DType::Float32) return false;
  const Shape& s = it->second.shape();
  if (s.size() > x.size() || it->second.numel() != x[1]) return false;
  for (size_t k = 0; k < s.size(); ++k) {
    const size_t axis = x.size() - s.size() + k;
    if (s[k] != (axis == 1 ? x[1] : 1)) return false;
  }
  return true;
}

std::vector<FusionMatch> match_group_norm(const PassContext& ctx, size_t root) {
  const Graph& g = ctx.graph;
  const Node& norm = g.nodes[root];
  if (!is_onnx_op(&norm, "InstanceNormalization") || norm.inputs.size() != 3) return {};
  Matcher m(ctx, root);
  const Node* split = m.producer(norm.inputs[0], {"Reshape"});
  if (!split) return {};
  const std::string x = split->inputs[0];
  const Shape& xs = g.value(x).shape;
  const Shape& grouped = g.value(norm.inputs[0]).shape;
  if (g.value(x).dtype != DType::Float32 || xs.size() < 3 || grouped.size() != 3 || grouped[0] != xs[0]) return {};
  const int64_t groups = grouped[1];
  if (groups < 1 || xs[1] % groups != 0 || grouped[2] * groups != shape_numel(xs) / std::max<int64_t>(xs[0], 1)) return {};
  for (size_t i = 1; i <= 2; ++i)
    if (!g.is_initializer(norm.inputs[i])) return {};
  const Node* merge = m.reader(norm.outputs[0], {"Reshape"});
  if (!merge || g.value(merge->outputs[0]).shape != xs) return {};

  auto form = [&](const Matcher& at, const std::string& out, const std::string& gamma, const std::string& beta,
                  const std::string& act) {
    Node gn = fusebench_node(norm.name + "_GroupNorm", "GroupNorm", {x, norm.inputs[1], norm.inputs[2], gamma, beta}, {out});
    gn.attrs["groups"] = Attribute{groups};
    gn.attrs["epsilon"] = Attribute{norm.attr_float("epsilon", 1e-5f)};
    if (!act.empty()) gn.attrs["activation"] = Attribute{act};
    return at.match(std::move(gn), "  group-norm-fusion: " + std::to_string(at.size()) + " nodes from '" + norm.name +
                                       "' → GroupNorm" + (act.empty() ? "" : "+" + act));
  };
  // The forms from the longest: each step optional, in this order; each with its activation, then without.
  struct Step {
    Matcher at;
    std::string out, gamma, beta;
  };
  std::vector<Step> steps{{m, merge->outputs[0], "", ""}};
  for (const char* op : {"Mul", "Add"}) {
    Step next = steps.back();
    const Node* n = next.at.reader(next.out, {op, 2});
    const std::string* c = Matcher::beside(n, next.out);
    if (!c || !per_channel_constant(g, *c, xs)) continue;  // an Add may follow without a Mul
    (op[0] == 'M' ? next.gamma : next.beta) = *c;
    next.out = n->outputs[0];
    steps.push_back(std::move(next));
  }
  std::vector<FusionMatch> forms;
  for (auto s = steps.rbegin(); s != steps.rend(); ++s) {
    Matcher with_act = s->at;
    if (const Node* mul = with_act.silu(s->out)) forms.push_back(form(with_act, mul->outputs[0], s->gamma, s->beta, "silu"));
    with_act = s->at;
    if (const Node* gelu = with_act.reader(s->out, {"Gelu", -1, "fusebench"}))
      forms.push_back(form(with_act, gelu->outputs[0], s->gamma, s->beta, "gelu"));
    forms.push_back(form(s->at, s->out, s->gamma, s->beta, ""));
  }
  return forms;
}

}  // namespace

int group_norm_fusion(PassContext& ctx) { return run_fusion_rule(ctx, match_group_norm); }

}  // namespace fb
