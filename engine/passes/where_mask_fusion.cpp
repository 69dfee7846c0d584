// A masked softmax written with Where, as Hugging Face exports causal attention:
//
//   Where(cond, scores, fill) ─▶ Softmax(last axis)   ⇒   Add(scores, mask) ─▶ Softmax
//
// cond a constant bool (after constant folding: the causal triangle), fill a constant
// scalar at most -1e30 (finfo(float32).min, -inf), mask = cond ? 0 : fill as a float
// constant of cond's shape, left-padded to the scores' rank (Where(cond, fill, scores),
// the inverted form, gives cond ? fill : 0). The additive form is what attention fusion
// and elementwise chains take. Exact for the softmax: a kept score is unchanged (x + 0),
// and a masked one is exp(fill + x - max) = 0 either way, for any score below 1e29 in
// size; a row masked everywhere is uniform in both forms. Only a Where whose one reader is
// that Softmax is rewritten, since elsewhere fill + x is not fill.
#include <cmath>

#include "engine/passes/matcher.h"
#include "engine/passes/passes.h"

namespace fb {

namespace {

constexpr float kMaskedBelow = -1e30f;

std::vector<FusionMatch> match_where_mask(const PassContext& ctx, size_t root) {
  const Graph& g = ctx.graph;
  const Node& w = g.nodes[root];
  if (!is_onnx_op(&w, "Where") || w.inputs.size() != 3 || w.outputs.size() != 1) return {};
  const int reader = single_consumer(g, w.outputs[0]);
  if (reader < 0 || g.is_graph_output(w.outputs[0])) return {};
  const Node& sm = g.nodes[size_t(reader)];
  const Shape& out = g.value(w.outputs[0]).shape;
  const int64_t rank = int64_t(out.size());
  if (!is_onnx_op(&sm, "Softmax") || sm.inputs[0] != w.outputs[0] || rank == 0) return {};
  const int64_t axis = sm.attr_int("axis", -1);
  if ((sm.opset != 0 && sm.opset < 13) || (axis != -1 && axis != rank - 1)) return {};
  auto cond = g.initializers.find(w.inputs[0]);
  if (cond == g.initializers.end() || cond->second.dtype() != DType::Bool) return {};
  const Shape& cs = cond->second.shape();
  // Which side is the scores (the output's own shape, float32) and which the fill.
  float fill = 0;
  int scores_side = 0;
  for (int side : {1, 2}) {
    const ValueInfo& s = g.value(w.inputs[size_t(side)]);
    if (s.dtype == DType::Float32 && s.shape == out && constant_scalar(ctx, w.inputs[size_t(3 - side)], &fill) &&
        fill <= kMaskedBelow)
      scores_side = side;
  }
  if (!scores_side || int64_t(cs.size()) > rank) return {};
  Shape ms(size_t(rank - int64_t(cs.size())), 1);
  ms.insert(ms.end(), cs.begin(), cs.end());
  for (size_t i = 0; i < ms.size(); ++i)
    if (ms[i] != 1 && ms[i] != out[i]) return {};
  Tensor mask(DType::Float32, ms);
  const bool* c = cond->second.data<bool>();
  for (int64_t i = 0; i < mask.numel(); ++i) mask.data<float>()[i] = (c[i] == (scores_side == 1)) ? 0.f : fill;
  Matcher m(ctx, root);
  Node add = w;
  add.op_type = "Add";
  add.attrs.clear();
  const std::string mask_name = g.unique_value_name(w.name + "/additive_mask");
  add.inputs = {w.inputs[size_t(scores_side)], mask_name};
  FusionMatch match = m.match(std::move(add), "  where-mask: '" + w.name + "' → Add of a " + shape_str(ms) + " mask before '" +
                                                  sm.name + "'");
  match.initializers = {{mask_name, std::move(mask)}};
  return {std::move(match)};
}

}  // namespace

int where_mask_fusion(PassContext& ctx) {
  const int n = run_fusion_rule(ctx, match_where_mask);
  remove_unread_initializers(ctx.graph);  // the bool conditions
  return n;
}

}  // namespace fb
