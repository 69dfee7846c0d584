// Ends every pipeline: turns each node's requested precision into what runs.
//
//   x(f32) ─▶ Convert(→bf16) ─▶ [bf16 layer] ─▶ [bf16 layer] ─▶ Convert(→f32) ─▶ [fp32 layer]
//
// (Fused nodes always agree: can_fuse never joins nodes of different precisions.)
// 1. A bf16/fp16 node that cannot run in 16 bits (no float outputs, control flow, float64
//    tensors) falls back to fp32: with mode `prefer` the build log says why; with `obey`
//    a node put there by a constraint fails the build, naming the node. int8 runs matrix
//    products and convolutions with constant weights whose input calibration measured or
//    the model quantizes explicitly (engine/passes/int8_lowering.h); every other node asked
//    for int8 falls back the same way, as TensorRT runs a layer without an int8 kernel in a
//    wider type.
// 2. A 16-bit node's float32 outputs become 16-bit tensors; a view takes its input's type.
// 3. Where a consumer wants another type than its producer wrote, one fusebench.Convert
//    per value and type is inserted; graph outputs are converted back to float32, so the
//    engine's outputs keep the model's types.
// 4. The weights (input 1) of a 16-bit MatMul, Gemm or Conv are rounded to 16-bit values.
//    They stay in float32 containers: a layer on oneDNN's bf16 kernels packs them to bf16
//    once (the same values), and a layer that widens its 16-bit inputs for a float32
//    kernel (HalfStorageLayer: fp16, or bf16 without AVX512_BF16) reads them as they are.
#include <cmath>
#include <map>

#include "engine/backend/backend.h"
#include "engine/ir/no_layer_in_precision.h"
#include "engine/ops/half_float.h"
#include "engine/passes/int8_lowering.h"
#include "engine/ops/op_registry.h"
#include "engine/passes/passes.h"

namespace fb {

namespace {

DType storage_type(Precision p) {
  if (p == Precision::BF16) return DType::BFloat16;
  if (p == Precision::FP16) return DType::Float16;
  return DType::Float32;
}

bool is_16bit(Precision p) { return p == Precision::BF16 || p == Precision::FP16; }
Precision precision_of(DType half) { return half == DType::BFloat16 ? Precision::BF16 : Precision::FP16; }

bool is_view(const Node& n, const OpRegistry& ops) {
  const OpDef* d = ops.find(n.domain, n.op_type);
  return d && d->alias_input0 && !n.inputs.empty() && !n.inputs[0].empty();
}

// Why the node cannot keep its tensors in 16 bits ("" when it can).
std::string why_not_16bit(const Graph& g, const Node& n) {
  if (n.domain == "fusebench" && n.op_type == "EagerRegion") return "the eager region runs its nodes in fp32";
  for (const auto& [_, a] : n.attrs)
    if (std::holds_alternative<std::shared_ptr<const Graph>>(a.value)) return "control flow runs its bodies in fp32";
  bool float_out = false;
  for (const std::string& o : n.outputs) {
    if (o.empty()) continue;
    if (g.value(o).dtype != DType::Float32) return "its output '" + o + "' is " + dtype_name(g.value(o).dtype);
    float_out = true;
  }
  if (!float_out) return "it has no float outputs";
  for (const std::string& in : n.inputs)
    if (!in.empty() && dtype_is_float(g.value(in).dtype) && g.value(in).dtype != DType::Float32)
      return "its input '" + in + "' is " + dtype_name(g.value(in).dtype);
  return "";
}

}  // namespace

int precision_lowering(PassContext& ctx) {
  Graph& g = ctx.graph;
  const int explicit_pairs = explicit_quantization(ctx);
  const bool obey = ctx.config.precision_mode == PrecisionMode::Obey;
  bool any_reduced = false;
  int int8_layers = 0, tf32_layers = 0;
  std::map<std::string, int> fallbacks;  // reason -> nodes
  const std::shared_ptr<const Backend> cpu = ctx.backend ? nullptr : backend_named("cpu");
  const Backend& backend = ctx.backend ? *ctx.backend : *cpu;
  for (Node& n : g.nodes) {
    if (n.precision == Precision::FP32) continue;
    const std::string asked = precision_name(n.precision);
    // int8 and tf32 layers pass float32 tensors, so a view of one is plain fp32.
    if ((n.precision == Precision::INT8 || n.precision == Precision::TF32) && is_view(n, ctx.ops)) {
      n.precision = Precision::FP32;
      n.precision_reason = "view of its input";
      continue;
    }
    // Whether the backend has an int8 (tf32) kernel for the op at all, then what this node needs.
    const OpDef& def = op_for(n, ctx.ops);
    const bool has_kernel = backend.supports(n, def, n.precision);
    std::string why = n.precision == Precision::TF32 ? (has_kernel ? "" : "no tf32 kernel for " + n.op_type)
                      : n.precision != Precision::INT8 ? why_not_16bit(g, n)
                      : !has_kernel                    ? "no int8 kernel for " + n.op_type
                                                       : why_not_int8(g, n, def, ctx.config);
    if (is_view(n, ctx.ops)) why.clear();
    if (why.empty() && n.precision == Precision::TF32) {  // a math mode: the tensors stay float32
      ++tf32_layers;
      continue;
    }
    if (why.empty() && n.precision == Precision::INT8) {
      if (!n.has_attr("int8_input_amax")) set_int8_thresholds(n, ctx.config);  // else explicit quantization did
      ++int8_layers;
      continue;
    }
    if (why.empty()) {
      any_reduced = true;
      continue;
    }
    const bool constrained = n.precision_reason.rfind("constraint", 0) == 0;
    if (obey && constrained)
      throw Error(n.describe() + ": " + n.precision_reason + " asks for " + asked + ", which it cannot run in: " + why +
                  " (mode obey)");
    if (constrained) ctx.log.push_back("precision: " + n.describe() + " falls back to fp32 (" + n.precision_reason +
                                       " asked for " + asked + "): " + why);
    ++fallbacks[asked + " → fp32: " + why];
    n.precision_reason = "fallback from " + asked + ": " + why;
    n.precision = Precision::FP32;
  }
  for (const auto& [reason, count] : fallbacks)
    ctx.log.push_back("precision fallback " + reason + " (" + std::to_string(count) + " layer(s))");
  // Every layer that asked for int8 falling back would be an fp32 engine labelled int8
  // (constraints may still keep every layer in fp32 on purpose, as debug precision does).
  std::string reasons;
  for (const auto& [reason, count] : fallbacks)
    if (reason.rfind("int8", 0) == 0 && reasons.size() < 300)
      reasons += (reasons.empty() ? "" : "; ") + reason + " (" + std::to_string(count) + ")";
  if (ctx.config.precision == Precision::INT8 && int8_layers == 0 && !reasons.empty()) {
    throw NoLayerInPrecision("precision 'int8': no layer can run in int8 (" + reasons + ")" +
                (ctx.config.int8_ranges.empty() ? "; the build was given no calibration ranges" : ""));
  }
  if (ctx.config.precision == Precision::TF32 && tf32_layers == 0)
    throw NoLayerInPrecision("precision 'tf32': no layer can run in tf32 on the " + backend.device_name() +
                             " backend (tf32 is a GPU's math mode for matrix products and convolutions)");
  if (tf32_layers)
    ctx.log.push_back("precision: " + std::to_string(tf32_layers) +
                      " tf32 layer(s): float32 tensors, products on tensor cores with 10-bit mantissas");
  if (int8_layers && !ctx.config.int8_ranges.empty())
    ctx.log.push_back("precision: " + std::to_string(int8_layers) + " int8 layer(s), input thresholds from " +
                      ctx.config.calibration.method + " calibration over " + ctx.config.int8_ranges_from +
                      ", weights per output channel");
  if (int8_layers) quantize_int8_inputs(ctx);
  if (!any_reduced) return int8_layers + explicit_pairs;

  // 2. Output types, in topological order so a view sees its input's final type.
  for (Node& n : g.nodes) {
    if (is_view(n, ctx.ops)) {
      const DType in = g.value(n.inputs[0]).dtype;
      for (const std::string& o : n.outputs)
        if (!o.empty() && g.value(o).dtype == DType::Float32 && is_half_type(in)) g.values[o].dtype = in;
      if (is_half_type(in)) n.precision = precision_of(in);
      if (is_half_type(in) || n.precision != Precision::FP32) n.precision_reason = "view of its input";
      if (!is_half_type(in)) n.precision = Precision::FP32;
      continue;
    }
    if (!is_16bit(n.precision)) continue;
    for (const std::string& o : n.outputs)
      if (!o.empty()) g.values[o].dtype = storage_type(n.precision);
  }

  // 3. Converts at the boundaries; 4. rounded weights.
  int inserted = 0, rounded = 0;
  std::map<std::pair<std::string, DType>, std::string> converted;  // (value, type) -> converted value
  std::vector<Node> out;
  auto convert = [&](const std::string& v, DType to, Precision precision) -> std::string {
    auto key = std::make_pair(v, to);
    if (auto it = converted.find(key); it != converted.end()) return it->second;
    const std::string name = g.unique_value_name(v + (to == DType::Float32 ? "/to_fp32" : to == DType::BFloat16 ? "/to_bf16" : "/to_fp16"));
    Node c = fusebench_node("precision_convert/" + name, "Convert", {v}, {name});
    c.attrs["to"] = Attribute{int64_t(to)};
    c.precision = precision;
    c.precision_reason = "precision boundary";
    c.opset = 1;
    g.values[name] = ValueInfo{to, g.value(v).shape, true};
    out.push_back(std::move(c));
    ++inserted;
    return converted[key] = name;
  };
  for (Node& n : g.nodes) {
    const bool view = is_view(n, ctx.ops);
    const DType want = storage_type(n.precision);
    const OpDef& def = op_for(n, ctx.ops);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const std::string v = n.inputs[i];
      if (v.empty() || view) continue;
      if (g.is_initializer(v)) {
        if (!is_16bit(n.precision) || !is_weight_input(def, i) || g.initializers.at(v).dtype() != DType::Float32) continue;
        const std::string r = v + "/" + precision_name(n.precision) + "_rounded";
        if (!g.initializers.count(r)) {
          Tensor w = g.initializers.at(v).clone();
          round_to_16(want, w.data<float>(), w.numel());
          g.initializers[r] = std::move(w);
          g.values[r] = g.value(v);
          ++rounded;
        }
        n.inputs[i] = r;
        continue;
      }
      const DType have = g.value(v).dtype;
      if (have == want || !dtype_is_float(have) || (have != DType::Float32 && !is_half_type(have))) continue;
      if (is_half_type(have) && is_half_type(want)) {
        n.inputs[i] = convert(convert(v, DType::Float32, precision_of(have)), want, n.precision);
      } else {
        n.inputs[i] = convert(v, want, precision_of(is_half_type(want) ? want : have));
      }
    }
    out.push_back(std::move(n));
  }
  g.nodes = std::move(out);
  g.nodes_changed();
  // Graph outputs: the producer writes a 16-bit value, a Convert gives the model's float32.
  for (std::string& o : g.outputs) {
    const DType t = g.value(o).dtype;
    if (!is_half_type(t)) continue;
    const std::string inner = g.unique_value_name(o + (t == DType::BFloat16 ? "/bf16" : "/fp16"));
    for (Node& n : g.nodes) {
      for (std::string& x : n.outputs) if (x == o) x = inner;
      for (std::string& x : n.inputs) if (x == o) x = inner;
    }
    g.values[inner] = g.value(o);
    g.values[o].dtype = DType::Float32;
    Node c = fusebench_node("precision_convert/" + o, "Convert", {inner}, {o});
    c.attrs["to"] = Attribute{int64_t(DType::Float32)};
    c.precision = precision_of(t);
    c.precision_reason = "precision boundary";
    c.opset = 1;
    g.nodes.push_back(std::move(c));
    ++inserted;
  }
  g.nodes_changed();
  remove_unread_initializers(g);
  ctx.log.push_back("precision: " + std::to_string(inserted) + " Convert layer(s) at precision boundaries, " +
                    std::to_string(rounded) + " weight tensor(s) rounded to 16-bit values");
  return inserted + rounded;
}

}  // namespace fb
