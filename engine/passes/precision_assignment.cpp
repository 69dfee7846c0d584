// Precision assignment, the head of every pipeline: each node gets the precision its
// kernel will compute in and the reason, before any fusion, so fusion only ever joins
// nodes that agree (can_fuse) and a fused node carries its sources' precision.
//
// Today every node gets the build's precision, which the builder only accepts as fp32.
// Where per-layer constraints (by node name, glob or op type) come in, they are applied
// here, and a node whose op's kernel does not take the requested precision
// (OpDef::precisions) falls back to one it does, saying so in its reason.
#include "engine/ops/op_registry.h"
#include "engine/passes/passes.h"

namespace fb {

int precision_assignment(PassContext& ctx) {
  const Precision wanted = parse_precision(ctx.config.precision);
  const std::string reason = std::string("the build's precision (") + precision_name(wanted) + ")";
  for (Node& n : ctx.graph.nodes) {
    const OpDef& def = op_for(n, ctx.ops);
    if (!def.precisions.contains(wanted))
      throw Error(n.describe() + ": its kernel computes in " + def.precisions.str() + ", not " + precision_name(wanted));
    n.precision = wanted;
    n.precision_reason = reason;
  }
  return 0;  // assigns, never rewrites
}

}  // namespace fb
