#include "engine/ops/subgraph.h"

namespace fb {

const Graph& subgraph_attr(const Node& n, const char* key) {
  auto it = n.attrs.find(key);
  if (it == n.attrs.end()) throw Error("attribute '" + std::string(key) + "' is missing");
  const auto* g = std::get_if<std::shared_ptr<const Graph>>(&it->second.value);
  if (!g || !*g) throw Error("attribute '" + std::string(key) + "' is not a graph");
  return **g;
}

const std::vector<std::string>& capture_names(const Node& n) {
  static const std::vector<std::string> none;
  auto it = n.attrs.find("fusebench.captures");
  if (it == n.attrs.end()) return none;
  const auto* names = std::get_if<std::vector<std::string>>(&it->second.value);
  if (!names || names->size() > n.inputs.size())
    throw Error("attribute 'fusebench.captures' must name at most the node's " + std::to_string(n.inputs.size()) + " inputs");
  return *names;
}

size_t explicit_input_count(const Node& n) { return n.inputs.size() - capture_names(n).size(); }

std::map<std::string, Tensor> captured_values(const OpContext& c) {
  std::map<std::string, Tensor> env;
  const std::vector<std::string>& names = capture_names(c.node);
  if (names.size() > c.inputs.size()) throw Error("attribute 'fusebench.captures' names more values than the node has inputs");
  const size_t first = c.inputs.size() - names.size();
  for (size_t j = 0; j < names.size(); ++j)
    if (c.inputs[first + j]) env[names[j]] = *c.inputs[first + j];
  return env;
}

void run_nodes(const OpContext& c, const Graph& g, std::map<std::string, Tensor>& env, const std::vector<bool>& skip,
               const NodeRunner& runner) {
  const OpRegistry& ops = c.ops ? *c.ops : *OpRegistry::builtin();
  for (const auto& [k, t] : g.initializers) env[k] = t;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (i < skip.size() && skip[i]) continue;
    const Node& n = g.nodes[i];
    std::vector<const Tensor*> ins;
    for (const std::string& in : n.inputs) {
      if (in.empty()) {
        ins.push_back(nullptr);
        continue;
      }
      auto it = env.find(in);
      if (it == env.end()) throw Error(n.describe() + ": input '" + in + "' is not defined in the subgraph or any enclosing scope");
      ins.push_back(&it->second);
    }
    std::vector<Tensor> outs;
    if (!(runner && runner(i, n, ins, outs))) outs = evaluate_node(n, ins, ops);
    for (size_t k = 0; k < n.outputs.size() && k < outs.size(); ++k)
      if (!n.outputs[k].empty()) env[n.outputs[k]] = std::move(outs[k]);
  }
}

const Tensor& subgraph_value(const std::map<std::string, Tensor>& env, const std::string& name) {
  auto it = env.find(name);
  if (it == env.end()) throw Error("subgraph output '" + name + "' is never computed");
  return it->second;
}

std::vector<Tensor> run_subgraph(const OpContext& c, const Graph& g, std::map<std::string, Tensor> env) {
  run_nodes(c, g, env);
  std::vector<Tensor> r;
  for (const std::string& o : g.outputs) r.push_back(subgraph_value(env, o));
  return r;
}

}  // namespace fb
