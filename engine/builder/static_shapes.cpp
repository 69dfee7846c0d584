#include "engine/builder/static_shapes.h"

#include <algorithm>

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

void bind_constant_inputs(Graph& g, const std::map<std::string, Tensor>& values) {
  for (const auto& [name, value] : values) {
    auto it = std::find_if(g.inputs.begin(), g.inputs.end(), [&](const GraphInput& in) { return in.name == name; });
    if (it == g.inputs.end()) throw Error("a constant is given for '" + name + "', which is not a graph input");
    if (it->dtype != value.dtype())
      throw Error("graph input '" + name + "' is " + dtype_name(it->dtype) + ", the constant given is " + dtype_name(value.dtype()));
    g.initializers[name] = value;
    g.values[name] = ValueInfo{value.dtype(), value.shape(), true};
    g.inputs.erase(it);
  }
}

std::map<std::string, Tensor> infer_static_shapes(Graph& g, int64_t batch, const std::map<std::string, Shape>& overrides,
                                                  const OpRegistry& ops) {
  constexpr int64_t kMaxFoldElements = 1 << 16;  // only small tensors are evaluated here
  for (const auto& [name, shape] : bind_input_shapes(g, batch, overrides)) {
    ValueInfo& v = g.values[name];
    v.shape = shape;
    v.shape_known = true;
    for (const GraphInput& in : g.inputs)
      if (in.name == name) v.dtype = in.dtype;
  }
  std::map<std::string, Tensor> known;  // build-time values
  for (const auto& [k, t] : g.initializers) known[k] = t;
  for (Node& n : g.nodes) {
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
    std::vector<ValueInfo> outs = infer_node(n, sc, ops);
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
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      if (n.outputs[i].empty()) continue;
      if (!outs[i].shape_known) throw Error(n.describe() + ": output '" + n.outputs[i] + "' has a data-dependent shape");
      g.values[n.outputs[i]] = outs[i];
      if (i < vals.size() && shape_numel(outs[i].shape) <= kMaxFoldElements) known[n.outputs[i]] = vals[i];
    }
  }
  for (const std::string& o : g.outputs)
    if (!g.value(o).shape_known) throw Error("graph output '" + o + "' is produced by no node");
  return known;
}

}  // namespace fb
