// A zero Pad over the spatial dimensions into the Conv or AveragePool that reads it: the
// window op pads as it reads, so the padded copy is never written. PyTorch exports
// AvgPool2d(padding=p, count_include_pad=True) this way (MaxViT's downsampling: a
// [1,64,112,112] Pad took 1.7 ms), and converters from TensorFlow write "SAME" padding as a
// Pad before the Conv. A Pad also has no channels-last form, so between two convolutions it
// kept both in plain layout.
//
//      x ─▶ Pad(0, spatial) ─▶ Conv            ⇒   Conv(x)[pads + Pad's]
//      x ─▶ Pad(0, spatial) ─▶ AveragePool     ⇒   AveragePool(x)[pads + Pad's, count_include_pad]
//
// Left alone: other modes or a non-zero constant, pads on the batch or channel dimension,
// negative (cropping) pads, Pad's axes input, auto_pad on the reader, an AveragePool that
// already pads without counting the pads (its divisor would change) or has ceil_mode (whose
// last window ONNX and the padded form count differently), and MaxPool (it would need
// -inf, not 0).
#include <algorithm>

#include "engine/passes/matcher.h"
#include "engine/passes/passes.h"

namespace fb {

namespace {

// Pad's spatial pads ([x1_begin, x2_begin..., x1_end, ...], as Conv's pads attribute
// orders them) when it is a zero constant Pad of batch and channels left alone; else empty.
std::vector<int64_t> zero_spatial_pads(const PassContext& ctx, const Node& pad, int64_t rank) {
  if (pad.attr_string("mode", "constant") != "constant" || rank < 3) return {};
  std::vector<int64_t> pads;
  if (pad.opset != 0 && pad.opset < 11) {
    if (pad.attr_float("value", 0.f) != 0.f) return {};
    pads = pad.attr_ints("pads");
  } else {
    if (pad.inputs.size() > 3 && !pad.inputs[3].empty()) return {};  // axes
    const Tensor* p = pad.inputs.size() > 1 && !pad.inputs[1].empty() ? constant_value(ctx, pad.inputs[1]) : nullptr;
    if (!p || (p->dtype() != DType::Int64 && p->dtype() != DType::Int32)) return {};
    pads = p->as_int64_vector();
    if (pad.inputs.size() > 2 && !pad.inputs[2].empty()) {
      float value = 1.f;
      if (!constant_scalar(ctx, pad.inputs[2], &value) || value != 0.f) return {};
    }
  }
  if (int64_t(pads.size()) != 2 * rank || pads[0] || pads[1] || pads[size_t(rank)] || pads[size_t(rank) + 1]) return {};
  std::vector<int64_t> spatial;
  for (int64_t side = 0; side < 2; ++side)
    for (int64_t d = 2; d < rank; ++d) {
      const int64_t v = pads[size_t(side * rank + d)];
      if (v < 0) return {};
      spatial.push_back(v);
    }
  return spatial;
}

std::vector<FusionMatch> match_pad_window(const PassContext& ctx, size_t root) {
  const Graph& g = ctx.graph;
  const Node& op = g.nodes[root];
  const bool conv = is_onnx_op(&op, "Conv"), average = is_onnx_op(&op, "AveragePool");
  if ((!conv && !average) || op.inputs.empty() || op.attr_string("auto_pad", "NOTSET") != "NOTSET") return {};
  Matcher m(ctx, root);
  const Node* pad = m.producer(op.inputs[0], {"Pad"});
  if (!pad || g.value(pad->inputs[0]).dtype != DType::Float32) return {};
  const int64_t rank = int64_t(g.value(pad->inputs[0]).shape.size());
  const std::vector<int64_t> extra = zero_spatial_pads(ctx, *pad, rank);
  if (extra.empty()) return {};
  std::vector<int64_t> pads = op.attr_ints("pads", std::vector<int64_t>(extra.size(), 0));
  if (pads.size() != extra.size()) return {};
  Node fused = op;
  if (average) {
    const bool counted = op.attr_int("count_include_pad", 0) != 0;
    const bool padded = std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; });
    if ((padded && !counted) || op.attr_int("ceil_mode", 0) != 0) return {};
    fused.attrs["count_include_pad"] = Attribute{int64_t(1)};
  }
  for (size_t i = 0; i < pads.size(); ++i) pads[i] += extra[i];
  fused.attrs["pads"] = Attribute{pads};
  fused.inputs[0] = pad->inputs[0];
  return {m.match(std::move(fused), "  pad-fusion: Pad+" + op.op_type + " at '" + op.name + "' → " + op.op_type + " with the pads")};
}

}  // namespace

int pad_fusion(PassContext& ctx) { return run_fusion_rule(ctx, match_pad_window); }

}  // namespace fb
