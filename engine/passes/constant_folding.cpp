// Constant folding: a node whose inputs are all constants (initializers, or values the
// shape binding computed, such as Shape → Gather → Concat chains on static shapes) is
// evaluated once at build time and becomes an initializer.
#include "engine/ops/op_registry.h"
#include "engine/passes/passes.h"

namespace fb {

int constant_folding(PassContext& ctx) {
  Graph& g = ctx.graph;
  int folded = 0;
  std::vector<Node> kept;
  for (Node& n : g.nodes) {
    bool all_const = true;
    std::vector<const Tensor*> ins;
    for (const std::string& in : n.inputs) {
      if (in.empty()) {
        ins.push_back(nullptr);
        continue;
      }
      auto it = g.initializers.find(in);
      if (it != g.initializers.end()) {
        ins.push_back(&it->second);
        continue;
      }
      auto kt = ctx.known.find(in);
      if (kt == ctx.known.end()) {
        all_const = false;
        break;
      }
      ins.push_back(&kt->second);
    }
    // A Shape node on a static tensor is a constant too.
    const bool static_shape = n.op_type == "Shape" && n.domain.empty() && ctx.known.count(n.outputs[0]);
    // A plugin runs in the engine as its author wrote it, constant inputs or not.
    if ((!all_const && !static_shape) || n.outputs.empty() || n.is_plugin()) {
      kept.push_back(std::move(n));
      continue;
    }
    bool have_all = true;
    for (const std::string& o : n.outputs) have_all = have_all && (o.empty() || ctx.known.count(o));
    std::vector<Tensor> vals;
    if (have_all) {
      for (const std::string& o : n.outputs) vals.push_back(o.empty() ? Tensor() : ctx.known.at(o));
    } else {
      vals = evaluate_node(n, ins, ctx.ops);
    }
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      if (n.outputs[i].empty()) continue;
      g.initializers[n.outputs[i]] = vals[i];
      ctx.known[n.outputs[i]] = vals[i];
    }
    ++folded;
  }
  g.nodes = std::move(kept);
  g.nodes_changed();
  if (folded) ctx.log.push_back("  constant-folding: folded " + std::to_string(folded) + " nodes into initializers");
  return folded;  // what fed only folded nodes is dead-node-elimination's
}

}  // namespace fb
