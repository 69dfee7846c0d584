// BatchNorm folding: an inference-mode BatchNormalization right after a Conv with
// constant weights disappears into them.
//
//      x ─▶ Conv(W, b) ─▶ BatchNormalization(γ, β, μ, σ², ε)   ⇒   Conv(W', b')
//
//      s = γ / √(σ² + ε);   W'[m] = W[m] · s[m];   b' = (b − μ) · s + β
//
// Left alone: a Conv output something else also reads, non-constant weights or BN
// parameters, and BN in training mode.
#include <cmath>

#include "engine/passes/passes.h"

namespace fb {

namespace {
const Tensor* constant(const Graph& g, const std::string& v) {
  auto it = g.initializers.find(v);
  return it == g.initializers.end() || it->second.dtype() != DType::Float32 ? nullptr : &it->second;
}
}  // namespace

int batchnorm_folding(PassContext& ctx) {
  Graph& g = ctx.graph;
  int folded = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& conv = g.nodes[i];
    if (!conv.domain.empty() || conv.op_type != "Conv" || !node_fusible(conv, ctx.config)) continue;
    const Tensor* w = constant(g, conv.inputs[1]);
    const bool has_bias = conv.inputs.size() > 2 && !conv.inputs[2].empty();
    const Tensor* b = has_bias ? constant(g, conv.inputs[2]) : nullptr;
    if (!w || (has_bias && !b) || !value_fusible(g, conv.outputs[0], ctx.config)) continue;
    const int bn_i = single_consumer(g, conv.outputs[0]);
    const Node& bn = g.nodes[size_t(bn_i)];
    if (!bn.domain.empty() || bn.op_type != "BatchNormalization" || bn.inputs[0] != conv.outputs[0] ||
        bn.attr_int("training_mode", 0) != 0 || bn.outputs.size() != 1 || !node_fusible(bn, ctx.config))
      continue;
    const Tensor *gamma = constant(g, bn.inputs[1]), *beta = constant(g, bn.inputs[2]), *mean = constant(g, bn.inputs[3]),
                 *var = constant(g, bn.inputs[4]);
    const int64_t m = w->shape()[0];
    if (!gamma || !beta || !mean || !var || gamma->numel() != m || beta->numel() != m || mean->numel() != m || var->numel() != m)
      continue;
    const float eps = bn.attr_float("epsilon", 1e-5f);
    Tensor w2 = w->clone();
    Tensor b2(DType::Float32, {m});
    const int64_t per = w->numel() / m;
    for (int64_t k = 0; k < m; ++k) {
      const float sc = gamma->data<float>()[k] / std::sqrt(var->data<float>()[k] + eps);
      for (int64_t j = 0; j < per; ++j) w2.data<float>()[k * per + j] *= sc;
      const float b0 = b ? b->data<float>()[k] : 0.f;
      b2.data<float>()[k] = (b0 - mean->data<float>()[k]) * sc + beta->data<float>()[k];
    }
    Node folded_conv = conv;
    const std::string wname = g.unique_value_name(conv.name + ".folded_weight");
    const std::string bname = g.unique_value_name(conv.name + ".folded_bias");
    g.initializers[wname] = w2;
    g.values[wname] = ValueInfo{DType::Float32, w2.shape(), true};
    g.initializers[bname] = b2;
    g.values[bname] = ValueInfo{DType::Float32, b2.shape(), true};
    folded_conv.inputs = {conv.inputs[0], wname, bname};
    folded_conv.outputs = {bn.outputs[0]};
    ctx.log.push_back("  batchnorm-folding: '" + bn.name + "' into '" + conv.name + "'");
    replace_nodes(g, {i, size_t(bn_i)}, std::move(folded_conv));
    ++folded;
    --i;  // slot i now holds the next node (unsigned wrap at 0 is fine: ++i follows)
  }
  remove_unread_initializers(g);  // the BatchNorms' parameters and the unfolded weights
  return folded;
}

}  // namespace fb
