// The profiler that sees through fusion. Every engine layer is timed (median over
// iterations). A layer that stands for one ONNX node gives that node a measured time; a
// fused layer's time is apportioned to its source nodes in proportion to their times in a
// separate run of the same model built unfused (fusion none), and marked as estimated.
// Node times then roll up by module path — the name prefixes exporters write, such as
// "/encoder/layer.3/attention/" — so "which sub-module is slow" has an answer even when
// the whole encoder is a handful of fused layers.
#pragma once
#include <string>
#include <vector>

#include "engine/runtime/engine.h"

namespace fb {


struct LayerProfile {
  int index = 0;
  std::string name, kind, kernel;
  double median_ms = 0;
  double flops = 0, bytes = 0;  // per run
  double gflops() const { return median_ms > 0 ? flops / median_ms / 1e6 : 0; }
  double gbps() const { return median_ms > 0 ? bytes / median_ms / 1e6 : 0; }
  std::vector<std::string> sources;
  std::string eager{};  // why it runs eagerly (LayerInfo::eager), "" for a planned layer
  // Each profiled run's time, in run order (run k of every layer is the same engine run),
  // so a caller can put intervals on a layer's median or on a sum of layers. Empty in
  // profiles stored by `profile --db`, which keep medians only.
  std::vector<double> samples_ms{};
  bool operator==(const LayerProfile&) const = default;
};

struct NodeProfile {
  std::string node;
  std::string module;  // the node's module path ("/encoder/layer.0/attention/self/")
  int layer = 0;       // engine layer it ran in
  double ms = 0;
  bool estimated = false;  // apportioned from a fused layer
  bool operator==(const NodeProfile&) const = default;
};

struct ModuleProfile {
  std::string module;
  double ms = 0;
  double share = 0;       // of the total
  bool estimated = false;  // any part apportioned
  bool operator==(const ModuleProfile&) const = default;
};

struct Profile {
  int iterations = 0;
  double total_ms = 0;  // sum of layer medians
  std::vector<LayerProfile> layers;
  std::vector<NodeProfile> nodes;
  std::vector<ModuleProfile> modules;  // every prefix level, sorted by path
  bool operator==(const Profile&) const = default;
};

// Times each layer of `engine` over `iterations` runs. `unfused` (the same model built
// with fusion none, or nullptr when `engine` is itself unfused) supplies the weights for
// apportioning fused layers.
Profile profile_engine(Engine& engine, Engine* unfused, const std::vector<Tensor>& inputs, int iterations);

// Node times rolled up over every prefix level of their module paths, sorted by path;
// shares of total_ms. A stored profile recomputes its roll-up with this.
std::vector<ModuleProfile> roll_up_modules(const std::vector<NodeProfile>& nodes, double total_ms);

// "/encoder/layer.0/attention/self/MatMul" → "/encoder/layer.0/attention/self/"; "" when the
// name carries no path.
std::string module_of(const std::string& node_name);

}  // namespace fb
