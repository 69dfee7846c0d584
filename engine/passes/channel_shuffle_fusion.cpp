// Channel shuffle (ShuffleNet's units), as PyTorch exports x.view(N, g, C/g, H, W)
// .transpose(1, 2).reshape(N, C, H, W):
//
//      x [N,C,H,W] ──▶ Reshape [N,g,C/g,H,W] ──▶ Transpose(0,2,1,3,4) ──▶ Reshape [N,C,H,W]
//        ⇒   fusebench.ChannelShuffle(x, groups = g)
//
// One op instead of a view, a 5-D transpose and a view: it reads and writes 4-D tensors,
// so conv-layout can keep it channels-last between convolutions (a per-pixel permutation
// of channels) instead of every unit reordering around it.
#include "engine/passes/passes.h"
#include "engine/passes/pattern.h"

namespace fb {

namespace {

const Pattern& shuffle_form() {
  static const Pattern form =
      op("Reshape", {op("Transpose", {op("Reshape", {any("x"), any("split_shape")}, "split")}, "transpose"), any("shape")});
  return form;
}

std::vector<FusionMatch> match_channel_shuffle(const PassContext& ctx, size_t root) {
  const Graph& g = ctx.graph;
  Matcher m(ctx, root);
  const std::optional<PatternMatch> p = match_pattern(m, shuffle_form(), root);
  if (!p) return {};
  const Node& t = *p->nodes.at("transpose");
  const Shape& x = g.value(p->values.at("x")).shape;
  const Shape& split = g.value(t.inputs[0]).shape;
  const Shape& y = g.value(g.nodes[root].outputs[0]).shape;
  if (x.size() != 4 || y != x || split.size() != 5 || t.attr_ints("perm", {}) != std::vector<int64_t>{0, 2, 1, 3, 4}) return {};
  const int64_t groups = split[1];
  if (split != Shape{x[0], groups, groups ? x[1] / groups : 0, x[2], x[3]} || groups * split[2] != x[1]) return {};
  Node shuffle = fusebench_node(t.name + "_ChannelShuffle", "ChannelShuffle", {p->values.at("x")}, g.nodes[root].outputs);
  shuffle.attrs["groups"] = Attribute{groups};
  return {m.match(std::move(shuffle), "  channel-shuffle: '" + t.name + "' and its two Reshapes → ChannelShuffle, " +
                                          std::to_string(groups) + " groups")};
}

}  // namespace

int channel_shuffle_fusion(PassContext& ctx) { return run_fusion_rule(ctx, match_channel_shuffle); }

}  // namespace fb
