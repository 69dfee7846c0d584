#include "engine/ops/fused_conv.h"

#include <cstring>

namespace fb {

bool is_convolution(const Node& n) {
  return (n.domain.empty() && n.op_type == "Conv") || (n.domain == "fusebench" && n.op_type == "FusedConv");
}

bool layout_is_channels_last(const Node& n, const char* key) {
  const std::string v = n.attr_string(key, "");
  if (!v.empty() && v != kChannelsLast) throw Error(n.describe() + ": unknown " + key + " '" + v + "'");
  return v == kChannelsLast;
}

ConvLayouts conv_layouts_of(const Node& n) {
  return ConvLayouts{layout_is_channels_last(n, "x_layout"), layout_is_channels_last(n, "residual_layout"),
                     layout_is_channels_last(n, "y_layout")};
}

namespace {

// [N, C, S] and [N, S, C] (S the spatial size) are batched transposes of each other.
Tensor swap_channels(const Tensor& t, bool to_plain) {
  const Shape& s = t.shape();
  const int64_t n = s[0], c = s[1], hw = n * c != 0 ? t.numel() / (n * c) : 0;
  const size_t esize = dtype_size(t.dtype());
  Tensor out(t.dtype(), s);
  const char* x = static_cast<const char*>(t.raw());
  char* y = static_cast<char*>(out.raw());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t p = 0; p < hw; ++p)
      for (int64_t k = 0; k < c; ++k) {
        const size_t plain = size_t((b * c + k) * hw + p) * esize, last = size_t((b * hw + p) * c + k) * esize;
        std::memcpy(y + (to_plain ? plain : last), x + (to_plain ? last : plain), esize);
      }
  return out;
}

}  // namespace

Tensor channels_last_to_plain(const Tensor& t) { return swap_channels(t, true); }
Tensor plain_to_channels_last(const Tensor& t) { return swap_channels(t, false); }

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
