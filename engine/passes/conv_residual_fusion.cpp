// Residual Add (and the Relu after it) into the convolution that feeds it: oneDNN's sum
// post-op adds the other branch while the convolution's output is still in cache, then
// the activation runs, so the Add and the Relu stop being passes over memory.
//
//      x ─▶ Conv ─▶ Add(·, r) [─▶ Relu]    ⇒   FusedConv(x, W, B, r)[sum(+relu)]
//
// r must already have the Add's output shape (the sum post-op does not broadcast). Left
// alone: a convolution that already has an activation (it would run before the sum), an
// Add whose other side broadcasts, and (can_fuse) a convolution output something else
// also reads.
#include "engine/passes/matcher.h"
#include "engine/passes/passes.h"

namespace fb {

namespace {

// A Conv, or a FusedConv with neither an activation nor a residual yet.
bool plain_conv(const Node& n) {
  if (is_onnx_op(&n, "Conv")) return true;
  return n.domain == "fusebench" && n.op_type == "FusedConv" && n.attr_string("activation", "").empty() &&
         (n.inputs.size() < 4 || n.inputs[3].empty());
}

std::vector<FusionMatch> match_conv_residual(const PassContext& ctx, size_t root) {
  const Graph& g = ctx.graph;
  const Node& add = g.nodes[root];
  if (!is_onnx_op(&add, "Add") || add.inputs.size() != 2) return {};
  const ValueInfo& out = g.value(add.outputs[0]);
  if (out.dtype != DType::Float32) return {};
  std::vector<FusionMatch> forms;  // per side: with the Relu, then without
  for (int side = 0; side < 2; ++side) {
    const std::string& conv_out = add.inputs[size_t(side)];
    const std::string& residual = add.inputs[size_t(1 - side)];
    const int conv_i = g.producer_index(conv_out);
    if (conv_out == residual || conv_i < 0 || !plain_conv(g.nodes[size_t(conv_i)]) || single_consumer(g, conv_out) != int(root) ||
        g.value(conv_out).shape != out.shape || g.value(residual).shape != out.shape || g.value(residual).dtype != DType::Float32)
      continue;
    const Node& conv = g.nodes[size_t(conv_i)];
    Node f = conv;
    f.op_type = "FusedConv";
    f.domain = "fusebench";
    f.inputs.resize(3);  // X, W, B ("" when the Conv has no bias)
    f.inputs.push_back(residual);
    f.outputs = add.outputs;
    Matcher m(ctx, root);
    m.take(size_t(conv_i));
    Matcher with_relu = m;
    if (const Node* relu = with_relu.reader(add.outputs[0], {"Relu"})) {
      Node fr = f;
      fr.attrs["activation"] = Attribute{std::string("relu")};
      fr.outputs = relu->outputs;
      forms.push_back(with_relu.match(std::move(fr), "  conv-residual-fusion: Conv+sum+relu at '" + conv.name + "' → FusedConv"));
    }
    forms.push_back(m.match(std::move(f), "  conv-residual-fusion: Conv+sum at '" + conv.name + "' → FusedConv"));
  }
  return forms;
}

}  // namespace

int conv_residual_fusion(PassContext& ctx) { return run_fusion_rule(ctx, match_conv_residual); }

}  // namespace fb
