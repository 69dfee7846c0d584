// Putting plugins into a model without editing it (a scenario's "insert_plugins"): after a
// named tensor, or in place of the nodes a name glob / op-type list matches. Both
// executors then run the edited graph, so accuracy checks still compare like with like.
//
//   after "T":   P ─▶ T ─▶ consumers      becomes   P ─▶ T.pre_plugin ─▶ [plugin] ─▶ T ─▶ consumers
//                (a graph input or initializer T: the plugin reads T and its consumers read T.plugin)
//   replace:     each connected group of matched nodes becomes one plugin node; its inputs
//                are the values the group reads from outside (scalar constants left out:
//                their values are the pattern's, the plugin takes its own as attributes),
//                its outputs the values the group leaves to the rest of the graph.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "engine/ir/graph.h"

namespace fb {

struct PluginPlacement {
  std::string op;    // "domain.OpType" as the plugin registered it, e.g. "fusebench.plugin.Copy"
  std::string name;  // the plugin node's name ("" picks one from op and place)
  std::map<std::string, Attribute> attrs;
  std::string after;                        // place after this tensor, or ...
  std::vector<std::string> replace_nodes;   // ... replace nodes whose name matches a glob
  std::vector<std::string> replace_ops;     //     and/or whose op type is listed
};

// "domain.OpType" split at the last dot: {"fusebench.plugin", "Copy"}; no dot: ONNX domain.
std::pair<std::string, std::string> split_plugin_op(const std::string& qualified);

// The graph with the plugins placed, in order; every placement must take effect (an
// unknown tensor, a glob that matches nothing, a replacement that would make a cycle is
// an Error naming the placement). One log line per node placed.
Graph place_plugins(Graph g, const std::vector<PluginPlacement>& placements, std::vector<std::string>* log);

}  // namespace fb
