// Channels-last activations between convolutions. oneDNN's fastest fp32 convolutions
// (brgconv) read and write NHWC; a plain NCHW tensor costs every convolution a reorder in
// and a reorder out, passes over memory as large as the activation itself. A value that
// a layout writer produces and only layout readers read is kept channels-last, so reorders
// remain only where plain tensors enter or leave a run of convolutions.
//
//   writers: convolutions, 2-D transposed convolutions and the layout-tied ops below
//   readers: convolutions (as input X or as the summed residual), 2-D transposed
//            convolutions (a U-Net's upsampling), GlobalAveragePool, a Transpose that
//            moves channels last, or a Reshape [N, C, H, W] → [N, C, H·W] read only by
//            a Transpose to [N, H·W, C] (a ViT's patch embedding) — each then one
//            fusebench.ChannelsLastView, a view: the bytes are already in its output's
//            order — and the layout-tied ops
//
// A layout-tied op reads and writes its 4-D tensors in one layout, all channels-last or
// all plain: 2-D MaxPool and AveragePool; the channel gate (squeeze-and-excitation's Mul
// of x [N,C,H,W] by s [N,C,1,1] or [1,C,1,1], its gated operand); Concat and Split over
// channels (YOLO's C2f blocks, ShuffleNet's units); ShuffleNet's ChannelShuffle; Add of two
// tensors of the output's shape (a residual sum no convolution could take); Resize of
// height and width (a feature pyramid's upsampling); a BatchNormalization(-Relu) that
// follows no convolution, as fusebench.ChannelAffine (a DenseNet's pre-activation); and
// fusebench.GroupNorm over 3-D to 5-D tensors. resnet's stem pool sits between the first
// convolution and the residual blocks; GlobalAveragePool's [N,C,1,1] output is the same
// bytes in either layout and stays plain, so the excitation's 1x1 convolutions need no
// reorder.
// Shapes stay logical (NCHW); the layout is an attribute of the layers.
//
//      Conv ─▶ v ─▶ MaxPool ─▶ w ─▶ Conv, Conv(residual w)
//        ⇒   FusedConv[y_layout] ─▶ v ─▶ MaxPool[x_layout, y_layout] ─▶ w ─▶ FusedConv[x_layout], FusedConv[residual_layout]
//
//      Conv ─▶ v ─▶ GlobalAveragePool ─▶ … ─▶ s ─▶ Mul(s, v) ─▶ w ─▶ Conv        (EfficientNet's MBConv)
//        ⇒   FusedConv[y_layout] ─▶ v ─▶ GlobalAveragePool[x_layout] ─▶ … ─▶ Mul[x_layout, y_layout] ─▶ w ─▶ FusedConv[x_layout]
//
// Left alone: graph outputs, partition points (both may be looked at), values a subgraph
// body reads, values any other op reads, layers excluded from fusion, and every node the
// build's backend does not run channels-last (Backend::runs_channels_last, asked per node:
// the CPU runs them all; the CUDA backend all but ConvTranspose).
// Tensor types are the model's here: precision lowering runs after this
// pass, so an fp16 or bf16 build is laid out as its float32 model.
#include <algorithm>
#include <map>
#include <set>

#include "engine/backend/backend.h"
#include "engine/ops/fused_conv.h"
#include "engine/ops/resize.h"
#include "engine/passes/passes.h"

namespace fb {

namespace {


bool float_4d(const Graph& g, const std::string& v) {
  return g.value(v).shape.size() == 4 && g.value(v).dtype == DType::Float32;
}

// A 2-D ConvTranspose (engine/backend/cpu/cpu_layers.cpp's DeconvLayer) whose output is
// the one the operation yields (no output_shape beyond it).
bool channels_last_deconv(const Graph& g, const Node& n) {
  return is_onnx_op(&n, "ConvTranspose") && n.outputs.size() == 1 && float_4d(g, n.inputs[0]) && !n.has_attr("output_shape");
}

// A MaxPool (ours, engine/backend/cpu/channels_last_layers.cpp) or AveragePool (oneDNN's,
// cpu_layers.cpp) that runs channels-last: 2-D, one output, no dilation, row-major indices
// not asked for, and no ceil_mode overhang counted as padding.
bool channels_last_pool(const Graph& g, const Node& n) {
  const bool average = is_onnx_op(&n, "AveragePool");
  if ((!average && !is_onnx_op(&n, "MaxPool")) || n.outputs.size() != 1 || n.attr_int("storage_order", 0) != 0 ||
      !n.has_attr("kernel_shape"))
    return false;
  if (average && n.attr_int("count_include_pad", 0) != 0 && n.attr_int("ceil_mode", 0) != 0) return false;
  if (!float_4d(g, n.inputs[0])) return false;
  for (int64_t d : n.attr_ints("dilations", {})) if (d != 1) return false;
  return true;
}

// A Transpose that moves channels last, [N, C, d...] → [N, d..., C]: reading a
// channels-last tensor it is a view (an audio model's Conv1d stem hands its [N, C, T]
// features to a transformer as [N, T, C]; ConvNeXt's blocks permute their depthwise
// convolution's output for LayerNorm and the pointwise Linear layers).
bool channels_to_last_transpose(const Graph& g, const Node& n) {
  if (!is_onnx_op(&n, "Transpose") || n.outputs.size() != 1) return false;
  const ValueInfo& x = g.value(n.inputs[0]);
  const int64_t rank = int64_t(x.shape.size());
  if (rank < 3 || rank > 5 || x.dtype != DType::Float32) return false;
  std::vector<int64_t> want{0};
  for (int64_t d = 2; d < rank; ++d) want.push_back(d);
  want.push_back(1);
  return n.attr_ints("perm", {}) == want;
}

// A Reshape (node r) of a 4-D [N, C, H, W] to [N, C, H·W] whose one reader is a Transpose
// to [N, H·W, C] (a ViT's patch embedding hands its Conv's output to the encoder so), when
// the two may become one layer (can_fuse: neither excluded, one precision, the flattened
// tensor neither an output nor a partition point): the Transpose's index, or -1.
int spatial_flatten_to_last(const PassContext& ctx, size_t r, const std::set<std::string>& body_reads) {
  const Graph& g = ctx.graph;
  const Node& n = g.nodes[r];
  if (!is_onnx_op(&n, "Reshape") || n.outputs.size() != 1 || !float_4d(g, n.inputs[0])) return -1;
  const Shape& x = g.value(n.inputs[0]).shape;
  const std::string& flat = n.outputs[0];
  if (g.value(flat).shape != Shape{x[0], x[1], x[2] * x[3]} || body_reads.count(flat)) return -1;
  const int t = single_consumer(g, flat);
  if (t < 0) return -1;
  const Node& tr = g.nodes[size_t(t)];
  if (!is_onnx_op(&tr, "Transpose") || tr.attr_ints("perm", {}) != std::vector<int64_t>{0, 2, 1}) return -1;
  FusionMatch view{{r, size_t(t)}, Node{}, ""};
  view.fused.outputs = tr.outputs;
  return can_fuse(ctx, view) ? t : -1;
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

bool over_channels(const Node& n) {
  const int64_t axis = n.attr_int("axis", 0);
  return axis == 1 || axis == -3;
}

// A Resize whose constant scales or sizes resize height and width only
// (engine/backend/cpu/channels_last_layers.cpp runs it channels-last).
bool image_resize(const Graph& g, const Node& n) {
  if (!is_onnx_op(&n, "Resize") || (n.opset != 0 && n.opset < 11) || n.outputs.size() != 1) return false;
  std::vector<const Tensor*> inputs(n.inputs.size(), nullptr);
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    if (n.inputs[i].empty()) continue;
    if (!g.is_initializer(n.inputs[i])) return false;
    inputs[i] = &g.initializers.at(n.inputs[i]);
  }
  try {
    return resizes_height_and_width_only(resize_taps(n, g.value(n.inputs[0]).shape, inputs));
  } catch (const Error&) {
    return false;  // shape inference names the problem
  }
}

// A layout-tied op's 4-D inputs and outputs (indices), which share one layout; both empty
// for any other node.
struct Tied {
  std::vector<size_t> inputs, outputs;
  bool any() const { return !outputs.empty(); }
};

Tied layout_tied(const Graph& g, const Node& n) {
  // GroupNorm normalizes 1-D, 2-D and 3-D feature maps (wav2vec2's Conv1d encoder, a
  // diffusion U-Net's ResBlocks).
  if (n.domain == "fusebench" && n.op_type == "GroupNorm" && n.outputs.size() == 1) {
    const ValueInfo& x = g.value(n.inputs[0]);
    if (x.dtype == DType::Float32 && x.shape.size() >= 3 && x.shape.size() <= 5) return {{0}, {0}};
    return {};
  }
  auto all_float_4d = [&](const std::vector<std::string>& vs) {
    for (const std::string& v : vs)
      if (v.empty() || !float_4d(g, v)) return false;
    return !vs.empty();
  };
  if (n.outputs.empty() || !all_float_4d(n.outputs)) return {};
  const bool shuffle_or_affine = n.domain == "fusebench" && (n.op_type == "ChannelShuffle" || n.op_type == "ChannelAffine");
  if (shuffle_or_affine && float_4d(g, n.inputs[0])) return {{0}, {0}};
  if (!n.domain.empty()) return {};
  if (channels_last_pool(g, n) || image_resize(g, n)) return {{0}, {0}};
  if (const int x = gate_operand(g, n); x >= 0) return {{size_t(x)}, {0}};
  if (n.op_type == "Concat" && over_channels(n) && n.outputs.size() == 1 && all_float_4d(n.inputs)) {
    Tied t{{}, {0}};
    for (size_t i = 0; i < n.inputs.size(); ++i) t.inputs.push_back(i);
    return t;
  }
  if (n.op_type == "Split" && over_channels(n) && float_4d(g, n.inputs[0])) {
    Tied t{{0}, {}};
    for (size_t i = 0; i < n.outputs.size(); ++i) t.outputs.push_back(i);
    return t;
  }
  const Shape& out = g.value(n.outputs[0]).shape;
  if (n.op_type == "Add" && n.inputs.size() == 2 && all_float_4d(n.inputs) && g.value(n.inputs[0]).shape == out &&
      g.value(n.inputs[1]).shape == out)
    return {{0, 1}, {0}};
  return {};
}

// Conv becomes FusedConv (no activation: the same operation) so that it may carry layouts.
void as_fused_conv(Node& n) {
  n.op_type = "FusedConv";
  n.domain = "fusebench";
}

// The nodes (a Transpose, or a Reshape and its Transpose) become one view of channels-last
// v as the plain tensor the last of them writes.
void as_channels_last_view(Graph& g, std::vector<size_t> nodes, const std::string& v) {
  const Node& last = g.nodes[nodes.back()];
  Node view = fusebench_node(last.name, "ChannelsLastView", {v}, {last.outputs[0]});
  view.attrs["shape"] = Attribute{g.value(last.outputs[0]).shape};
  g.replace_nodes(std::move(nodes), std::move(view));
}

}  // namespace

int conv_layout_propagation(PassContext& ctx) {
  Graph& g = ctx.graph;
  // Whether the backend runs node n channels-last (no backend: the CPU's answer, all).
  const Precision build_precision = ctx.config.precision;
  std::map<std::string, int> runs_plain;  // op type -> candidates the backend declined, for the log
  auto backend_runs = [&](const Node& n) {
    if (!ctx.backend || ctx.backend->runs_channels_last(n, build_precision)) return true;
    ++runs_plain[n.op_type];
    return false;
  };
  std::vector<bool> can_run(g.nodes.size(), false);  // asked once per candidate
  std::set<std::string> body_reads;
  for (const Node& n : g.nodes) add_subgraph_reads(n, body_reads);
  std::vector<Tied> tied;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    const bool candidate = node_fusible(n, ctx.config) &&
                           (is_convolution(n) || channels_last_deconv(g, n) || channels_last_global_pool(g, n) ||
                            layout_tied(g, n).any());
    can_run[i] = candidate && backend_runs(n);
    tied.push_back(can_run[i] ? layout_tied(g, n) : Tied{});
  }
  // The values node i writes that may be channels-last.
  auto written = [&](size_t i) {
    const Node& n = g.nodes[i];
    std::vector<std::string> vs;
    if ((is_convolution(n) || channels_last_deconv(g, n)) && can_run[i]) vs.push_back(n.outputs[0]);
    for (size_t o : tied[i].outputs) vs.push_back(n.outputs[o]);
    return vs;
  };
  // Whether input k of node r may be read channels-last.
  auto reads_channels_last = [&](size_t r, size_t k) {
    const Node& c = g.nodes[r];
    if (!node_fusible(c, ctx.config)) return false;
    if (is_convolution(c)) return can_run[r] && (k == 0 || (k == 3 && conv_has_residual(c)));
    if (channels_last_global_pool(g, c) || channels_last_deconv(g, c)) return can_run[r] && k == 0;
    // Views of the channels-last bytes: no kernel, nothing to ask.
    if (channels_to_last_transpose(g, c) || spatial_flatten_to_last(ctx, r, body_reads) >= 0) return k == 0;
    return std::find(tied[r].inputs.begin(), tied[r].inputs.end(), k) != tied[r].inputs.end();
  };
  // The values that may stay channels-last: a writer writes them, readers read them.
  std::set<std::string> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const std::string& v : written(i)) {
      if (g.is_graph_output(v) || body_reads.count(v) || is_partition_point(ctx.config, v)) continue;
      const std::vector<size_t> readers = g.consumers(v);
      // A tied op's unread output (one half of a Split) has no reader to disagree.
      bool only_readers = !readers.empty() || tied[i].any();
      for (size_t r : readers)
        for (size_t k = 0; k < g.nodes[r].inputs.size(); ++k)
          if (g.nodes[r].inputs[k] == v && !reads_channels_last(r, k)) only_readers = false;
      if (only_readers) kept.insert(v);
    }
  // A tied op's values share a layout: drop them all where one did not qualify, until
  // none disagrees.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (!tied[i].any()) continue;
      const Node& n = g.nodes[i];
      std::vector<std::string> vs;
      for (size_t k : tied[i].inputs) vs.push_back(n.inputs[k]);
      for (size_t o : tied[i].outputs) vs.push_back(n.outputs[o]);
      size_t in_kept = 0;
      for (const std::string& v : vs) in_kept += kept.count(v);
      if (in_kept == 0 || in_kept == vs.size()) continue;
      for (const std::string& v : vs) kept.erase(v);
      changed = true;
    }
  }
  int count = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {  // in graph order, so the log reads as the model does
    for (const std::string& v : written(i)) {
      if (!kept.count(v)) continue;
      Node& n = g.nodes[i];
      if (is_convolution(n)) as_fused_conv(n);
      n.attrs["y_layout"] = Attribute{std::string(kChannelsLast)};
      if (tied[i].any()) n.attrs["x_layout"] = Attribute{std::string(kChannelsLast)};  // all or none
      const std::vector<size_t> readers = g.consumers(v);
      for (size_t r : readers) {
        Node& c = g.nodes[r];
        if ((channels_last_global_pool(g, c) || channels_last_deconv(g, c)) && c.inputs[0] == v)
          c.attrs["x_layout"] = Attribute{std::string(kChannelsLast)};
        if (c.inputs[0] == v && channels_to_last_transpose(g, c)) as_channels_last_view(g, {r}, v);
        if (const int t = c.inputs[0] == v ? spatial_flatten_to_last(ctx, r, body_reads) : -1; t >= 0)
          as_channels_last_view(g, {r, size_t(t)}, v);
        if (!is_convolution(c)) continue;
        as_fused_conv(c);
        if (c.inputs[0] == v) c.attrs["x_layout"] = Attribute{std::string(kChannelsLast)};
        if (conv_has_residual(c) && c.inputs[3] == v) c.attrs["residual_layout"] = Attribute{std::string(kChannelsLast)};
      }
      ctx.log.push_back("  conv-layout: '" + v + "' stays channels-last from '" + n.name + "' into " + std::to_string(readers.size()) +
                        " layer(s)");
      ++count;
    }
  }
  for (const auto& [op, nodes] : runs_plain)
    ctx.log.push_back("  conv-layout: the " + ctx.backend->name() + " backend runs " + std::to_string(nodes) + " " + op +
                      " layer(s) plain (NCHW) only");
  g.compact();  // the Reshapes views replaced
  remove_unread_initializers(g);  // and their shapes
  return count;
}

}  // namespace fb
