// Residual Add (and the Relu after it) into the convolution that feeds it: oneDNN's sum
// post-op adds the other branch while the convolution's output is still in cache, then
// the activation runs, so the Add and the Relu stop being passes over memory.
//
//      x ─▶ Conv ─▶ Add(·, r) [─▶ Relu]    ⇒   FusedConv(x, W, B, r)[sum(+relu)]
//
// r must already have the Add's output shape (the sum post-op does not broadcast). Left
// alone: a convolution that already has an activation (it would run before the sum), a
// convolution output something else also reads, and an Add whose other side broadcasts.
#include <algorithm>

#include "engine/passes/passes.h"

namespace fb {

namespace {

// A Conv, or a FusedConv with neither an activation nor a residual yet.
bool plain_conv(const Node& n) {
  if (is_onnx_op(&n, "Conv")) return true;
  return n.domain == "fusebench" && n.op_type == "FusedConv" && n.attr_string("activation", "").empty() &&
         (n.inputs.size() < 4 || n.inputs[3].empty());
}

}  // namespace

int conv_residual_fusion(PassContext& ctx) {
  Graph& g = ctx.graph;
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& add = g.nodes[i];
    if (!is_onnx_op(&add, "Add") || add.inputs.size() != 2 || !node_fusible(add, ctx.config)) continue;
    const ValueInfo& out = g.value(add.outputs[0]);
    if (out.dtype != DType::Float32) continue;
    for (int side = 0; side < 2; ++side) {
      const std::string& conv_out = add.inputs[size_t(side)];
      const std::string& residual = add.inputs[size_t(1 - side)];
      const Node* conv = g.producer(conv_out);
      if (conv_out == residual || !conv || !plain_conv(*conv) || !node_fusible(*conv, ctx.config) ||
          !value_fusible(g, conv_out, ctx.config) || g.value(conv_out).shape != out.shape ||
          g.value(residual).shape != out.shape || g.value(residual).dtype != DType::Float32)
        continue;
      Node f = *conv;
      f.op_type = "FusedConv";
      f.domain = "fusebench";
      f.inputs.resize(3);  // X, W, B ("" when the Conv has no bias)
      f.inputs.push_back(residual);
      f.outputs = add.outputs;
      std::vector<size_t> idx{size_t(conv - g.nodes.data()), i};
      std::string what = "sum";
      const int relu = g.is_graph_output(add.outputs[0]) ? -1 : single_consumer(g, add.outputs[0]);
      if (relu >= 0 && is_onnx_op(&g.nodes[size_t(relu)], "Relu") && value_fusible(g, add.outputs[0], ctx.config) &&
          node_fusible(g.nodes[size_t(relu)], ctx.config)) {
        f.attrs["activation"] = Attribute{std::string("relu")};
        f.outputs = g.nodes[size_t(relu)].outputs;
        idx.push_back(size_t(relu));
        what += "+relu";
      }
      ctx.log.push_back("  conv-residual-fusion: Conv+" + what + " at '" + conv->name + "' → FusedConv");
      replace_nodes(g, idx, std::move(f));
      ++fused;
      i = std::min(idx[0], i) - 1;  // nodes moved; rescan from the conv's old slot (wraps, then ++)
      break;
    }
  }
  return fused;
}

}  // namespace fb
