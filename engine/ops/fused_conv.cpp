#include "engine/ops/fused_conv.h"

namespace fb {

bool is_convolution(const Node& n) {
  return (n.domain.empty() && n.op_type == "Conv") || (n.domain == "fusebench" && n.op_type == "FusedConv");
}

ConvLayouts conv_layouts_of(const Node& n) {
  auto cl = [&](const char* key) {
    const std::string v = n.attr_string(key, "");
    if (!v.empty() && v != kChannelsLast) throw Error(n.describe() + ": unknown " + key + " '" + v + "'");
    return v == kChannelsLast;
  };
  return ConvLayouts{cl("x_layout"), cl("residual_layout"), cl("y_layout")};
}

bool conv_has_residual(const Node& n) { return n.domain == "fusebench" && n.inputs.size() > 3 && !n.inputs[3].empty(); }

int channel_gate_operand(const Shape& a, const Shape& b, const Shape& out) {
  auto gate_of = [&](const Shape& x, const Shape& s) {
    return x.size() == 4 && x == out && s.size() == 4 && (s[0] == x[0] || s[0] == 1) && s[1] == x[1] && s[2] == 1 && s[3] == 1 &&
           (x[2] != 1 || x[3] != 1);
  };
  if (gate_of(a, b)) return 0;
  if (gate_of(b, a)) return 1;
  return -1;
}

}  // namespace fb
