// BatchNorm folding: an inference-mode BatchNormalization right after a Conv with
// constant weights disappears into them.
//
//      x ─▶ Conv(W, b) ─▶ BatchNormalization(γ, β, μ, σ², ε)   ⇒   Conv(W', b')
//
//      s = γ / √(σ² + ε);   W'[m] = W[m] · s[m];   b' = (b − μ) · s + β
//
// A BatchNormalization that follows no convolution (a DenseNet's pre-activation BN-ReLU, or
// one whose Conv output is read elsewhere) becomes one per-channel multiply-add, with the
// Relu after it:
//
//      x ─▶ BatchNormalization(γ, β, μ, σ², ε) ─▶ Relu (optional)   ⇒   ChannelAffine(x, s, β − μ · s)[relu]
//
// which the conv-layout pass keeps channels-last between convolutions.
//
// Left alone: non-constant weights or BN parameters, BN in training mode, and (can_fuse)
// a Conv output something else also reads.
#include <cmath>

#include "engine/passes/matcher.h"
#include "engine/passes/passes.h"

namespace fb {

namespace {

const Tensor* constant(const Graph& g, const std::string& v) {
  auto it = g.initializers.find(v);
  return it == g.initializers.end() || it->second.dtype() != DType::Float32 ? nullptr : &it->second;
}

std::vector<FusionMatch> match_batchnorm(const PassContext& ctx, size_t root) {
  const Graph& g = ctx.graph;
  const Node& conv = g.nodes[root];
  if (!is_onnx_op(&conv, "Conv")) return {};
  const Tensor* w = constant(g, conv.inputs[1]);
  const bool has_bias = conv.inputs.size() > 2 && !conv.inputs[2].empty();
  const Tensor* b = has_bias ? constant(g, conv.inputs[2]) : nullptr;
  if (!w || (has_bias && !b)) return {};
  Matcher m(ctx, root);
  const Node* bn = m.reader(conv.outputs[0], {"BatchNormalization"});
  if (!bn || bn->inputs[0] != conv.outputs[0] || bn->attr_int("training_mode", 0) != 0 || bn->outputs.size() != 1) return {};
  const Tensor *gamma = constant(g, bn->inputs[1]), *beta = constant(g, bn->inputs[2]), *mean = constant(g, bn->inputs[3]),
               *var = constant(g, bn->inputs[4]);
  const int64_t c = w->shape()[0];
  if (!gamma || !beta || !mean || !var || gamma->numel() != c || beta->numel() != c || mean->numel() != c || var->numel() != c) return {};
  const float eps = bn->attr_float("epsilon", 1e-5f);
  Tensor w2 = w->clone();
  Tensor b2(DType::Float32, {c});
  const int64_t per = w->numel() / c;
  for (int64_t k = 0; k < c; ++k) {
    const float sc = gamma->data<float>()[k] / std::sqrt(var->data<float>()[k] + eps);
    for (int64_t j = 0; j < per; ++j) w2.data<float>()[k * per + j] *= sc;
    const float b0 = b ? b->data<float>()[k] : 0.f;
    b2.data<float>()[k] = (b0 - mean->data<float>()[k]) * sc + beta->data<float>()[k];
  }
  Node folded = conv;
  const std::string wname = g.unique_value_name(conv.name + ".folded_weight");
  const std::string bname = g.unique_value_name(conv.name + ".folded_bias");
  folded.inputs = {conv.inputs[0], wname, bname};
  folded.outputs = {bn->outputs[0]};
  FusionMatch match = m.match(std::move(folded), "  batchnorm-folding: '" + bn->name + "' into '" + conv.name + "'");
  match.initializers = {{wname, std::move(w2)}, {bname, std::move(b2)}};
  return {std::move(match)};
}

std::vector<FusionMatch> match_standalone_batchnorm(const PassContext& ctx, size_t root) {
  const Graph& g = ctx.graph;
  const Node& bn = g.nodes[root];
  if (!is_onnx_op(&bn, "BatchNormalization") || bn.attr_int("training_mode", 0) != 0 || bn.outputs.size() != 1 ||
      bn.inputs.size() != 5)
    return {};
  const ValueInfo& x = g.value(bn.inputs[0]);
  if (x.dtype != DType::Float32 || x.shape.size() < 2) return {};
  const int64_t c = x.shape[1];
  const Tensor *gamma = constant(g, bn.inputs[1]), *beta = constant(g, bn.inputs[2]), *mean = constant(g, bn.inputs[3]),
               *var = constant(g, bn.inputs[4]);
  if (!gamma || !beta || !mean || !var || gamma->numel() != c || beta->numel() != c || mean->numel() != c || var->numel() != c) return {};
  const float eps = bn.attr_float("epsilon", 1e-5f);
  Tensor scale(DType::Float32, {c}), shift(DType::Float32, {c});
  for (int64_t k = 0; k < c; ++k) {
    scale.data<float>()[k] = gamma->data<float>()[k] / std::sqrt(var->data<float>()[k] + eps);
    shift.data<float>()[k] = beta->data<float>()[k] - mean->data<float>()[k] * scale.data<float>()[k];
  }
  const std::string sname = g.unique_value_name(bn.name + ".scale"), bname = g.unique_value_name(bn.name + ".shift");
  auto form = [&](const Matcher& at, const std::string& out, bool relu) {
    Node affine = fusebench_node(bn.name + "_ChannelAffine", "ChannelAffine", {bn.inputs[0], sname, bname}, {out});
    if (relu) affine.attrs["activation"] = Attribute{std::string("relu")};
    FusionMatch match = at.match(std::move(affine), "  batchnorm-folding: '" + bn.name + "'" + (relu ? " and its Relu" : "") +
                                                        " → ChannelAffine");
    match.initializers = {{sname, scale.clone()}, {bname, shift.clone()}};
    return match;
  };
  Matcher m(ctx, root);
  std::vector<FusionMatch> forms;
  Matcher with_relu = m;
  if (const Node* relu = with_relu.reader(bn.outputs[0], {"Relu"})) forms.push_back(form(with_relu, relu->outputs[0], true));
  forms.push_back(form(m, bn.outputs[0], false));
  return forms;
}

}  // namespace

int batchnorm_folding(PassContext& ctx) {
  const int folded = run_fusion_rule(ctx, match_batchnorm) + run_fusion_rule(ctx, match_standalone_batchnorm);
  remove_unread_initializers(ctx.graph);  // the BatchNorms' parameters and the unfolded weights
  return folded;
}

}  // namespace fb
