// A model made ready for a case's plugins: the op registry with the plugin libraries' ops
// (and the shipped ones), and the graph with the placements applied — what both
// executors then run. Shared by `run` and the commands that take --plugin.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/ops/op_registry.h"
#include "harness/cases/model_source.h"
#include "harness/cases/plugin_settings.h"

namespace fb {

struct PluginModel {
  std::shared_ptr<const OpRegistry> ops;
  std::vector<std::string> log;  // one line per plugin node placed

  // The graph both executors run: the model's own, or its copy with the placements applied.
  // No copy is made without placements (a 50,000-node graph copies in about a second).
  const Graph& graph() const { return placed ? *placed : *model_graph; }

  const Graph* model_graph = nullptr;  // the LoadedModel's graph; must outlive this
  std::optional<Graph> placed;
};

// Throws Error for a bad library or placement, and for plugins on a plan (its graph is
// already optimized; place plugins into the ONNX model instead).
PluginModel apply_plugins(const LoadedModel& m, const PluginSettings& s);

}  // namespace fb
