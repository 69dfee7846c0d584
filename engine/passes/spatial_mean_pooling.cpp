// A ReduceMean over every spatial axis of an [N, C, H, W] (or 3-D) tensor is a GlobalAveragePool:
// PyTorch exports `x.mean((2, 3))` (MNASNet's and many timm models' heads, timm's
// squeeze-and-excitation gates with keepdim=True) as ReduceMean, which has no channels-last
// form and runs as a general reduction (MNASNet's 1280x7x7 head: 0.12 ms at 2 GB/s). As a
// GlobalAveragePool it reads the last convolution's channels-last output as it lies, and an
// SE gate around it stays channels-last (conv-layout).
//
//      ReduceMean(x, axes=[2..], keepdims=1)   ⇒   GlobalAveragePool(x)
//      ReduceMean(x, axes=[2..], keepdims=0)   ⇒   GlobalAveragePool(x) ─▶ Flatten(axis=1)
#include <algorithm>

#include "engine/passes/passes.h"

namespace fb {

namespace {

// n averages a float [N, C, d...] tensor of rank 4 or 5 over exactly the spatial axes. Not
// rank 3: a mean over the last axis of [N, C, L] is also LayerNorm's over [B, S, H].
bool spatial_mean(const PassContext& ctx, const Node& n) {
  if (!is_onnx_op(&n, "ReduceMean") || n.inputs.empty() || n.outputs.size() != 1 || !node_fusible(n, ctx.config)) return false;
  const ValueInfo& x = ctx.graph.value(n.inputs[0]);
  const int64_t rank = int64_t(x.shape.size());
  if (x.dtype != DType::Float32 || rank < 4 || rank > 5) return false;
  std::vector<int64_t> axes;
  if (n.opset != 0 && n.opset >= 18) {
    const Tensor* a = n.inputs.size() > 1 && !n.inputs[1].empty() ? constant_value(ctx, n.inputs[1]) : nullptr;
    if (!a || a->dtype() != DType::Int64) return false;
    axes = a->as_int64_vector();
  } else {
    axes = n.attr_ints("axes", {});
  }
  for (int64_t& a : axes) a = a < 0 ? a + rank : a;
  std::sort(axes.begin(), axes.end());
  std::vector<int64_t> spatial;
  for (int64_t d = 2; d < rank; ++d) spatial.push_back(d);
  return axes == spatial;
}

}  // namespace

int spatial_mean_pooling(PassContext& ctx) {
  Graph& g = ctx.graph;
  g.compact();
  std::vector<Node> nodes;
  nodes.reserve(g.nodes.size());
  int rewrites = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (!spatial_mean(ctx, n)) {
      nodes.push_back(n);
      continue;
    }
    Node pool = n;
    pool.op_type = "GlobalAveragePool";
    pool.attrs.clear();
    pool.inputs = {n.inputs[0]};
    const bool keepdims = n.attr_int("keepdims", 1) != 0;
    if (keepdims) {
      nodes.push_back(std::move(pool));
    } else {
      const ValueInfo& x = g.value(n.inputs[0]);
      Shape pooled_shape = x.shape;
      std::fill(pooled_shape.begin() + 2, pooled_shape.end(), 1);
      const std::string pooled = g.unique_value_name(n.outputs[0] + "_pooled");
      g.values[pooled] = ValueInfo{DType::Float32, pooled_shape, true};
      pool.outputs = {pooled};
      Node flatten = n;
      flatten.name = n.name + "_Flatten";
      flatten.op_type = "Flatten";
      flatten.attrs = {{"axis", Attribute{int64_t(1)}}};
      flatten.inputs = {pooled};
      nodes.push_back(std::move(pool));
      nodes.push_back(std::move(flatten));
    }
    ctx.log.push_back("  spatial-mean-pooling: '" + n.name + "' (ReduceMean over the spatial axes) → GlobalAveragePool" +
                      (keepdims ? "" : " + Flatten"));
    ++rewrites;
  }
  if (rewrites) {
    g.nodes = std::move(nodes);
    g.nodes_changed();
  }
  return rewrites;
}

}  // namespace fb
