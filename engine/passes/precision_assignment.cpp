// Heads every pipeline: each node's precision is decided before anything fuses, so that
// fusion (can_fuse) only joins nodes that agree. A node takes the build's precision, or
// that of the first per-layer constraint that matches it: by op type, or as a glob over
// its ONNX node name.
#include "engine/passes/passes.h"

namespace fb {

bool precision_constraint_matches(const LayerPrecision& c, const Node& n) {
  if (c.pattern == n.op_type) return true;
  for (const std::string& s : n.sources)
    if (glob_match(c.pattern, s)) return true;
  return false;
}

int precision_assignment(PassContext& ctx) {
  const BuildConfig& cfg = ctx.config;
  std::vector<int> matched(cfg.layer_precisions.size(), 0);
  const Precision build_precision = cfg.precision;
  int changed = 0;
  for (Node& n : ctx.graph.nodes) {
    n.precision = build_precision;
    n.precision_reason = "default";
    for (size_t i = 0; i < cfg.layer_precisions.size(); ++i) {
      const LayerPrecision& c = cfg.layer_precisions[i];
      if (!precision_constraint_matches(c, n)) continue;
      ++matched[i];
      const Precision p = c.precision;
      if (p != n.precision) ++changed;
      n.precision = p;
      n.precision_reason = "constraint '" + c.pattern + "'";
      break;
    }
  }
  for (size_t i = 0; i < cfg.layer_precisions.size(); ++i) {
    const LayerPrecision& c = cfg.layer_precisions[i];
    if (matched[i] == 0 && cfg.precision_mode == PrecisionMode::Obey)
      throw Error("precision constraint '" + c.pattern + "=" + precision_name(c.precision) +
                  "' matches no node (mode obey): neither an op type nor a glob over the model's node names");
    ctx.log.push_back("precision constraint '" + c.pattern + "' = " + precision_name(c.precision) + ": " + std::to_string(matched[i]) +
                      " node(s)" + (matched[i] ? "" : " (matches nothing)"));
  }
  return changed;
}

}  // namespace fb
