// The CUDA backend's elementwise rows: unary functions, activations with parameters,
// numpy-broadcast binaries and their variadic folds, comparisons and logic, Where, Cast,
// the precision boundary (fusebench.Convert) and the engine's fused chains. Each layer is
// one program for the map kernel (elementwise_kernels.h), built here once: operands,
// instructions, broadcast strides; run() only launches it.
#include <algorithm>
#include <cctype>
#include <cfloat>
#include <cmath>
#include <variant>

#include "engine/backend/cuda/cuda_layer_table.h"
#include "engine/backend/cuda/elementwise_kernels.h"
#include "engine/ops/elementwise_chain.h"

namespace fb::cuda {

namespace {

bool is_integer_type(DType t) { return !dtype_is_float(t); }  // bool counts as an integer here

// ---- Broadcast strides, shared by every map layer ---------------------------------------
// The output's dims with size-1 dims dropped and neighbours merged where every input walks
// them as one (strides[d-1] == strides[d] * dims[d]), and each input's element strides
// over them (0 where it broadcasts). At most kMaxDims dims remain, or an Error.
struct BroadcastGeometry {
  Shape dims;
  std::vector<std::vector<int64_t>> strides;  // per input, per dim
};

BroadcastGeometry broadcast_geometry(const Node& node, const Shape& out, const std::vector<Shape>& inputs) {
  const size_t rank = out.size();
  std::vector<std::vector<int64_t>> full(inputs.size(), std::vector<int64_t>(rank, 0));
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Shape& s = inputs[k];
    int64_t stride = 1;
    for (size_t j = 0; j < s.size(); ++j) {  // right-aligned against the output
      const size_t in_d = s.size() - 1 - j, out_d = rank - 1 - j;
      full[k][out_d] = s[in_d] == 1 ? 0 : stride;
      stride *= s[in_d];
    }
  }
  BroadcastGeometry g;
  g.strides.assign(inputs.size(), {});
  for (size_t d = 0; d < rank; ++d) {
    if (out[d] == 1) continue;
    bool merge = !g.dims.empty();
    for (size_t k = 0; k < inputs.size() && merge; ++k) merge = g.strides[k].back() == full[k][d] * out[d];
    if (merge) {
      g.dims.back() *= out[d];
      for (size_t k = 0; k < inputs.size(); ++k) g.strides[k].back() = full[k][d];
    } else {
      g.dims.push_back(out[d]);
      for (size_t k = 0; k < inputs.size(); ++k) g.strides[k].push_back(full[k][d]);
    }
  }
  if (g.dims.size() > size_t(kMaxDims))
    throw Error(node.describe() + ": broadcasting over " + std::to_string(g.dims.size()) + " dimensions (CUDA takes " +
                std::to_string(kMaxDims) + ")");
  return g;
}

// ---- The layer ------------------------------------------------------------------------
using MapProgram = std::variant<SmallMap, LargeMap>;

class MapLayer final : public CudaLayer {
 public:
  MapLayer(const CudaContext& ctx, MapProgram program, std::string kernel, double flops)
      : CudaLayer(ctx), program_(std::move(program)), kernel_(std::move(kernel)), flops_(flops) {}
  void run() override {
    std::visit([&](const auto& p) { launch_map(p, ctx_.stream); }, program_);
    FB_CUDA(cudaGetLastError());
  }
  std::string kernel() const override { return kernel_; }
  double flops() const override { return flops_; }

 private:
  MapProgram program_;
  std::string kernel_;
  double flops_;
};

// Collects a layer's operands and instructions, then lays them out for the kernel.
class MapBuilder {
 public:
  explicit MapBuilder(const LayerRequest& r) : request_(r) {}

  // Request input i as the next register.
  int input(size_t i) {
    const Tensor* t = i < request_.inputs.size() ? request_.inputs[i] : nullptr;
    if (!t) throw Error(request_.node.describe() + ": input " + std::to_string(i) + " is missing");
    if (t->dtype() == DType::Float64 && !float64_allowed_)
      throw Error(request_.node.describe() + ": float64 tensors are not supported on CUDA");
    inputs_.push_back(t);
    return int(inputs_.size()) - 1;
  }
  // One instruction; returns its result's register.
  int emit(MapKind kind, int fn, int a, int b = 0, int c = 0, double p0 = 0, double p1 = 0) {
    prog_.push_back(MapInstr{kind, uint8_t(fn), uint8_t(a), uint8_t(b), uint8_t(c), p0, p1});
    return int(inputs_.size() + prog_.size()) - 1;  // registers as the kernel numbers them, once all inputs are in
  }
  void allow_float64() { float64_allowed_ = true; }

  // The layer; `integer`: compute in int64. Instructions must come after every input.
  std::unique_ptr<Layer> layer(const CudaContext& ctx, std::string kernel, bool integer, bool bf16_truncate = false) const {
    const Node& node = request_.node;
    Tensor& out = *request_.outputs.at(0);
    if (inputs_.size() > size_t(kMaxMapInputs) || prog_.size() > size_t(kMaxMapInstrs))
      throw Error(node.describe() + ": " + std::to_string(inputs_.size()) + " inputs and " + std::to_string(prog_.size()) +
                  " operations exceed the CUDA elementwise kernel's " + std::to_string(kMaxMapInputs) + " and " +
                  std::to_string(kMaxMapInstrs));
    if (out.dtype() == DType::Float64 && !float64_allowed_)
      throw Error(node.describe() + ": float64 tensors are not supported on CUDA");
    LargeMap p;
    p.n = out.numel();
    p.integer = integer;
    p.out = out.raw();
    p.out_dtype = out.dtype();
    p.bf16_truncate = bf16_truncate;
    std::vector<Shape> shapes;
    for (const Tensor* t : inputs_) shapes.push_back(t->shape());
    const BroadcastGeometry g = broadcast_geometry(node, out.shape(), shapes);
    p.rank = int(g.dims.size());
    for (int d = 0; d < p.rank; ++d) p.dims[d] = g.dims[size_t(d)];
    p.n_inputs = int(inputs_.size());
    for (size_t k = 0; k < inputs_.size(); ++k) {
      MapOperand& o = p.in[k];
      o.data = inputs_[k]->raw();
      o.dtype = inputs_[k]->dtype();
      const int64_t n = inputs_[k]->numel();
      o.access = n == p.n ? Access::Same : n == 1 ? Access::Scalar : Access::Strided;
      for (int d = 0; d < p.rank; ++d) o.strides[d] = g.strides[k][size_t(d)];
      p.any_strided = p.any_strided || o.access == Access::Strided;
    }
    p.n_instrs = int(prog_.size());
    for (size_t j = 0; j < prog_.size(); ++j) p.prog[j] = prog_[j];
    const double flops = double(p.n) * double(prog_.size());
    if (p.n_inputs <= SmallMap::kInputs && p.n_instrs <= SmallMap::kInstrs)
      return std::make_unique<MapLayer>(ctx, MapProgram(shrink(p)), std::move(kernel), flops);
    return std::make_unique<MapLayer>(ctx, MapProgram(p), std::move(kernel), flops);
  }

  const Tensor& in(size_t k) const { return *inputs_.at(k); }

 private:
  static SmallMap shrink(const LargeMap& p) {
    SmallMap s;
    s.n = p.n;
    s.rank = p.rank;
    std::copy(p.dims, p.dims + kMaxDims, s.dims);
    s.any_strided = p.any_strided;
    s.integer = p.integer;
    s.n_inputs = p.n_inputs;
    s.n_instrs = p.n_instrs;
    std::copy(p.in, p.in + p.n_inputs, s.in);
    std::copy(p.prog, p.prog + p.n_instrs, s.prog);
    s.out = p.out;
    s.out_dtype = p.out_dtype;
    s.bf16_truncate = p.bf16_truncate;
    return s;
  }

  const LayerRequest& request_;
  std::vector<const Tensor*> inputs_;
  std::vector<MapInstr> prog_;
  bool float64_allowed_ = false;
};

std::string lower(std::string s) {
  for (char& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// ---- Precisions -------------------------------------------------------------------------
PrecisionSet any_float(const Node&) { return {Precision::FP32, Precision::FP16, Precision::BF16}; }
PrecisionSet fp32_only(const Node&) { return {Precision::FP32}; }
PrecisionSet within_map_limits(const Node& n) {
  const size_t instrs = n.op_type == "ElementwiseChain" ? n.attr_ints("program").size() / 4 : n.inputs.size();
  if (n.inputs.size() > size_t(kMaxMapInputs) || instrs > size_t(kMaxMapInstrs)) return {};
  return any_float(n);
}

// ---- Unary functions: the UnaryFn table, fusebench.Gelu/GeluTanh, ONNX Gelu (opset 20) ---
std::unique_ptr<Layer> make_unary(const LayerRequest& r, const CudaContext& ctx) {
  const Node& n = r.node;
  UnaryFn f;
  if (!unary_from_op_type(n.op_type, &f)) throw Error(n.describe() + ": not a unary function");
  if (n.domain.empty() && n.op_type == "Gelu") {
    const std::string approximate = n.attr_string("approximate", "none");
    if (approximate != "none" && approximate != "tanh") throw Error(n.describe() + ": unknown approximate '" + approximate + "'");
    if (approximate == "tanh") f = UnaryFn::GeluTanh;
  }
  MapBuilder b(r);
  const int x = b.input(0);
  const bool integer = is_integer_type(b.in(0).dtype());
  if (integer && !(f == UnaryFn::Neg || f == UnaryFn::Abs || f == UnaryFn::Relu || f == UnaryFn::Sign))
    throw Error(n.describe() + ": input type " + dtype_name(b.in(0).dtype()) + " is not supported");
  if (b.in(0).dtype() == DType::Bool) throw Error(n.describe() + ": input type bool is not supported");
  b.emit(MapKind::Unary, int(f), x);
  return b.layer(ctx, "cuda." + lower(unary_op_type(f)), integer);
}

// ---- Activations with attributes (engine/ops/activation_ops.cpp) ---------------------------
std::unique_ptr<Layer> make_activation(const LayerRequest& r, const CudaContext& ctx) {
  const Node& n = r.node;
  const std::string& op = n.op_type;
  Activation f;
  double p0 = 0, p1 = 0;
  if (op == "LeakyRelu") f = Activation::LeakyRelu, p0 = n.attr_float("alpha", 0.01f);
  else if (op == "HardSigmoid") f = Activation::HardSigmoid, p0 = n.attr_float("alpha", 0.2f), p1 = n.attr_float("beta", 0.5f);
  else if (op == "Elu") f = Activation::Elu, p0 = n.attr_float("alpha", 1.0f);
  else if (op == "Selu")
    f = Activation::Selu, p0 = n.attr_float("alpha", 1.67326319217681884765625f),
    p1 = n.attr_float("gamma", 1.05070102214813232421875f);
  else if (op == "Celu") f = Activation::Celu, p0 = n.attr_float("alpha", 1.0f);
  else if (op == "ThresholdedRelu") f = Activation::ThresholdedRelu, p0 = n.attr_float("alpha", 1.0f);
  else if (op == "Shrink") f = Activation::Shrink, p0 = n.attr_float("lambd", 0.5f), p1 = n.attr_float("bias", 0.0f);
  else throw Error(n.describe() + ": not an activation");
  if (f == Activation::Celu && p0 == 0) throw Error(n.describe() + ": alpha must not be 0");
  MapBuilder b(r);
  const int x = b.input(0);
  if (!dtype_is_float(b.in(0).dtype())) throw Error(n.describe() + ": input type " + dtype_name(b.in(0).dtype()) + " is not supported");
  b.emit(MapKind::Activation, int(f), x, 0, 0, p0, p1);
  return b.layer(ctx, "cuda." + lower(op), false);
}

// Clip: bounds are attributes before opset 11, optional constant scalar inputs from then on.
std::unique_ptr<Layer> make_clip(const LayerRequest& r, const CudaContext& ctx) {
  const Node& n = r.node;
  MapBuilder b(r);
  const int x = b.input(0);
  const DType t = b.in(0).dtype();
  if (t == DType::Bool) throw Error(n.describe() + ": Clip on bool is not supported");
  const bool integer = is_integer_type(t);
  // No bound: the type's own range (an integer of any width fits in ±9e18).
  double lo = integer ? -9e18 : -double(FLT_MAX), hi = integer ? 9e18 : double(FLT_MAX);
  if (n.opset != 0 && n.opset < 11) {
    lo = n.has_attr("min") ? double(n.attr_float("min", 0)) : integer ? lo : -INFINITY;
    hi = n.has_attr("max") ? double(n.attr_float("max", 0)) : integer ? hi : INFINITY;
  }
  for (size_t i = 1; i < 3; ++i) {
    if (i >= r.inputs.size() || !r.inputs[i]) continue;
    const Tensor* c = i < r.host_constants.size() ? r.host_constants[i] : nullptr;
    if (!c) throw Error(n.describe() + ": Clip's " + (i == 1 ? "min" : "max") + " must be a constant on CUDA");
    (i == 1 ? lo : hi) = c->scalar_as_double();
  }
  b.emit(MapKind::Activation, int(Activation::Clip), x, 0, 0, lo, hi);
  return b.layer(ctx, "cuda.clip", integer);
}

// PRelu(x, slope): x < 0 ? slope · x : x, the slope broadcast to x.
std::unique_ptr<Layer> make_prelu(const LayerRequest& r, const CudaContext& ctx) {
  MapBuilder b(r);
  const int x = b.input(0), slope = b.input(1);
  if (b.in(0).dtype() == DType::Bool) throw Error(r.node.describe() + ": PRelu on bool is not supported");
  const int negative = b.emit(MapKind::Activation, int(Activation::IsNegative), x);
  const int scaled = b.emit(MapKind::Binary, int(BinaryFn::Mul), slope, x);
  b.emit(MapKind::Select, 0, negative, scaled, x);
  return b.layer(ctx, "cuda.prelu", is_integer_type(b.in(0).dtype()));
}

// ---- Binary arithmetic and the variadic folds ------------------------------------------
// Add, Sub, Mul, Div, Pow (two inputs); Min, Max, Sum, Mean (one or more, folded left to
// right as engine/ops/variadic_ops.cpp does; Mean divides the sum at the end).
std::unique_ptr<Layer> make_arithmetic(const LayerRequest& r, const CudaContext& ctx) {
  const Node& n = r.node;
  const std::string& op = n.op_type;
  const bool variadic = op == "Min" || op == "Max" || op == "Sum" || op == "Mean";
  BinaryFn f = BinaryFn::Add;
  if (!variadic && !binary_from_op_type(op, &f)) throw Error(n.describe() + ": not a binary op");
  if (op == "Min") f = BinaryFn::Min;
  if (op == "Max") f = BinaryFn::Max;
  MapBuilder b(r);
  const size_t count = variadic ? r.inputs.size() : 2;
  bool integer = true;
  for (size_t i = 0; i < count; ++i) {
    b.input(i);
    if (b.in(i).dtype() == DType::Bool) throw Error(n.describe() + ": " + op + " on bool is not supported");
    // Pow's float base with an integer exponent computes in float; everything else has one type.
    integer = integer && is_integer_type(b.in(i).dtype());
  }
  int acc = count == 1 ? b.emit(MapKind::Copy, 0, 0) : b.emit(MapKind::Binary, int(f), 0, 1);
  for (size_t i = 2; i < count; ++i) acc = b.emit(MapKind::Binary, int(f), acc, int(i));
  if (op == "Mean") b.emit(MapKind::Activation, int(Activation::DivideBy), acc, 0, 0, double(count));
  const bool fold = count != 2 || op == "Sum" || op == "Mean";
  const char* layout = n.has_attr("y_layout") ? " nhwc→nhwc" : "";  // make_add's
  return b.layer(ctx, (fold ? "cuda.variadic[" : "cuda.binary[") + op + "]" + layout, integer);
}

// An Add the conv-layout pass keeps channels-last sums two tensors of its output's shape:
// element i of each is the same pixel and channel in either layout, so the plain kernel
// serves.
std::unique_ptr<Layer> make_add(const LayerRequest& r, const CudaContext& ctx) {
  if (r.node.has_attr("y_layout"))
    for (size_t i = 0; i < 2; ++i)
      if (r.inputs.size() != 2 || !r.inputs[i] || r.inputs[i]->shape() != r.outputs[0]->shape())
        throw Error(r.node.describe() + ": a channels-last Add takes two tensors of its output's shape");
  return make_arithmetic(r, ctx);
}

// ---- Comparisons (bool out), logic on bools, Where ---------------------------------------
std::unique_ptr<Layer> make_compare(const LayerRequest& r, const CudaContext& ctx) {
  const Node& n = r.node;
  const std::string& op = n.op_type;
  static const std::pair<const char*, Compare> kOps[] = {
      {"Equal", Compare::Equal}, {"Less", Compare::Less}, {"Greater", Compare::Greater},
      {"LessOrEqual", Compare::LessOrEqual}, {"GreaterOrEqual", Compare::GreaterOrEqual},
      {"And", Compare::And}, {"Or", Compare::Or}, {"Xor", Compare::Xor}, {"Not", Compare::Not}};
  Compare f = Compare::Equal;
  bool found = false;
  for (const auto& [name, c] : kOps)
    if (op == name) f = c, found = true;
  if (!found) throw Error(n.describe() + ": not a comparison");
  MapBuilder b(r);
  const int a = b.input(0);
  const int other = f == Compare::Not ? 0 : b.input(1);
  const bool integer = is_integer_type(b.in(0).dtype());
  b.emit(MapKind::Compare, int(f), a, other);
  const bool logic = f == Compare::And || f == Compare::Or || f == Compare::Xor || f == Compare::Not;
  return b.layer(ctx, std::string(logic ? "cuda.logic[" : "cuda.compare[") + op + "]", integer);
}

// Where(cond, x, y): elements of x's type selected, never converted when x and y are integers.
std::unique_ptr<Layer> make_where(const LayerRequest& r, const CudaContext& ctx) {
  MapBuilder b(r);
  const int c = b.input(0), x = b.input(1), y = b.input(2);
  b.emit(MapKind::Select, 0, c, x, y);
  return b.layer(ctx, "cuda.where", is_integer_type(b.in(1).dtype()) && is_integer_type(b.in(2).dtype()));
}

// ---- Cast, CastLike (ONNX: bf16 by truncation) and fusebench.Convert (round to nearest) ---
std::unique_ptr<Layer> make_cast(const LayerRequest& r, const CudaContext& ctx) {
  const Node& n = r.node;
  MapBuilder b(r);
  b.allow_float64();  // float32 <-> float64 is exact through the float registers; float64 -> integer is not
  const int x = b.input(0);
  b.emit(MapKind::Copy, 0, x);
  const bool onnx_cast = n.domain.empty();
  const DType to = r.outputs.at(0)->dtype();
  std::string name = onnx_cast ? "cuda.cast" : "cuda.convert";
  return b.layer(ctx, name + "[" + dtype_name(b.in(0).dtype()) + "→" + dtype_name(to) + "]",
                 is_integer_type(b.in(0).dtype()), onnx_cast && to == DType::BFloat16);
}

// ---- fusebench.ElementwiseChain: the fused program, as engine/ops/fused_ops.cpp decodes it -
std::unique_ptr<Layer> make_chain(const LayerRequest& r, const CudaContext& ctx) {
  const Node& n = r.node;
  const std::vector<ChainInstr> prog = decode_chain(n.attr_ints("program"), int(r.inputs.size()));
  MapBuilder b(r);
  for (size_t i = 0; i < r.inputs.size(); ++i) b.input(i);
  for (const ChainInstr& in : prog)
    b.emit(in.kind == 0 ? MapKind::Unary : MapKind::Binary, in.fn, in.a, in.kind == 0 ? 0 : in.b);
  return b.layer(ctx, "cuda.chain[" + describe_chain(prog) + "]", false);
}

}  // namespace

void add_elementwise_rows(std::vector<CudaOpRow>& rows) {
  for (int f = 0; f < int(UnaryFn::Count); ++f) {
    if (UnaryFn(f) == UnaryFn::Gelu || UnaryFn(f) == UnaryFn::GeluTanh) continue;  // the fused ones, below
    rows.push_back({"", unary_op_type(UnaryFn(f)), any_float, make_unary});
  }
  rows.push_back({"fusebench", "Gelu", any_float, make_unary});
  rows.push_back({"fusebench", "GeluTanh", any_float, make_unary});
  rows.push_back({"", "Gelu", any_float, make_unary});  // ONNX opset 20 (approximate: none or tanh)
  for (const char* op : {"LeakyRelu", "HardSigmoid", "Elu", "Selu", "Celu", "ThresholdedRelu", "Shrink"})
    rows.push_back({"", op, any_float, make_activation});
  rows.push_back({"", "Clip", any_float, make_clip});
  rows.push_back({"", "PRelu", any_float, make_prelu});
  rows.push_back({"", "Add", any_float, make_add, always_channels_last});
  // The conv-layout pass asks of a Mul only where it is a channel gate (x · s, s [N, C, 1, 1]).
  rows.push_back({"", "Mul", any_float, plain_or_on_views<make_arithmetic>, always_channels_last});
  for (const char* op : {"Sub", "Div", "Pow"}) rows.push_back({"", op, any_float, make_arithmetic});
  for (const char* op : {"Min", "Max", "Sum", "Mean"}) rows.push_back({"", op, within_map_limits, make_arithmetic});
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Not"})
    rows.push_back({"", op, fp32_only, make_compare});
  rows.push_back({"", "Where", any_float, make_where});
  rows.push_back({"", "Cast", fp32_only, make_cast});
  rows.push_back({"", "CastLike", fp32_only, make_cast});
  rows.push_back({"fusebench", "Convert", any_float, make_cast});
  rows.push_back({"fusebench", "ElementwiseChain", within_map_limits, make_chain});
}

}  // namespace fb::cuda
