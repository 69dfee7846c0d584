#include "engine/reference/reference_executor.h"

#include <algorithm>

#include "engine/backend/backend.h"
#include "engine/builder/static_shapes.h"
#include "engine/plugin/plugin_op.h"

namespace fb {

ReferenceExecutor::ReferenceExecutor(Graph graph, int64_t batch, const std::map<std::string, Shape>& input_shapes,
                                     std::shared_ptr<const OpRegistry> ops)
    : graph_(std::move(graph)), ops_(std::move(ops)) {
  bind_host_kernels();  // Conv, MatMul, Attention run on the CPU backend's oneDNN kernels, as in PyTorch eager
  for (const Node& n : graph_.nodes) op_for(n, *ops_);  // an unsupported op is an error naming the node, before any run
  auto shapes = bind_input_shapes(graph_, batch, input_shapes);
  for (const GraphInput& in : graph_.inputs) input_shapes_.push_back(shapes.at(in.name));
  std::map<std::string, size_t> last_use;
  for (size_t i = 0; i < graph_.nodes.size(); ++i)
    for (const std::string& in : graph_.nodes[i].inputs)
      if (!in.empty()) last_use[in] = i;
  free_after_.resize(graph_.nodes.size());
  for (const auto& [v, i] : last_use)
    if (!graph_.is_initializer(v) && !graph_.is_graph_output(v)) free_after_[i].push_back(v);
}

std::vector<Tensor> ReferenceExecutor::run(const std::vector<Tensor>& inputs) const {
  std::map<std::string, Tensor> env = execute(inputs, false);
  std::vector<Tensor> outs;
  for (const std::string& o : graph_.outputs) outs.push_back(env.at(o));
  return outs;
}

std::map<std::string, Tensor> ReferenceExecutor::run_all(const std::vector<Tensor>& inputs) const {
  return execute(inputs, true);
}

std::map<std::string, Tensor> ReferenceExecutor::execute(const std::vector<Tensor>& inputs, bool keep_all) const {
  if (inputs.size() != graph_.inputs.size())
    throw Error("the model takes " + std::to_string(graph_.inputs.size()) + " inputs, got " + std::to_string(inputs.size()));
  std::map<std::string, Tensor> env;
  size_t live = 0;
  peak_bytes_ = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].shape() != input_shapes_[i] || inputs[i].dtype() != graph_.inputs[i].dtype)
      throw Error("input '" + graph_.inputs[i].name + "' must be " + dtype_name(graph_.inputs[i].dtype) +
                  shape_str(input_shapes_[i]) + ", got " + dtype_name(inputs[i].dtype()) + shape_str(inputs[i].shape()));
    env[graph_.inputs[i].name] = inputs[i];
  }
  for (size_t i = 0; i < graph_.nodes.size(); ++i) {
    const Node& n = graph_.nodes[i];
    std::vector<const Tensor*> ins;
    for (const std::string& in : n.inputs) {
      if (in.empty()) {
        ins.push_back(nullptr);
        continue;
      }
      auto it = env.find(in);
      if (it != env.end()) ins.push_back(&it->second);
      else ins.push_back(&graph_.initializers.at(in));
    }
    const OpDef& def = op_for(n, *ops_);
    std::vector<Tensor> outs =
        def.plugin ? evaluate_plugin(n, *def.plugin, ins, keep_all ? nullptr : reusable_input0(i, env)) : evaluate_node(n, ins, *ops_);
    for (size_t k = 0; k < n.outputs.size() && k < outs.size(); ++k) {
      if (n.outputs[k].empty()) continue;
      live += outs[k].nbytes();
      env[n.outputs[k]] = std::move(outs[k]);
    }
    peak_bytes_ = std::max(peak_bytes_, live);
    if (keep_all) continue;
    for (const std::string& v : free_after_[i]) {
      auto it = env.find(v);
      if (it == env.end()) continue;
      bool is_input = false;
      for (const GraphInput& gi : graph_.inputs) is_input = is_input || gi.name == v;
      if (!is_input) live -= it->second.nbytes();
      env.erase(it);
    }
  }
  return env;
}

const Tensor* ReferenceExecutor::reusable_input0(size_t i, const std::map<std::string, Tensor>& env) const {
  const Node& n = graph_.nodes[i];
  if (n.inputs.empty() || n.inputs[0].empty() || std::count(n.inputs.begin(), n.inputs.end(), n.inputs[0]) != 1) return nullptr;
  const std::string& v = n.inputs[0];
  const auto& dying = free_after_[i];
  if (std::find(dying.begin(), dying.end(), v) == dying.end()) return nullptr;
  for (const GraphInput& gi : graph_.inputs)
    if (gi.name == v) return nullptr;  // the caller's tensor
  auto it = env.find(v);
  // A value whose bytes another live value shares (Reshape's output aliases its input) is not free to write over.
  return it == env.end() || it->second.storage_shared() ? nullptr : &it->second;
}

}  // namespace fb
