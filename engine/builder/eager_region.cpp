#include "engine/builder/eager_region.h"

#include <set>

namespace fb {

void form_eager_region(Graph& g, const std::vector<DynamicNode>& dynamic, std::vector<std::string>* log) {
  if (dynamic.empty()) return;
  std::vector<bool> in_region(g.nodes.size(), false);
  for (const DynamicNode& d : dynamic) in_region[d.index] = true;
  auto body = std::make_shared<Graph>();
  body->name = g.name + " eager region";
  body->opset = g.opset;
  Node region;
  region.name = "eager_region";
  region.op_type = "EagerRegion";
  region.domain = "fusebench";
  region.opset = g.opset;
  std::set<std::string> produced, read;
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    if (!in_region[i]) {
      kept.push_back(std::move(n));
      continue;
    }
    // Values from outside the region arrive as the region node's inputs.
    for (const std::string& in : n.inputs)
      if (!in.empty() && !produced.count(in) && read.insert(in).second) region.inputs.push_back(in);
    for (const std::string& o : n.outputs)
      if (!o.empty()) {
        produced.insert(o);
        body->values[o] = g.value(o);
      }
    region.sources.insert(region.sources.end(), n.sources.begin(), n.sources.end());
    body->nodes.push_back(std::move(n));
  }
  for (const std::string& in : region.inputs) body->values[in] = g.value(in);
  // Only graph outputs leave the region: no static node reads a dynamic value.
  for (const std::string& o : g.outputs)
    if (produced.count(o)) {
      body->outputs.push_back(o);
      region.outputs.push_back(o);
    }
  std::string roots;
  int n_roots = 0;
  for (const DynamicNode& d : dynamic)
    if (!d.downstream && n_roots++ < 3) roots += (roots.empty() ? "" : "; ") + d.reason;
  if (n_roots > 3) roots += "; and " + std::to_string(n_roots - 3) + " more";
  const std::string reason = roots + " (" + std::to_string(dynamic.size()) + " node" + (dynamic.size() == 1 ? "" : "s") +
                             " run eagerly)";
  region.attrs["body"] = Attribute{std::shared_ptr<const Graph>(body)};
  region.attrs["fusebench.captures"] = Attribute{region.inputs};
  region.attrs["reason"] = Attribute{reason};
  kept.push_back(std::move(region));
  g.nodes = std::move(kept);
  g.nodes_changed();
  log->push_back("eager region: " + reason);
}

}  // namespace fb
