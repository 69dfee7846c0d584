#include "engine/ops/subgraph.h"

namespace fb {

const Graph& subgraph_attr(const Node& n, const std::string& key) {
  auto it = n.attrs.find(key);
  if (it == n.attrs.end()) throw Error("attribute '" + key + "' is missing");
  const auto* g = std::get_if<std::shared_ptr<const Graph>>(&it->second.value);
  if (!g || !*g) throw Error("attribute '" + key + "' is not a graph");
  return **g;
}

size_t explicit_input_count(const Node& n) {
  auto it = n.attrs.find("fusebench.captures");
  const size_t captured = it == n.attrs.end() ? 0 : std::get<std::vector<std::string>>(it->second.value).size();
  return n.inputs.size() - captured;
}

std::map<std::string, Tensor> captured_values(const OpContext& c) {
  std::map<std::string, Tensor> env;
  auto it = c.node.attrs.find("fusebench.captures");
  if (it == c.node.attrs.end()) return env;
  const auto& names = std::get<std::vector<std::string>>(it->second.value);
  const size_t first = c.inputs.size() - names.size();
  for (size_t j = 0; j < names.size(); ++j)
    if (c.inputs[first + j]) env[names[j]] = *c.inputs[first + j];
  return env;
}

std::vector<Tensor> run_subgraph(const OpContext& c, const Graph& g, std::map<std::string, Tensor> env) {
  const OpRegistry& ops = c.ops ? *c.ops : *OpRegistry::builtin();
  for (const auto& [k, t] : g.initializers) env[k] = t;
  for (const Node& n : g.nodes) {
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
    std::vector<Tensor> outs = evaluate_node(n, ins, ops);
    for (size_t k = 0; k < n.outputs.size() && k < outs.size(); ++k)
      if (!n.outputs[k].empty()) env[n.outputs[k]] = std::move(outs[k]);
  }
  std::vector<Tensor> r;
  for (const std::string& o : g.outputs) {
    auto it = env.find(o);
    if (it == env.end()) throw Error("subgraph output '" + o + "' is never computed");
    r.push_back(it->second);
  }
  return r;
}

}  // namespace fb
