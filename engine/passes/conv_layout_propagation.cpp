// Channels-last activations between convolutions. oneDNN's fastest fp32 convolutions
// (brgconv) read and write NHWC; a plain NCHW tensor costs every convolution a reorder in
// and a reorder out, passes over memory as large as the activation itself. A value that
// a convolution (or a 2-D MaxPool) writes and only convolutions (as input X or as the
// summed residual) and 2-D MaxPools read is kept channels-last, so reorders remain only
// where plain tensors enter or leave a run of convolutions. A MaxPool reads and writes one
// layout: both its tensors stay channels-last, or neither does (resnet's stem pool sits
// between the first convolution and the residual blocks). Shapes stay logical (NCHW); the
// layout is an attribute of the layers.
//
//      Conv ─▶ v ─▶ MaxPool ─▶ w ─▶ Conv, Conv(residual w)
//        ⇒   FusedConv[y_layout] ─▶ v ─▶ MaxPool[x_layout, y_layout] ─▶ w ─▶ FusedConv[x_layout], FusedConv[residual_layout]
//
// Left alone: graph outputs, partition points (both may be looked at), values a subgraph
// body reads, values any other op reads, and layers excluded from fusion.
#include <set>

#include "engine/backend/cpu/conv.h"
#include "engine/passes/passes.h"

namespace fb {

namespace {

bool conv_node(const Node& n) { return is_onnx_op(&n, "Conv") || (n.domain == "fusebench" && n.op_type == "FusedConv"); }

// A MaxPool oneDNN runs channels-last (engine/backend/cpu/cpu_layers.cpp): 2-D, one output,
// no dilation, row-major indices not asked for.
bool channels_last_pool(const Graph& g, const Node& n) {
  if (!is_onnx_op(&n, "MaxPool") || n.outputs.size() != 1 || n.attr_int("storage_order", 0) != 0 || !n.has_attr("kernel_shape"))
    return false;
  if (g.value(n.inputs[0]).shape.size() != 4 || g.value(n.inputs[0]).dtype != DType::Float32) return false;
  for (int64_t d : n.attr_ints("dilations", {})) if (d != 1) return false;
  return true;
}

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
  auto layout_node = [&](const Node& n) { return (conv_node(n) || channels_last_pool(g, n)) && node_fusible(n, ctx.config); };
  // The values that may stay channels-last: a layout node writes them, layout nodes read them.
  std::set<std::string> kept;
  for (const Node& n : g.nodes) {
    if (!layout_node(n)) continue;
    const std::string& v = n.outputs[0];
    if (g.is_graph_output(v) || body_reads.count(v) || is_partition_point(ctx.config, v)) continue;
    const std::vector<size_t> readers = g.consumers(v);
    bool only_layout_nodes = !readers.empty();
    for (size_t r : readers) {
      const Node& c = g.nodes[r];
      only_layout_nodes = only_layout_nodes && layout_node(c);
      for (size_t k = 0; k < c.inputs.size(); ++k)
        if (c.inputs[k] == v && k != 0 && !(k == 3 && conv_node(c) && conv_has_residual(c))) only_layout_nodes = false;
    }
    if (only_layout_nodes) kept.insert(v);
  }
  // A pool's input and output share a layout: drop both where only one qualified, until none disagrees.
  for (bool changed = true; changed;) {
    changed = false;
    for (const Node& n : g.nodes) {
      if (!channels_last_pool(g, n) || kept.count(n.inputs[0]) == kept.count(n.outputs[0])) continue;
      kept.erase(n.inputs[0]);
      kept.erase(n.outputs[0]);
      changed = true;
    }
  }
  int count = 0;
  for (Node& n : g.nodes) {  // in graph order, so the log reads as the model does
    if (!layout_node(n) || !kept.count(n.outputs[0])) continue;
    const std::string v = n.outputs[0];
    if (conv_node(n)) as_fused_conv(n);
    n.attrs["y_layout"] = Attribute{std::string(kChannelsLast)};
    if (!conv_node(n)) n.attrs["x_layout"] = Attribute{std::string(kChannelsLast)};  // a pool: both or neither
    const std::vector<size_t> readers = g.consumers(v);
    for (size_t r : readers) {
      Node& c = g.nodes[r];
      if (!conv_node(c)) continue;
      as_fused_conv(c);
      if (c.inputs[0] == v) c.attrs["x_layout"] = Attribute{std::string(kChannelsLast)};
      if (conv_has_residual(c) && c.inputs[3] == v) c.attrs["residual_layout"] = Attribute{std::string(kChannelsLast)};
    }
    ctx.log.push_back("  conv-layout: '" + v + "' stays channels-last from '" + n.name + "' into " + std::to_string(readers.size()) +
                      " layer(s)");
    ++count;
  }
  return count;
}

}  // namespace fb
