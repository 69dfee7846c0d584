// Channels-last activations between convolutions. oneDNN's fastest fp32 convolutions
// (brgconv) read and write NHWC; a plain NCHW tensor costs every convolution a reorder in
// and a reorder out, passes over memory as large as the activation itself. A value that
// a convolution writes and only convolutions read (as input X or as the summed residual)
// is kept channels-last, so reorders remain only where plain tensors enter or leave a run
// of convolutions. Shapes stay logical (NCHW); the layout is an attribute of the layers.
//
//      Conv ─▶ v ─▶ Conv, Conv(residual v)   ⇒   FusedConv[y_layout] ─▶ v ─▶ FusedConv[x_layout], FusedConv[residual_layout]
//
// Left alone: graph outputs, partition points (both may be looked at), values a subgraph
// body reads, values any other op reads, and convolutions excluded from fusion.
#include <set>

#include "engine/backend/cpu/conv.h"
#include "engine/passes/passes.h"

namespace fb {

namespace {

bool conv_node(const Node& n) { return is_onnx_op(&n, "Conv") || (n.domain == "fusebench" && n.op_type == "FusedConv"); }

// Conv becomes FusedConv (no activation: the same operation) so that it may carry layouts.
void as_fused_conv(Node& n) {
  n.op_type = "FusedConv";
  n.domain = "fusebench";
}

}  // namespace

int conv_layout_propagation(PassContext& ctx) {
  Graph& g = ctx.graph;
  std::set<std::string> body_reads;
  for (const Node& n : g.nodes) add_subgraph_reads(n, body_reads);
  int kept = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!conv_node(g.nodes[i]) || !node_fusible(g.nodes[i], ctx.config)) continue;
    const std::string v = g.nodes[i].outputs[0];
    if (g.is_graph_output(v) || body_reads.count(v) || is_partition_point(ctx.config, v)) continue;
    const std::vector<size_t> readers = g.consumers(v);
    bool only_convs = !readers.empty();
    for (size_t r : readers) {
      const Node& c = g.nodes[r];
      only_convs = only_convs && conv_node(c) && node_fusible(c, ctx.config);
      for (size_t k = 0; k < c.inputs.size(); ++k)
        if (c.inputs[k] == v && k != 0 && !(k == 3 && conv_has_residual(c))) only_convs = false;
    }
    if (!only_convs) continue;
    as_fused_conv(g.nodes[i]);
    g.nodes[i].attrs["y_layout"] = Attribute{std::string(kChannelsLast)};
    for (size_t r : readers) {
      Node& c = g.nodes[r];
      as_fused_conv(c);
      if (c.inputs[0] == v) c.attrs["x_layout"] = Attribute{std::string(kChannelsLast)};
      if (conv_has_residual(c) && c.inputs[3] == v) c.attrs["residual_layout"] = Attribute{std::string(kChannelsLast)};
    }
    ctx.log.push_back("  conv-layout: '" + v + "' stays channels-last from '" + g.nodes[i].name + "' into " +
                      std::to_string(readers.size()) + " convolution(s)");
    ++kept;
  }
  return kept;
}

}  // namespace fb
