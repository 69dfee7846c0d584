// Residual Add + LayerNorm fusion:
//
//   post-LN (BERT):  s = Add(x, r) ──▶ LayerNorm(s)               ⇒  AddLayerNorm(x, r) → y
//   pre-LN (ViT):    s = Add(x, r) ──┬▶ LayerNorm(s)              ⇒  AddLayerNorm(x, r) → y, s
//                                    └▶ the next residual Add
//
// The LayerNorm is the engine's fusebench.LayerNorm (from layernorm-fusion) or ONNX
// LayerNormalization over the last axis with only Y read and full-length scale/bias. Both
// Add inputs must have the output's shape (a residual, not a broadcast bias). When other
// layers read s, the fused layer writes it as a second output; they must come after the
// LayerNorm, where the fused layer will stand. s must not be a partition point (can_fuse:
// the fusion crosses it even though s is still written).
#include <algorithm>

#include "engine/passes/matcher.h"
#include "engine/passes/passes.h"

namespace fb {

namespace {

// The LayerNorm's (gamma, beta) when n normalizes the last axis with affine vectors of
// length h (either may be ""), or false.
bool last_axis_layernorm(const Graph& g, const Node& n, int64_t h, std::string* gamma, std::string* beta) {
  if (n.domain == "fusebench" && n.op_type == "LayerNorm") {
    *gamma = n.inputs.size() > 1 ? n.inputs[1] : "";
    *beta = n.inputs.size() > 2 ? n.inputs[2] : "";
    return true;
  }
  return onnx_last_axis_layernorm(g, n, h, gamma, beta);
}

std::vector<FusionMatch> match_residual_layernorm(const PassContext& ctx, size_t root) {
  const Graph& g = ctx.graph;
  const Node& add = g.nodes[root];
  if (!is_onnx_op(&add, "Add") || add.inputs.size() != 2) return {};
  const std::string& s = add.outputs[0];
  const ValueInfo& sv = g.value(s);
  if (sv.dtype != DType::Float32 || sv.shape.empty()) return {};
  if (g.value(add.inputs[0]).shape != sv.shape || g.value(add.inputs[1]).shape != sv.shape) return {};
  // The LayerNorm reading s: the first reader that is one; every other reader comes after it.
  const std::vector<size_t>& readers = g.consumers(s);
  size_t ln_i = g.nodes.size();
  std::string gamma, beta;
  for (size_t r : readers) {
    const Node& n = g.nodes[r];
    if (n.inputs[0] == s && last_axis_layernorm(g, n, sv.shape.back(), &gamma, &beta)) {
      ln_i = r;
      break;
    }
  }
  if (ln_i == g.nodes.size()) return {};
  if (!std::all_of(readers.begin(), readers.end(), [&](size_t r) { return r >= ln_i; })) return {};
  const bool sum_needed = readers.size() > 1 || g.is_graph_output(s);
  const Node& ln = g.nodes[ln_i];
  Node f = fusebench_node(ln.name + "_AddLayerNorm", "AddLayerNorm", {add.inputs[0], add.inputs[1], gamma, beta}, {ln.outputs[0]});
  if (sum_needed) f.outputs.push_back(s);
  f.attrs["epsilon"] = Attribute{ln.attr_float("epsilon", 1e-5f)};
  if (ln.attr_int("rms", 0)) f.attrs["rms"] = Attribute{int64_t(1)};  // an RMSNorm stays one
  Matcher m(ctx, root);
  m.take(ln_i);
  return {m.match(std::move(f), "  residual-layernorm-fusion: '" + add.name + "' + '" + ln.name + "' → AddLayerNorm" +
                                    (sum_needed ? " (the sum is read on: second output)" : ""))};
}

}  // namespace

int residual_layernorm_fusion(PassContext& ctx) { return run_fusion_rule(ctx, match_residual_layernorm); }

}  // namespace fb
