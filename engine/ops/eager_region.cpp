// fusebench.EagerRegion: the nodes of an engine whose output shapes depend on data
// (NonZero, Unique, a Reshape whose shape is computed at run time...) and every node whose
// shape depends on theirs, run as one layer: node by node on the op table's kernels, each
// output allocated at run time once its shape is known, as the reference executor runs.
// engine/builder/eager_region.h forms it. Attributes: "body" (the nodes, as a subgraph
// whose outputs are the region's), "fusebench.captures" (the body's names for the node's
// inputs) and "reason" (why the region exists, for inspect and the profiler).
#include "engine/ops/subgraph.h"

namespace fb {

namespace {

std::vector<ValueInfo> infer_eager_region(const ShapeContext& c) {
  const Graph& body = subgraph_attr(c.node, "body");
  std::vector<ValueInfo> r;
  for (const std::string& o : body.outputs) {
    auto it = body.values.find(o);
    r.push_back(ValueInfo{it == body.values.end() ? DType::Undefined : it->second.dtype, {}, false});
  }
  return r;
}

void compute_eager_region(OpContext& c) {
  std::vector<Tensor> outs = run_subgraph(c, subgraph_attr(c.node, "body"), captured_values(c));
  // Always replaced, never copied into: the shapes may differ from one run to the next.
  for (size_t i = 0; i < outs.size() && i < c.outputs.size(); ++i)
    if (c.outputs[i]) *c.outputs[i] = std::move(outs[i]);
}

}  // namespace

void register_eager_region_op(OpRegistry& r) {
  r.add(OpDef{"fusebench", "EagerRegion", infer_eager_region, compute_eager_region});
}

}  // namespace fb
