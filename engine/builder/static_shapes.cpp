#include "engine/builder/static_shapes.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "engine/backend/backend.h"
#include "engine/builder/shape_inputs.h"
#include "engine/ops/op_registry.h"

namespace fb {

std::map<std::string, Shape> bind_input_shapes(const Graph& g, int64_t batch,
                                               const std::map<std::string, Shape>& overrides) {
  std::map<std::string, Shape> r;
  for (const auto& [name, _] : overrides) {
    bool found = false;
    for (const GraphInput& in : g.inputs) found = found || in.name == name;
    if (!found) throw Error("a shape is given for '" + name + "', which is not a graph input");
  }
  for (const GraphInput& in : g.inputs) {
    auto ov = overrides.find(in.name);
    if (ov != overrides.end()) {
      if (!in.dims.empty() && ov->second.size() != in.dims.size())
        throw Error("graph input '" + in.name + "' has rank " + std::to_string(in.dims.size()) + ", the given shape " +
                    shape_str(ov->second) + " does not");
      r[in.name] = ov->second;
      continue;
    }
    Shape s = in.dims;
    for (size_t d = 0; d < s.size(); ++d) {
      if (s[d] >= 0) continue;
      if (d != 0)
        throw Error("graph input '" + in.name + "' has symbolic dimension " + std::to_string(d) + " ('" +
                    in.dim_params[d] + "'); only the batch dimension (0) may be symbolic");
      s[d] = batch;
    }
    r[in.name] = s;
  }
  return r;
}

Tensor as_declared(const GraphInput& in, const Tensor& value) {
  const bool fixed = std::all_of(in.dims.begin(), in.dims.end(), [](int64_t d) { return d >= 0; });
  if (!fixed || in.dims == value.shape()) return value;
  if (shape_numel(in.dims) != value.numel())
    throw Error("graph input '" + in.name + "' is declared " + dtype_name(in.dtype) + shape_str(in.dims) + ", the value given has " +
                std::to_string(value.numel()) + " element(s): " + value_preview(value));
  Tensor t(value.dtype(), in.dims);
  std::memcpy(t.raw(), value.raw(), value.nbytes());
  return t;
}

void bind_constant_inputs(Graph& g, const std::map<std::string, Tensor>& values) {
  for (const auto& [name, value] : values) {
    auto it = std::find_if(g.inputs.begin(), g.inputs.end(), [&name = name](const GraphInput& in) { return in.name == name; });
    if (it == g.inputs.end()) throw Error("a constant is given for '" + name + "', which is not a graph input");
    if (it->dtype != value.dtype())
      throw Error("graph input '" + name + "' is " + dtype_name(it->dtype) + ", the constant given is " + dtype_name(value.dtype()));
    const Tensor bound = as_declared(*it, value);
    g.initializers[name] = bound;
    g.values[name] = ValueInfo{bound.dtype(), bound.shape(), true};
    g.inputs.erase(it);
  }
}

std::map<std::string, Tensor> infer_static_shapes(Graph& g, int64_t batch, const std::map<std::string, Shape>& overrides,
                                                  const OpRegistry& ops, std::vector<DynamicNode>* dynamic) {
  constexpr int64_t kMaxFoldElements = 1 << 16;  // only small tensors are evaluated here
  bind_host_kernels();  // what is evaluated here may be a product
  for (const auto& [name, shape] : bind_input_shapes(g, batch, overrides)) {
    ValueInfo& v = g.values[name];
    v.shape = shape;
    v.shape_known = true;
    for (const GraphInput& in : g.inputs)
      if (in.name == name) v.dtype = in.dtype;
  }
  std::set<std::string> dynamic_values;  // outputs of dynamic nodes
  // Marks node i dynamic: its outputs keep the dtype shape inference gave (if any).
  auto mark_dynamic = [&](size_t i, const std::string& reason, const std::vector<ValueInfo>& outs, bool downstream = false) {
    const Node& n = g.nodes[i];
    if (!dynamic) throw Error(reason);
    dynamic->push_back(DynamicNode{i, reason, downstream});
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      if (n.outputs[k].empty()) continue;
      ValueInfo& v = g.values[n.outputs[k]];
      if (k < outs.size() && outs[k].dtype != DType::Undefined) v.dtype = outs[k].dtype;
      v.shape.clear();
      v.shape_known = false;
      dynamic_values.insert(n.outputs[k]);
    }
  };
  std::map<std::string, Tensor> known;  // build-time values
  for (const auto& [k, t] : g.initializers) known[k] = t;
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    Node& n = g.nodes[ni];
    // Downstream of a data-dependent shape: dynamic too (shape inference needs shapes).
    std::string dynamic_input;
    for (const std::string& in : n.inputs)
      if (!in.empty() && dynamic_values.count(in) && dynamic_input.empty()) dynamic_input = in;
    if (!dynamic_input.empty()) {
      mark_dynamic(ni, n.describe() + ": input '" + dynamic_input + "' has a data-dependent shape", {}, true);
      continue;
    }
    ShapeContext sc{n, {}, {}};
    bool all_known = true;
    for (const std::string& in : n.inputs) {
      if (in.empty()) {
        sc.inputs.push_back(nullptr);
        sc.constants.push_back(nullptr);
        continue;
      }
      const ValueInfo& vi = g.value(in);
      if (!vi.shape_known) throw Error(n.describe() + ": input '" + in + "' has no static shape");
      sc.inputs.push_back(&vi);
      auto it = known.find(in);
      sc.constants.push_back(it == known.end() ? nullptr : &it->second);
      all_known = all_known && it != known.end();
    }
    // A shape input computed at run time (from data): the shape is only known then.
    std::string runtime_shape_input;
    for (int i : op_for(n, ops).shape_inputs)
      if (size_t(i) < n.inputs.size() && !n.inputs[i].empty() && !known.count(n.inputs[i]) && runtime_shape_input.empty())
        runtime_shape_input = "its shape input " + std::to_string(i) + " ('" + n.inputs[i] + "') is computed at run time";
    if (!runtime_shape_input.empty()) {
      mark_dynamic(ni, n.describe() + ": " + runtime_shape_input, {});
      continue;
    }
    std::vector<ValueInfo> outs;
    try {
      outs = infer_node(n, sc, ops);
    } catch (const NotAConstant& e) {  // an op (a plugin's) that reads an undeclared shape input
      if (!dynamic) throw;
      mark_dynamic(ni, n.describe() + ": its shape input " + std::to_string(e.input) + " is computed at run time", {});
      continue;
    }
    if (outs.size() < n.outputs.size())
      throw Error(n.describe() + ": produces " + std::to_string(outs.size()) + " outputs, the model uses " +
                  std::to_string(n.outputs.size()));
    // A data-dependent shape (NonZero, Unique, ...) is still static when every input is
    // known at build time: evaluate the node and take the shapes from its values.
    bool data_dependent = false;
    for (size_t i = 0; i < n.outputs.size(); ++i) data_dependent = data_dependent || (!n.outputs[i].empty() && !outs[i].shape_known);
    bool small = true;
    for (const std::string& in : n.inputs)
      if (!in.empty()) small = small && shape_numel(g.value(in).shape) <= kMaxFoldElements;
    std::vector<Tensor> vals;
    if (n.op_type == "Shape" && n.domain.empty()) {
      Tensor dummy = Tensor::view(sc.inputs[0]->dtype, sc.inputs[0]->shape, nullptr);
      vals = evaluate_node(n, {&dummy}, ops);
    } else if (all_known && (small || data_dependent) && !n.is_plugin()) {
      std::vector<const Tensor*> ins;
      for (const std::string& in : n.inputs) ins.push_back(in.empty() ? nullptr : &known.at(in));
      vals = evaluate_node(n, ins, ops);
      for (size_t i = 0; i < n.outputs.size() && i < vals.size(); ++i)
        if (!outs[i].shape_known) outs[i] = ValueInfo{vals[i].dtype(), vals[i].shape(), true};
    }
    std::string unknown_output;
    for (size_t i = 0; i < n.outputs.size(); ++i)
      if (!n.outputs[i].empty() && !outs[i].shape_known && unknown_output.empty()) unknown_output = n.outputs[i];
    if (!unknown_output.empty()) {
      mark_dynamic(ni, n.describe() + ": output '" + unknown_output + "' has a data-dependent shape", outs);
      continue;
    }
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      if (n.outputs[i].empty()) continue;
      g.values[n.outputs[i]] = outs[i];
      if (i < vals.size() && shape_numel(outs[i].shape) <= kMaxFoldElements) known[n.outputs[i]] = vals[i];
    }
  }
  for (const std::string& o : g.outputs)
    if (!g.value(o).shape_known && !dynamic_values.count(o)) throw Error("graph output '" + o + "' is produced by no node");
  return known;
}

}  // namespace fb
