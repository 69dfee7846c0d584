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
// LayerNorm, where the fused layer will stand. s must not be a partition point.
#include <algorithm>

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

}  // namespace

int residual_layernorm_fusion(PassContext& ctx) {
  Graph& g = ctx.graph;
  const BuildConfig& cfg = ctx.config;
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& add = g.nodes[i];
    if (!is_onnx_op(&add, "Add") || add.inputs.size() != 2 || !node_fusible(add, cfg)) continue;
    const std::string& s = add.outputs[0];
    const ValueInfo& sv = g.value(s);
    if (sv.dtype != DType::Float32 || sv.shape.empty()) continue;
    if (g.value(add.inputs[0]).shape != sv.shape || g.value(add.inputs[1]).shape != sv.shape) continue;
    if (std::find(cfg.partition_points.begin(), cfg.partition_points.end(), s) != cfg.partition_points.end()) continue;
    // The LayerNorm reading s: the first reader that is one; every other reader comes after it.
    const std::vector<size_t> readers = g.consumers(s);
    size_t ln_i = g.nodes.size();
    std::string gamma, beta;
    for (size_t r : readers) {
      const Node& n = g.nodes[r];
      if (n.inputs[0] == s && node_fusible(n, cfg) && last_axis_layernorm(g, n, sv.shape.back(), &gamma, &beta)) {
        ln_i = r;
        break;
      }
    }
    if (ln_i == g.nodes.size()) continue;
    const bool others_later = std::all_of(readers.begin(), readers.end(), [&](size_t r) { return r >= ln_i; });
    if (!others_later) continue;
    const bool sum_needed = readers.size() > 1 || g.is_graph_output(s);
    const Node& ln = g.nodes[ln_i];
    Node f = fusebench_node(ln.name + "_AddLayerNorm", "AddLayerNorm", {add.inputs[0], add.inputs[1], gamma, beta},
                            {ln.outputs[0]});
    if (sum_needed) f.outputs.push_back(s);
    f.attrs["epsilon"] = Attribute{ln.attr_float("epsilon", 1e-5f)};
    ctx.log.push_back("  residual-layernorm-fusion: '" + add.name + "' + '" + ln.name + "' → AddLayerNorm" +
                      (sum_needed ? " (the sum is read on: second output)" : ""));
    replace_nodes(g, {i, ln_i}, std::move(f));
    ++fused;
    --i;  // slot i now holds the next node (unsigned wrap at 0 is fine: ++i follows)
  }
  return fused;
}

}  // namespace fb
