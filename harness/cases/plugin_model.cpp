#include "harness/cases/plugin_model.h"

#include "engine/ops/plugin_rows.h"

namespace fb {

PluginModel apply_plugins(const LoadedModel& m, const PluginSettings& s) {
  if (m.plan && !s.empty())
    throw Error(m.reference + ": plugins cannot be placed into a plan (its graph is already optimized); "
                "name the ONNX model or zoo spec instead");
  PluginModel pm;
  pm.ops = registry_with_plugins(s.libraries);
  pm.model_graph = &m.graph;
  if (!s.placements.empty()) pm.placed = place_plugins(m.graph, s.placements, &pm.log);
  return pm;
}

}  // namespace fb
