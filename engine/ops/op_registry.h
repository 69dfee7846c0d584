// The op table: for every op the engine runs, its shape inference, the precisions its
// kernel computes in, and its portable kernel. Both executors use it: the reference
// executor runs the kernels eagerly, op by op; the engine's backend runs them (or a
// dedicated layer, engine/backend/) from a planned arena. An op whose kernel is a
// backend's (Conv, MatMul, Attention: oneDNN's on the CPU) computes through the kernel a
// backend binds from above (bound_kernels.h). Adding an op is adding a row in
// one of the register_* functions listed in op_registry.cpp; a plugin adds its row to an
// engine's own registry (OpRegistry::add) before the registry is sealed.
#pragma once
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/ir/precision.h"

namespace fb {

// What shape inference sees: the node, its inputs' dtypes and shapes (nullptr for an
// omitted optional input), and the inputs' values where they are known constants
// (always known in the reference executor, which infers on real tensors).
struct ShapeContext {
  const Node& node;
  std::vector<const ValueInfo*> inputs;
  std::vector<const Tensor*> constants;

  const ValueInfo& in(size_t i) const;
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
  // The constant value of input i, or a NotAConstant naming the node when it is not
  // known at build time.
  const Tensor& constant(size_t i, const char* what) const;
  const Tensor* constant_or_null(size_t i) const { return i < constants.size() ? constants[i] : nullptr; }
};

// What ShapeContext::constant throws: input `input`'s value decides an output shape and is
// not known at build time. The builder then runs the node eagerly, in the engine's eager
// region (engine/builder/eager_region.h), instead of failing.
class NotAConstant : public Error {
 public:
  NotAConstant(const std::string& msg, size_t input) : Error(msg), input(input) {}
  size_t input;
};

// What a kernel sees: inputs (nullptr for omitted), and outputs allocated (uninitialized:
// a kernel writes every element) with the
// inferred dtype and shape. A kernel whose output shape depends on input values
// (shape_known == false at inference) assigns the output Tensor itself.
class OpRegistry;
struct PluginCreatorEntry;
struct OpContext {
  const Node& node;
  std::vector<const Tensor*> inputs;
  std::vector<Tensor*> outputs;
  // The registry the node was found in (If/Loop bodies run their nodes from it);
  // nullptr means OpRegistry::builtin().
  const OpRegistry* ops = nullptr;

  const Tensor& in(size_t i) const;
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
  Tensor& out(size_t i) const { return *outputs.at(i); }
};

using InferFn = std::vector<ValueInfo> (*)(const ShapeContext&);

// The ops that multiply by weights at input 1 (a matrix product, a convolution) or attend
// over q, k and v: the forms that 16-bit weight rounding and int8 kernels treat alike. A
// pass or backend asks the row (OpDef::weighted) instead of listing op types.
enum class WeightedForm { kNone, kMatMul, kConv, kAttention };
using ComputeFn = void (*)(OpContext&);

struct OpDef {
  std::string domain;  // "" for ONNX
  std::string op_type;
  InferFn infer = nullptr;
  ComputeFn compute = nullptr;
  // Output 0 has the input 0's layout and elements map one to one (Relu, Add, Erf...):
  // the elementwise-chain fusion may take such ops into one generated kernel.
  bool elementwise = false;
  // Output 0 is input 0's bytes reinterpreted (Reshape, Flatten, Squeeze, Identity):
  // the engine aliases instead of copying.
  bool alias_input0 = false;
  // Output 0 may be written over any input of its own shape and dtype (same index in and
  // out): the kernel never reads an element of such an input after writing the output
  // element with the same index. The engine's arena planner then reuses a dying input's
  // buffer for the output (engine/runtime/arena_planner.h).
  bool in_place = false;
  // Set instead of in_place where output 0 may be written over one input only: the one
  // this returns for the node (-1: none). A convolution may take over the residual it
  // sums (read element by element) but never x, whose neighbours it reads.
  int (*in_place_input)(const Node&) = nullptr;
  // The precisions the kernel computes in (what a backend may assign this op).
  PrecisionSet precisions{Precision::FP32};
  // MatMul, Gemm and FusedMatMul are kMatMul; Conv and FusedConv kConv; Attention kAttention.
  WeightedForm weighted = WeightedForm::kNone;
  // Set for a plugin's op (engine/plugin/): shapes, kernel, precisions and in-place
  // come from the plugin made for each node, not from the fields above.
  std::shared_ptr<const PluginCreatorEntry> plugin = nullptr;
  // Inputs whose values decide the output shapes (Reshape's shape, Slice's starts, TopK's
  // K, Range's bounds...), as TensorRT's shape tensors. A static-shape engine needs them at
  // build time: a graph input that feeds one is bound from a given value
  // (engine/builder/shape_inputs.h); one computed from data at run time puts the node in
  // the eager region. Shape inference reads them through ShapeContext::constant.
  std::vector<int> shape_inputs{};
};

// `def` with its shape inputs set, for registration rows:
//   r.add(with_shape_inputs(OpDef{"", "Reshape", infer_reshape, copy_input0, false, true}, {1}));
inline OpDef with_shape_inputs(OpDef def, std::vector<int> inputs) {
  def.shape_inputs = std::move(inputs);
  return def;
}

// `def` as one of the weighted forms, for registration rows.
inline OpDef weighted_as(OpDef def, WeightedForm form) {
  def.weighted = form;
  return def;
}

// Input i of a node of this op holds its weights: input 1 of a matrix product or convolution.
inline bool is_weight_input(const OpDef& def, size_t i) {
  return i == 1 && (def.weighted == WeightedForm::kMatMul || def.weighted == WeightedForm::kConv);
}

// Built per engine: OpRegistry::with_builtin_ops() gives a fresh, open registry holding
// every shipped op; a caller adds its own ops (plugins) and seals it; an engine is built
// on a sealed registry, which it keeps alive (its layers point at the definitions).
class OpRegistry {
 public:
  // Every op the engine ships; open, so more can be added.
  static OpRegistry with_builtin_ops();
  // The shipped ops, sealed and shared: for whatever needs no others.
  static const std::shared_ptr<const OpRegistry>& builtin();

  const OpDef* find(const std::string& domain, const std::string& op_type) const;
  // Adds a row; Error naming the op when the registry is sealed or has the op already.
  void add(OpDef def);
  // No more rows after this; the definitions' addresses stay put from here on.
  void seal() { sealed_ = true; }
  bool sealed() const { return sealed_; }

 private:
  static std::string key(const std::string& domain, const std::string& op_type);
  std::unordered_map<std::string, OpDef> defs_;  // by key(): rehashing never moves the OpDefs
  bool sealed_ = false;
};

// The op's definition, or an Error naming the node and op type when unsupported.
const OpDef& op_for(const Node& node, const OpRegistry& ops = *OpRegistry::builtin());

// Runs shape inference for one node; errors are rethrown naming the node.
std::vector<ValueInfo> infer_node(const Node& node, const ShapeContext& ctx, const OpRegistry& ops = *OpRegistry::builtin());

// Eagerly evaluates one node on concrete inputs with fresh outputs (used by the
// reference executor and by constant folding).
std::vector<Tensor> evaluate_node(const Node& node, const std::vector<const Tensor*>& inputs,
                                  const OpRegistry& ops = *OpRegistry::builtin());

// Registration, one function per kernel family (each in its own file).
void register_elementwise_ops(OpRegistry& r);
void register_matmul_ops(OpRegistry& r);
void register_reduce_ops(OpRegistry& r);
void register_softmax_ops(OpRegistry& r);
void register_shape_ops(OpRegistry& r);
void register_fused_ops(OpRegistry& r);
void register_attention_ops(OpRegistry& r);
void register_convert_op(OpRegistry& r);  // fusebench.Convert: the precision boundary
void register_device_copy_ops(OpRegistry& r);  // fusebench.CopyToHost/CopyToDevice: a device build's CPU fallback
// The neural-network families (conv, pools, normalization, resize, quantization, RNNs,
// detection...), registered together from nn_ops.cpp.
void register_nn_ops(OpRegistry& r);
// Full-ONNX elementwise, logic, activation, cast, reduction, tensor and control-flow ops.
void register_variadic_ops(OpRegistry& r);
void register_logic_ops(OpRegistry& r);
void register_activation_ops(OpRegistry& r);
void register_mod_op(OpRegistry& r);
void register_cast_ops(OpRegistry& r);
void register_tensor_ops(OpRegistry& r);
void register_generator_ops(OpRegistry& r);
void register_gather_scatter_ops(OpRegistry& r);
void register_selection_ops(OpRegistry& r);
void register_arg_reduce_ops(OpRegistry& r);
void register_control_flow_ops(OpRegistry& r);
void register_eager_region_op(OpRegistry& r);  // fusebench.EagerRegion: data-dependent shapes

}  // namespace fb
