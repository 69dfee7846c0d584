// Channels-last activations between convolutions. oneDNN's fastest fp32 convolutions
// (brgconv) read and write NHWC; a plain NCHW tensor costs every convolution a reorder in
// and a reorder out, passes over memory as large as the activation itself. A value that
// a layout writer produces and only layout readers read is kept channels-last, so reorders
// remain only where plain tensors enter or leave a run of convolutions.
//
//   writers: convolutions, 2-D MaxPools, channel gates
//   readers: convolutions (as input X or as the summed residual), 2-D MaxPools, channel
//            gates (their gated operand), GlobalAveragePool
//
// A channel gate is squeeze-and-excitation's Mul: x [N,C,H,W] times s [N,C,1,1] (or
// [1,C,1,1]). A MaxPool and a gate read and write one layout: both tensors stay
// channels-last, or neither does (resnet's stem pool sits between the first convolution
// and the residual blocks). GlobalAveragePool's [N,C,1,1] output is the same bytes in
// either layout and stays plain, so the excitation's 1x1 convolutions need no reorder.
// Shapes stay logical (NCHW); the layout is an attribute of the layers.
//
//      Conv ─▶ v ─▶ MaxPool ─▶ w ─▶ Conv, Conv(residual w)
//        ⇒   FusedConv[y_layout] ─▶ v ─▶ MaxPool[x_layout, y_layout] ─▶ w ─▶ FusedConv[x_layout], FusedConv[residual_layout]
//
//      Conv ─▶ v ─▶ GlobalAveragePool ─▶ … ─▶ s ─▶ Mul(s, v) ─▶ w ─▶ Conv        (EfficientNet's MBConv)
//        ⇒   FusedConv[y_layout] ─▶ v ─▶ GlobalAveragePool[x_layout] ─▶ … ─▶ Mul[x_layout, y_layout] ─▶ w ─▶ FusedConv[x_layout]
//
// Left alone: graph outputs, partition points (both may be looked at), values a subgraph
// body reads, values any other op reads, and layers excluded from fusion.
#include <set>

#include "engine/backend/cpu/channels_last_layers.h"
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

bool float_4d(const Graph& g, const std::string& v) {
  return g.value(v).shape.size() == 4 && g.value(v).dtype == DType::Float32;
}

bool channels_last_global_pool(const Graph& g, const Node& n) {
  return is_onnx_op(&n, "GlobalAveragePool") && n.outputs.size() == 1 && float_4d(g, n.inputs[0]);
}

// The gated operand of a channel-gate Mul; -1 for any other node.
int gate_operand(const Graph& g, const Node& n) {
  if (!is_onnx_op(&n, "Mul") || n.inputs.size() != 2 || n.outputs.size() != 1) return -1;
  if (!float_4d(g, n.inputs[0]) || !float_4d(g, n.inputs[1]) || !float_4d(g, n.outputs[0])) return -1;
  return channel_gate_operand(g.value(n.inputs[0]).shape, g.value(n.inputs[1]).shape, g.value(n.outputs[0]).shape);
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
  auto writer = [&](const Node& n) {
    return (conv_node(n) || channels_last_pool(g, n) || gate_operand(g, n) >= 0) && node_fusible(n, ctx.config);
  };
  // Whether input k of `c` may be read channels-last.
  auto reads_channels_last = [&](const Node& c, size_t k) {
    if (!node_fusible(c, ctx.config)) return false;
    if (conv_node(c)) return k == 0 || (k == 3 && conv_has_residual(c));
    if (channels_last_pool(g, c) || channels_last_global_pool(g, c)) return k == 0;
    return gate_operand(g, c) == int(k);
  };
  // The values that may stay channels-last: a writer writes them, readers read them.
  std::set<std::string> kept;
  for (const Node& n : g.nodes) {
    if (!writer(n)) continue;
    const std::string& v = n.outputs[0];
    if (g.is_graph_output(v) || body_reads.count(v) || is_partition_point(ctx.config, v)) continue;
    const std::vector<size_t> readers = g.consumers(v);
    bool only_readers = !readers.empty();
    for (size_t r : readers) {
      const Node& c = g.nodes[r];
      for (size_t k = 0; k < c.inputs.size(); ++k)
        if (c.inputs[k] == v && !reads_channels_last(c, k)) only_readers = false;
    }
    if (only_readers) kept.insert(v);
  }
  // A pool's or a gate's input and output share a layout: drop both where only one
  // qualified, until none disagrees.
  for (bool changed = true; changed;) {
    changed = false;
    for (const Node& n : g.nodes) {
      const int x = channels_last_pool(g, n) ? 0 : gate_operand(g, n);
      if (x < 0 || kept.count(n.inputs[size_t(x)]) == kept.count(n.outputs[0])) continue;
      kept.erase(n.inputs[size_t(x)]);
      kept.erase(n.outputs[0]);
      changed = true;
    }
  }
  int count = 0;
  for (Node& n : g.nodes) {  // in graph order, so the log reads as the model does
    if (!writer(n) || !kept.count(n.outputs[0])) continue;
    const std::string v = n.outputs[0];
    if (conv_node(n)) as_fused_conv(n);
    n.attrs["y_layout"] = Attribute{std::string(kChannelsLast)};
    if (!conv_node(n)) n.attrs["x_layout"] = Attribute{std::string(kChannelsLast)};  // a pool or a gate: both or neither
    const std::vector<size_t> readers = g.consumers(v);
    for (size_t r : readers) {
      Node& c = g.nodes[r];
      if (channels_last_global_pool(g, c)) c.attrs["x_layout"] = Attribute{std::string(kChannelsLast)};
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
