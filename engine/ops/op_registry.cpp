#include "engine/ops/op_registry.h"

#include "engine/ops/plugin_rows.h"
#include "engine/plugin/plugin_op.h"

namespace fb {

const ValueInfo& ShapeContext::in(size_t i) const {
  if (!has_input(i)) throw Error(node.describe() + ": input " + std::to_string(i) + " is missing");
  return *inputs[i];
}

const Tensor& ShapeContext::constant(size_t i, const char* what) const {
  const Tensor* t = constant_or_null(i);
  if (!t)
    throw NotAConstant(node.describe() + ": input " + std::to_string(i) + " (" + what +
                ") must be a constant for a static-shape engine", i);
  return *t;
}

const Tensor& OpContext::in(size_t i) const {
  if (!has_input(i)) throw Error(node.describe() + ": input " + std::to_string(i) + " is missing");
  return *inputs[i];
}

OpRegistry OpRegistry::with_builtin_ops() {
  OpRegistry r;
    register_elementwise_ops(r);
    register_matmul_ops(r);
    register_reduce_ops(r);
    register_softmax_ops(r);
    register_shape_ops(r);
    register_fused_ops(r);
    register_attention_ops(r);
    register_convert_op(r);
    register_device_copy_ops(r);
    register_nn_ops(r);
    register_variadic_ops(r);
    register_logic_ops(r);
    register_activation_ops(r);
    register_mod_op(r);
    register_cast_ops(r);
    register_tensor_ops(r);
    register_generator_ops(r);
    register_gather_scatter_ops(r);
    register_selection_ops(r);
    register_arg_reduce_ops(r);
  register_control_flow_ops(r);
  register_shipped_plugins(r);
  register_eager_region_op(r);
  return r;
}

const std::shared_ptr<const OpRegistry>& OpRegistry::builtin() {
  static const std::shared_ptr<const OpRegistry> registry = [] {
    auto r = std::make_shared<OpRegistry>(with_builtin_ops());
    r->seal();
    return r;
  }();
  return registry;
}

std::string OpRegistry::key(const std::string& domain, const std::string& op_type) {
  return (domain == "ai.onnx" ? std::string() : domain) + '\n' + op_type;
}

const OpDef* OpRegistry::find(const std::string& domain, const std::string& op_type) const {
  auto it = defs_.find(key(domain, op_type));
  return it == defs_.end() ? nullptr : &it->second;
}

void OpRegistry::add(OpDef def) {
  const std::string name = def.domain.empty() ? def.op_type : def.domain + "." + def.op_type;
  if (sealed_) throw Error("op '" + name + "' cannot be registered: the op registry is sealed (register before building)");
  if (find(def.domain, def.op_type)) throw Error("op '" + name + "' is registered already");
  std::string k = key(def.domain, def.op_type);
  defs_.emplace(std::move(k), std::move(def));
}

const OpDef& op_for(const Node& node, const OpRegistry& ops) {
  const OpDef* def = ops.find(node.domain, node.op_type);
  if (!def)
    throw Error(node.describe() + ": unsupported op type '" +
                (node.domain.empty() ? "" : node.domain + ".") + node.op_type + "'");
  return *def;
}

std::vector<ValueInfo> infer_node(const Node& node, const ShapeContext& ctx, const OpRegistry& ops) {
  const OpDef& def = op_for(node, ops);
  if (def.plugin) return PluginOp(node, *def.plugin).infer(ctx.inputs);
  try {
    return def.infer(ctx);
  } catch (const NotAConstant&) {
    throw;  // names the node already; the builder tells it apart (eager region)
  } catch (const Error& e) {
    std::string msg = e.what();
    if (msg.find(node.describe()) == std::string::npos) msg = node.describe() + ": " + msg;
    throw Error(msg);
  }
}

std::vector<Tensor> evaluate_node(const Node& node, const std::vector<const Tensor*>& inputs, const OpRegistry& ops) {
  const OpDef& def = op_for(node, ops);
  if (def.plugin) return evaluate_plugin(node, *def.plugin, inputs, nullptr);
  std::vector<ValueInfo> infos(inputs.size());
  ShapeContext sc{node, {}, inputs};
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) {
      sc.inputs.push_back(nullptr);
      continue;
    }
    infos[i] = ValueInfo{inputs[i]->dtype(), inputs[i]->shape(), true};
    sc.inputs.push_back(&infos[i]);
  }
  std::vector<ValueInfo> out_infos = infer_node(node, sc, ops);
  // Reshape, Flatten, Squeeze...: the input's own bytes under the new shape, as a view in
  // PyTorch (a copy of a 30 MB mask tensor cost Mask R-CNN 5 ms). Only storage the input
  // owns is shared: a view into the engine's arena may be overwritten after this returns.
  if (def.alias_input0 && out_infos.size() == 1 && out_infos[0].shape_known && inputs[0] && inputs[0]->owns_storage() &&
      out_infos[0].dtype == inputs[0]->dtype() && shape_numel(out_infos[0].shape) == inputs[0]->numel())
    return {inputs[0]->reshaped(out_infos[0].shape)};
  std::vector<Tensor> outs(out_infos.size());
  OpContext oc{node, inputs, {}, &ops};
  for (size_t i = 0; i < outs.size(); ++i) {
    if (out_infos[i].shape_known) outs[i] = Tensor::empty(out_infos[i].dtype, out_infos[i].shape);
    oc.outputs.push_back(&outs[i]);
  }
  try {
    def.compute(oc);
  } catch (const Error& e) {
    std::string msg = e.what();
    if (msg.find(node.describe()) == std::string::npos) msg = node.describe() + ": " + msg;
    throw Error(msg);
  }
  return outs;
}

}  // namespace fb
