#include "engine/builder/fusion_limits.h"

#include <set>

#include "engine/ir/error.h"
#include "engine/passes/pass.h"

namespace fb {

void check_fusion_limits(const Graph& g, const BuildConfig& config, std::vector<std::string>* log) {
  if (config.partition_points.empty() && config.exclude_nodes.empty() && config.exclude_op_types.empty()) return;
  std::set<std::string> tensors, op_types;
  for (const GraphInput& in : g.inputs) tensors.insert(in.name);
  for (const auto& [name, _] : g.initializers) tensors.insert(name);
  for (const Node& n : g.nodes) {
    op_types.insert(n.op_type);
    for (const std::string& o : n.outputs)
      if (!o.empty()) tensors.insert(o);
  }
  for (const std::string& p : config.partition_points)
    if (!tensors.count(p))
      throw Error("fusion_limits.partition_points (--partition): '" + p + "' is not a tensor of the model (" +
                  std::to_string(tensors.size()) + " tensors; `fusebench inspect MODEL --tensors` lists them)");
  for (const std::string& pattern : config.exclude_nodes) {
    bool matched = false;
    for (const Node& n : g.nodes)
      if (glob_match(pattern, n.name)) { matched = true; break; }
    if (matched) continue;
    if (pattern.find_first_of("*?") == std::string::npos)
      throw Error("fusion_limits.exclude_nodes (--exclude-node): '" + pattern + "' is not a node of the model");
    log->push_back("warning: fusion_limits.exclude_nodes (--exclude-node): glob '" + pattern + "' matches no node");
  }
  for (const std::string& t : config.exclude_op_types)
    if (!op_types.count(t)) log->push_back("warning: fusion_limits.exclude_ops (--exclude-op): no node has op type '" + t + "'");
}

}  // namespace fb
