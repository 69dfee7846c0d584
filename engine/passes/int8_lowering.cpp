#include "engine/passes/int8_lowering.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "engine/ops/fused_conv.h"
#include "engine/quant/int8_representation.h"

namespace fb {

namespace {

bool is_ours(const Node& n, const char* op) { return n.domain == "fusebench" && n.op_type == op; }

}  // namespace

std::vector<Int8Slot> int8_slots(const Node& n) {
  if (is_ours(n, "Attention"))  // q, k, v: s8 (K and V are the products' second operands)
    return {{0, "int8_input_amax", false}, {1, "int8_k_amax", false}, {2, "int8_v_amax", false}};
  return {{0, "int8_input_amax", true}};
}

std::string why_not_int8(const Graph& g, const Node& n, const OpDef& def, const BuildConfig& cfg) {
  const bool matmul = def.weighted == WeightedForm::kMatMul, conv = def.weighted == WeightedForm::kConv;
  const bool attention = def.weighted == WeightedForm::kAttention;
  // Which ops have int8 kernels is the backend's to say (precision lowering asks it first).
  if (!matmul && !conv && !attention) return "no int8 checks for " + n.op_type;
  if (attention) {
    for (size_t i = 0; i < 3; ++i)
      if (n.inputs.size() < 3 || g.value(n.inputs[i]).dtype != DType::Float32) return "its inputs are not float32";
  } else {
    if (n.inputs.size() < 2 || n.inputs[0].empty() || !g.is_initializer(n.inputs[1])) return "its weights are not a constant";
    const Tensor& w = g.initializers.at(n.inputs[1]);
    if (w.dtype() != DType::Float32 || g.value(n.inputs[0]).dtype != DType::Float32) return "its inputs are not float32";
    if (matmul && w.rank() != 2) return "its weights have rank " + std::to_string(w.rank()) + " (int8 takes 2-D weights)";
    if (matmul && g.value(n.inputs[0]).shape.size() < 2) return "its input is a vector";
    if (n.attr_int("transA", 0) != 0) return "its input is transposed";
    if (is_ours(n, "FusedMatMul") && n.inputs.size() > 3 && !n.inputs[3].empty())
      return "its output is multiplied by another tensor (a gated product)";
    if (is_onnx_op(&n, "Gemm") && n.inputs.size() > 2 && !n.inputs[2].empty()) {
      const Shape& out = g.value(n.outputs[0]).shape;
      const Shape& c = g.value(n.inputs[2]).shape;
      if (n.attr_float("beta", 1.f) != 1.f || shape_numel(c) != out.back() || c.back() != out.back())
        return "its C is not a bias over the columns";
    }
  }
  if (n.has_attr("int8_input_amax")) return "";  // explicit quantization gave it
  for (const Int8Slot& slot : int8_slots(n)) {
    const std::string& v = n.inputs[slot.input];
    auto it = cfg.int8_ranges.find(v);
    if (it == cfg.int8_ranges.end()) return "calibration has no range for its input '" + v + "'";
    if (!(it->second.amax > 0) || !std::isfinite(it->second.amax)) return "its input '" + v + "' was 0 throughout calibration";
  }
  return "";
}

void set_int8_thresholds(Node& n, const BuildConfig& cfg) {
  for (const Int8Slot& slot : int8_slots(n)) {
    const TensorRange& r = cfg.int8_ranges.at(n.inputs[slot.input]);
    n.attrs[slot.amax_attr] = Attribute{r.amax};
  }
  const TensorRange& r0 = cfg.int8_ranges.at(n.inputs[0]);
  n.attrs["int8_input_unsigned"] = Attribute{int64_t(int8_slots(n)[0].may_be_unsigned && r0.is_unsigned())};
}

bool is_int8_layer(const Node& n) { return n.precision == Precision::INT8 && n.has_attr("int8_input_amax"); }

namespace {
bool is_int8_conv(const Node& n) { return is_int8_layer(n) && is_convolution(n); }
bool is_int8_matmul(const Node& n) { return is_int8_layer(n) && !is_int8_conv(n) && !is_ours(n, "Attention"); }

// Can `p` write its output quantized with `zero_point`? An int8 matrix product can (any
// zero point); an int8 convolution can write u8 or s8 without a zero point, and not where
// it sums a residual (the sum reads the destination in its own type); a channels-last
// channel gate can (any).
bool writes_int8_output(const Graph& g, const Node& p, int zero_point) {
  if (is_int8_matmul(p)) return true;
  if (is_int8_conv(p)) return zero_point == 0 && !conv_has_residual(p);
  // A squeeze-excite channel gate x · s between channels-last layers
  // (engine/backend/cpu/channels_last_layers.h) quantizes its product as it writes it.
  if (!is_onnx_op(&p, "Mul") || p.inputs.size() != 2 || p.attr_string("x_layout", "") != kChannelsLast ||
      p.attr_string("y_layout", "") != kChannelsLast)
    return false;
  for (const std::string& in : p.inputs)
    if (g.value(in).dtype != DType::Float32) return false;
  return channel_gate_operand(g.value(p.inputs[0]).shape, g.value(p.inputs[1]).shape, g.value(p.outputs[0]).shape) >= 0;
}

// Does `r` read `v` as a u8/s8 tensor it dequantizes itself? A channels-last
// GlobalAveragePool, or a channel gate whose gated tensor is v (both float32 out).
bool dequantizes_as_it_reads(const Graph& g, const Node& r, const std::string& v) {
  if (r.inputs.empty() || r.attr_string("x_layout", "") != kChannelsLast) return false;
  if (is_onnx_op(&r, "GlobalAveragePool")) return r.inputs[0] == v && !r.has_attr("y_layout");
  if (!is_onnx_op(&r, "Mul") || r.inputs.size() != 2 || r.inputs[0] == r.inputs[1] || r.attr_string("y_layout", "") != kChannelsLast)
    return false;
  const int x = channel_gate_operand(g.value(r.inputs[0]).shape, g.value(r.inputs[1]).shape, g.value(r.outputs[0]).shape);
  return x >= 0 && r.inputs[size_t(x)] == v && g.value(r.inputs[size_t(1 - x)]).dtype == DType::Float32;
}

// The slot of `n` that reads `v` quantized, or nullptr.
const Int8Slot* slot_reading(const Node& n, const std::string& v, const std::vector<Int8Slot>& slots) {
  for (const Int8Slot& s : slots)
    if (s.input < n.inputs.size() && n.inputs[s.input] == v) return &s;
  return nullptr;
}
}  // namespace

// Int8 layers read u8/s8 tensors. Each float32 tensor they read is quantized once, by a
// fusebench.Quantize before its first int8 reader (Q, K and V projections' input shares
// one), or, where an int8 matrix product or convolution makes it and only int8 layers read
// it, by that layer itself: its epilogue writes the tensor as u8/s8 (attributes
// int8_output_amax, _unsigned, _zero_point), so the float32 tensor is never written (the
// FFN intermediate, and Q, K and V for int8 attention, in BERT; the expansion and
// depthwise convolutions' outputs in a MobileNet block), or by a squeeze-excite channel
// gate as it multiplies (EfficientNet's, before the projection). Not under mark-all, which keeps every
// tensor in float32 for comparison.
int quantize_int8_inputs(PassContext& ctx) {
  Graph& g = ctx.graph;
  std::map<std::string, std::vector<Node*>> readers;
  std::map<std::string, Node*> producer;
  for (Node& n : g.nodes) {
    for (const std::string& in : n.inputs)
      if (!in.empty()) readers[in].push_back(&n);
    for (const std::string& o : n.outputs)
      if (!o.empty()) producer[o] = &n;
  }
  // How v is read: every reader an int8 layer reading it in a quantized slot (and nowhere
  // else)? Unsigned (the first slot's calibration said so)? A signed tensor only matrix
  // products read is kept as u8 with zero point 128 (faster on oneDNN,
  // engine/quant/int8_representation.h); convolutions and attention read s8.
  struct Reading {
    bool only_int8 = true, is_unsigned = false;
    int zero_point = kSignedAsU8ZeroPoint;
    float amax = 0;
  };
  auto reading_of = [&](const std::string& v, const Node& first, const Int8Slot& slot) {
    Reading rd;
    rd.amax = first.attr_float(slot.amax_attr, 0.f);
    rd.is_unsigned = slot.may_be_unsigned && first.attr_int("int8_input_unsigned", 0) != 0;
    if (rd.is_unsigned) rd.zero_point = 0;
    // An explicitly quantized asymmetric tensor keeps the model's zero point.
    const int explicit_zero_point = slot.input == 0 ? int(first.attr_int("int8_input_zero_point", 0)) : 0;
    if (explicit_zero_point) rd.zero_point = explicit_zero_point;
    for (const Node* r : readers[v]) {
      const std::vector<Int8Slot> slots = is_int8_layer(*r) ? int8_slots(*r) : std::vector<Int8Slot>{};
      const Int8Slot* at = slot_reading(*r, v, slots);
      size_t uses = 0;
      for (const std::string& in : r->inputs) uses += in == v;
      rd.only_int8 = rd.only_int8 && at && uses == 1;
      if (at && (!is_int8_matmul(*r) || at->input != 0)) rd.zero_point = 0;
    }
    // Where another int8 reader cannot take that zero point, the tensor is s8, wide enough
    // for the model's whole u8 range (no value the model keeps is clamped).
    if (explicit_zero_point && !rd.zero_point)
      rd.amax *= float(std::max(explicit_zero_point, 255 - explicit_zero_point)) / 127.f;
    return rd;
  };
  // A costly activation before the quantized output runs as a table over the quantized
  // product (engine/ops/int8_quantize.h) where calibration saw its input.
  auto tabled_activation = [&](Node& p) {
    if (!is_tabled_activation(p.attr_string("activation", ""))) return;
    auto pre = ctx.config.int8_ranges.find(p.attr_string("activation_input", ""));
    if (pre != ctx.config.int8_ranges.end() && pre->second.amax > 0 && std::isfinite(pre->second.amax))
      p.attrs["int8_activation_input_amax"] = Attribute{pre->second.amax};
  };
  std::map<std::string, Reading> how;           // per float32 value int8 layers read
  std::map<std::string, std::string> quantized;  // that value -> what int8 layers read
  std::map<std::string, const Node*> first_reader;
  int quantizers = 0, in_epilogue = 0;
  for (Node& n : g.nodes) {
    if (!is_int8_layer(n)) continue;
    for (const Int8Slot& slot : int8_slots(n)) {
      const std::string v = n.inputs[slot.input];
      if (quantized.count(v)) continue;
      const Reading rd = how[v] = reading_of(v, n, slot);
      const DType type = rd.is_unsigned || rd.zero_point ? DType::UInt8 : DType::Int8;
      Node* p = producer.count(v) ? producer[v] : nullptr;
      if (p && writes_int8_output(g, *p, rd.zero_point) && p->outputs.size() == 1 && rd.only_int8 && !g.is_graph_output(v) &&
          ctx.config.fusion != FusionLevel::MarkAll) {
        p->attrs["int8_output_amax"] = Attribute{rd.amax};
        p->attrs["int8_output_unsigned"] = Attribute{int64_t(rd.is_unsigned)};
        if (rd.zero_point) p->attrs["int8_output_zero_point"] = Attribute{int64_t(rd.zero_point)};
        tabled_activation(*p);
        g.values[v].dtype = type;
        quantized[v] = v;
        ++in_epilogue;
      } else {
        quantized[v] = g.unique_value_name(v + "/int8");
        g.values[quantized[v]] = ValueInfo{type, g.value(v).shape, true};
        first_reader[v] = &n;
        ++quantizers;
      }
    }
  }
  // An int8 convolution whose readers all dequantize as they read (a squeeze-excite
  // block's channels-last pool and gate, engine/backend/cpu/channels_last_layers.h) writes
  // its output as u8/s8 at the threshold calibration found for it: a quarter of the bytes,
  // and its SiLU by table (EfficientNet's depthwise convolutions).
  for (Node& p : g.nodes) {
    if (!is_int8_conv(p) || conv_has_residual(p) || p.has_attr("int8_output_amax") || p.outputs.size() != 1 ||
        ctx.config.fusion == FusionLevel::MarkAll)
      continue;
    const std::string v = p.outputs[0];
    auto range = ctx.config.int8_ranges.find(v);
    if (g.is_graph_output(v) || readers[v].empty() || range == ctx.config.int8_ranges.end() || !(range->second.amax > 0) ||
        !std::isfinite(range->second.amax))
      continue;
    if (!std::all_of(readers[v].begin(), readers[v].end(), [&](const Node* r) { return dequantizes_as_it_reads(g, *r, v); }))
      continue;
    const bool is_unsigned = range->second.is_unsigned();
    p.attrs["int8_output_amax"] = Attribute{range->second.amax};
    p.attrs["int8_output_unsigned"] = Attribute{int64_t(is_unsigned)};
    tabled_activation(p);
    g.values[v].dtype = is_unsigned ? DType::UInt8 : DType::Int8;
    for (Node* r : readers[v]) {
      r->attrs["quantized_input_amax"] = Attribute{range->second.amax};
      r->attrs["quantized_input_unsigned"] = Attribute{int64_t(is_unsigned)};
    }
    ++in_epilogue;
  }
  std::vector<Node> out;
  for (Node& n : g.nodes) {
    if (is_int8_layer(n)) {
      const std::vector<Int8Slot> slots = int8_slots(n);
      for (const Int8Slot& slot : slots) {
        const std::string v = n.inputs[slot.input];
        const Reading& rd = how.at(v);
        if (first_reader.count(v) && first_reader[v] == &n) {
          Node quantize = fusebench_node("int8_quantize/" + quantized[v], "Quantize", {v}, {quantized[v]});
          quantize.attrs["amax"] = Attribute{rd.amax};
          quantize.attrs["unsigned"] = Attribute{int64_t(rd.is_unsigned)};
          if (rd.zero_point) quantize.attrs["zero_point"] = Attribute{int64_t(rd.zero_point)};
          quantize.precision = Precision::INT8;
          quantize.precision_reason = "precision boundary";
          quantize.opset = 1;
          out.push_back(std::move(quantize));
        }
        n.inputs[slot.input] = quantized[v];
        // Every reader reads the one quantized tensor: its threshold, signedness and zero
        // point are the tensor's (an explicitly quantized reader and a calibrated one of the
        // same tensor could otherwise disagree on its scale).
        n.attrs[slot.amax_attr] = Attribute{rd.amax};
        if (slot.input == 0) {
          n.attrs["int8_input_unsigned"] = Attribute{int64_t(rd.is_unsigned)};
          if (rd.zero_point) n.attrs["int8_input_zero_point"] = Attribute{int64_t(rd.zero_point)};
          else n.attrs.erase("int8_input_zero_point");
        }
      }
    }
    out.push_back(std::move(n));
  }
  g.nodes = std::move(out);
  g.nodes_changed();
  ctx.log.push_back("precision: " + std::to_string(quantizers) + " Quantize layer(s) before int8 layers, " +
                    std::to_string(in_epilogue) + " tensor(s) written as int8 by the int8 layer that makes them");
  return quantizers + in_epilogue;
}

namespace {

// A constant scalar's value (any numeric type), or false.
bool constant_value(const Graph& g, const std::string& v, double* out) {
  auto it = g.initializers.find(v);
  if (it == g.initializers.end() || it->second.numel() != 1) return false;
  *out = it->second.scalar_as_double();
  return true;
}

}  // namespace

int explicit_quantization(PassContext& ctx) {
  Graph& g = ctx.graph;
  std::map<std::string, const Node*> producer;
  std::map<std::string, std::vector<Node*>> readers;
  for (Node& n : g.nodes) {
    for (const std::string& o : n.outputs)
      if (!o.empty()) producer[o] = &n;
    for (const std::string& in : n.inputs)
      if (!in.empty()) readers[in].push_back(&n);
  }
  std::set<const Node*> gone;
  int pairs = 0;
  for (Node& n : g.nodes) {
    if (n.inputs.empty() || gone.count(&n)) continue;
    const std::string v = n.inputs[0];
    const Node* dq = producer.count(v) ? producer[v] : nullptr;
    if (!dq || !is_onnx_op(dq, "DequantizeLinear") || gone.count(dq) || g.is_graph_output(v)) continue;
    const Node* q = producer.count(dq->inputs[0]) ? producer[dq->inputs[0]] : nullptr;
    if (!q || !is_onnx_op(q, "QuantizeLinear") || q->inputs.size() < 2 || dq->inputs.size() < 2) continue;
    const std::string& qv = dq->inputs[0];
    if (readers[qv].size() != 1 || g.is_graph_output(qv)) continue;
    // One positive scale and one zero point for both, a float32 input.
    double s = 0, s2 = 0, zp = 0, zp2 = 0;
    if (!constant_value(g, q->inputs[1], &s) || !constant_value(g, dq->inputs[1], &s2) || s != s2 || !(s > 0)) continue;
    const bool q_zp = q->inputs.size() > 2 && !q->inputs[2].empty(), dq_zp = dq->inputs.size() > 2 && !dq->inputs[2].empty();
    if ((q_zp && !constant_value(g, q->inputs[2], &zp)) || (dq_zp && !constant_value(g, dq->inputs[2], &zp2))) continue;
    const DType qt = g.value(qv).dtype;
    const std::string x = q->inputs[0];
    if ((qt != DType::UInt8 && qt != DType::Int8) || g.value(x).dtype != DType::Float32) continue;
    if (zp != zp2) {
      ctx.log.push_back("explicit quantization: '" + q->name + "' kept as written: QuantizeLinear's zero point " +
                        std::to_string(int(zp)) + " is not DequantizeLinear's " + std::to_string(int(zp2)));
      continue;
    }
    // As u8 holds it (an s8 value v is the u8 value v + 128): 0 is an unsigned tensor
    // (u8 with zero point 0, or s8 with -128), 128 a symmetric s8 one, any other an
    // asymmetric one, which only the int8 matrix products' source zero point can take.
    const int u8_zero_point = int(zp) + (qt == DType::Int8 ? 128 : 0);
    const bool is_unsigned = u8_zero_point == 0, asymmetric = !is_unsigned && u8_zero_point != 128;
    // Every reader of the dequantized tensor must become an int8 layer.
    bool all = true, convolution = false;
    for (Node* r : readers[v]) {
      const bool fp32_constraint = r->precision == Precision::FP32 && r->precision_reason.rfind("constraint", 0) == 0;
      Node probe = *r;
      probe.attrs["int8_input_amax"] = Attribute{1.f};
      const OpDef& def = op_for(*r, ctx.ops);
      all = all && !fp32_constraint && def.weighted != WeightedForm::kAttention && r->inputs[0] == v &&
            why_not_int8(g, probe, def, ctx.config).empty();
      for (size_t i = 1; i < r->inputs.size(); ++i) all = all && r->inputs[i] != v;
      convolution = convolution || is_convolution(*r);
    }
    if (!all) continue;
    if (asymmetric && convolution) {
      ctx.log.push_back("explicit quantization: '" + q->name + "' kept as written: zero point " + std::to_string(int(zp)) +
                        " before a convolution (int8 convolutions here read symmetric inputs)");
      continue;
    }
    const float amax = float(s * (is_unsigned ? 255.0 : 127.0));
    for (Node* r : readers[v]) {
      r->inputs[0] = x;
      r->precision = Precision::INT8;
      r->precision_reason = "explicit quantization ('" + q->name + "')";
      r->attrs["int8_input_amax"] = Attribute{amax};
      r->attrs["int8_input_unsigned"] = Attribute{int64_t(is_unsigned)};
      if (asymmetric) r->attrs["int8_input_zero_point"] = Attribute{int64_t(u8_zero_point)};
    }
    gone.insert(q);
    gone.insert(dq);
    ++pairs;
  }
  if (!pairs) return 0;
  std::vector<Node> kept;
  for (Node& n : g.nodes)
    if (!gone.count(&n)) kept.push_back(std::move(n));
  g.nodes = std::move(kept);
  g.nodes_changed();
  remove_unread_initializers(g);
  ctx.log.push_back("explicit quantization: " + std::to_string(pairs) +
                    " QuantizeLinear/DequantizeLinear pair(s) folded into the int8 layers they fed");
  return pairs;
}

}  // namespace fb
