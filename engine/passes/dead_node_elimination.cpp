// Dead-node elimination: a node none of whose outputs is a graph output or read by a
// live node (or by an If/Loop/Scan body of one) is removed, and so are the initializers
// nobody reads any more. Excluded nodes (by name glob or op type) are kept, and keep
// their inputs' producers alive, so a user who asked for a node to be left alone still
// finds it in the plan.
#include <set>

#include "engine/passes/passes.h"

namespace fb {

int dead_node_elimination(PassContext& ctx) {
  Graph& g = ctx.graph;
  std::set<std::string> live(g.outputs.begin(), g.outputs.end());
  std::vector<bool> keep(g.nodes.size(), false);
  // Reverse topological order: a node's readers are decided before the node.
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    bool used = !node_fusible(n, ctx.config);
    for (const std::string& o : n.outputs) used = used || (!o.empty() && live.count(o));
    if (!used) continue;
    keep[i] = true;
    for (const std::string& in : n.inputs)
      if (!in.empty()) live.insert(in);
    add_subgraph_reads(n, live);
  }
  std::vector<Node> kept;
  std::string names;
  int removed = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (keep[i]) {
      kept.push_back(std::move(g.nodes[i]));
      continue;
    }
    if (++removed <= 5) names += (removed > 1 ? ", '" : "'") + g.nodes[i].name + "'";
  }
  if (removed > 5) names += " and " + std::to_string(removed - 5) + " more";
  if (removed) ctx.log.push_back("  dead-node-elimination: removed " + std::to_string(removed) + " nodes: " + names);
  g.nodes = std::move(kept);
  g.nodes_changed();
  remove_unread_initializers(g);
  return removed;
}

}  // namespace fb
