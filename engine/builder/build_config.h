// What the builder is asked for: precision, fusion level and its limits, batch, threads.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "engine/ir/tensor.h"

namespace fb {

// none: one layer per ONNX node. mark-all: the same, with every tensor kept as an output
// (the fair PyTorch comparison polygraphy users get by marking all outputs). standard:
// the named patterns. aggressive: standard plus attention (engine/passes/pipeline.cpp).
enum class FusionLevel { None, MarkAll, Standard, Aggressive };
FusionLevel parse_fusion_level(const std::string& s);  // throws Error listing the levels
const char* fusion_level_name(FusionLevel l);

struct BuildConfig {
  std::string precision = "fp32";
  FusionLevel fusion = FusionLevel::Standard;
  int64_t batch = 1;
  int threads = 1;
  std::vector<std::string> exclude_nodes;     // node-name globs fusion leaves alone
  std::vector<std::string> exclude_op_types;  // op types fusion leaves alone
  std::vector<std::string> partition_points;  // tensor names fusion may not cross
  // In-place arena reuse: an in-place kernel's output may take over an input buffer that
  // dies at that layer (engine/runtime/arena_planner.h). Off only to compare plans.
  bool in_place = true;
  // Shapes for graph inputs whose dims the model leaves symbolic beyond the batch (or to
  // override them); by input name.
  std::map<std::string, Shape> input_shapes;
  // Graph inputs bound to fixed values at build time (shape tensors, like TensorRT's):
  // they become initializers and the engine no longer takes them as inputs.
  std::map<std::string, Tensor> constant_inputs;
};

}  // namespace fb
